import type { EntityManager, SelectQueryBuilder } from 'typeorm';
import { idsIn } from '../store/sql/id-lists';
import { sqlDialectOf } from '../store/sql/dialects';
import { ENTITY } from '../store/entities';
import { Keyset, lockOrder, RunContext, shouldStop, TableCountMap } from './retention-batch';
import { batchContext, changePlans, PlanChange, planSizes } from './row-batches';
import { addTableCounts } from './retention-report';
import { deleteEmptySessions, emptySessions, sessionsOfPlans } from './empty-sessions';
import { affected, countRows, deleteRows, instant, ORPHAN_TABLES, PLAN_TABLES, PlanTableSpec } from './retention-sql';
import { DAY_MS } from '../shared/time-units';

/** Rows soft-deleted at or before this instant are past their grace period. */
export function purgeCutoff(ctx: Pick<RunContext, 'now' | 'policy'>): Date {
  return new Date(ctx.now.getTime() - ctx.policy.graceDays * DAY_MS);
}

/**
 * Hard-deletes plans soft-deleted longer ago than the grace period: every row they own, children
 * first, in transactions of at most `maxRows` rows (row-batches.ts), a plan with more rows than
 * that in chunks. Plans go oldest first (creation time, then id): their rows were stored in about
 * that order, so the purge finishes with one stretch of table pages before the next, and a
 * checkpoint during a long purge does not make it log the pages it already changed a second time.
 * Idempotent: each transaction re-checks under the head locks what is still there, and a plan's
 * row goes with its last rows, so an interrupted or concurrent run leaves only whole transactions
 * done, and the next run goes on (a half-purged plan is still soft-deleted past grace).
 */
export async function purgePlans(ctx: RunContext): Promise<void> {
  const cutoff = purgeCutoff(ctx);
  await walk<Keyset>(ctx, (m, after) => scanDeletedPlans(m, cutoff, after, ctx.batchSize), {
    tables: PLAN_TABLES,
    tail: 2, // execution_plans, plan_heads
    dropsEmptySessions: true,
    whole: (m, ids) => purgePlanBatch(ctx, m, ids),
    stillDue: async (m, id) => (await duePlans(ctx, m, [id], cutoff)).length > 0,
    add: (counts) => {
      addTableCounts(ctx.report, 'purged', counts);
      ctx.report.plans.purged += counts.execution_plans ?? 0;
    },
  });
}

/**
 * Purges orphans (events and head of a plan with no execution_plans row) soft-deleted past the
 * grace period, found through IX_plan_events_deleted: by now only orphans' events are left there.
 */
export async function purgeOrphans(ctx: RunContext): Promise<void> {
  const cutoff = purgeCutoff(ctx);
  await walk<string>(ctx, (m, after) => scanDeletedEventPlans(m, cutoff, after, ctx.batchSize), {
    tables: ORPHAN_TABLES,
    tail: 1, // plan_heads
    dropsEmptySessions: true,
    whole: (m, ids) => purgeOrphanBatch(ctx, m, ids),
    stillDue: async (m, id) => (await dueOrphans(m, [id], cutoff)).length > 0,
    add: (counts) => {
      addTableCounts(ctx.report, 'purged', counts);
      ctx.report.orphans.purged += counts.plan_heads ?? 0;
    },
  });
}

/** A page of a keyset walk: the plan ids, and the key to continue after. */
interface WalkPage<K> {
  ids: string[];
  last: K;
}

/** Keyset walk over plans: pages of `batchSize`, counted and purged (changePlans), until done or stopped. */
async function walk<K>(
  ctx: RunContext,
  scan: (m: EntityManager, after: K | null) => Promise<WalkPage<K> | null>,
  change: PlanChange,
): Promise<void> {
  const bc = batchContext(ctx);
  let after: K | null = null;
  while (!shouldStop(ctx)) {
    const found = await scan(ctx.ds.manager, after);
    if (found === null) return;
    const page = found.ids;
    after = found.last;
    const sizes = await planSizes(ctx.ds.manager, change.tables, page, 'all');
    if (!(await changePlans(bc, change, sizes))) return;
    if (page.length < ctx.batchSize) return;
  }
}

/** Plans soft-deleted by `cutoff`, oldest first: keyset (created_at, id) through IX_execution_plans_created_id. */
async function scanDeletedPlans(
  m: EntityManager,
  cutoff: Date,
  after: Keyset | null,
  limit: number,
): Promise<WalkPage<Keyset> | null> {
  const qb = m
    .createQueryBuilder()
    .select('p.id', 'id')
    .addSelect('p.createdAt', 'createdAt')
    .from(ENTITY.plan, 'p')
    .withDeleted()
    .where('p.deletedAt <= :cutoff', { cutoff: instant(m, cutoff) });
  withoutForks(qb);
  // the redundant `>=` keeps the index range bounded
  if (after !== null) {
    const at = after.at instanceof Date ? instant(m, after.at) : after.at;
    qb.andWhere('p.createdAt >= :afterAt AND (p.createdAt > :afterAt OR p.id > :afterId)', {
      afterAt: at,
      afterId: after.id,
    });
  }
  const rows: Array<{ id: string; createdAt: unknown }> = await qb
    .orderBy('p.createdAt', 'ASC')
    .addOrderBy('p.id', 'ASC')
    .limit(limit)
    .getRawMany();
  if (rows.length === 0) return null;
  const last = rows[rows.length - 1];
  return { ids: rows.map((r) => r.id), last: { at: last.createdAt, id: last.id } };
}

async function scanDeletedEventPlans(
  m: EntityManager,
  cutoff: Date,
  after: string | null,
  limit: number,
): Promise<WalkPage<string> | null> {
  // GROUP BY, not DISTINCT: SQL Server wants DISTINCT's ORDER BY items in the select list verbatim
  const qb = m
    .createQueryBuilder()
    .select('e.planId', 'id')
    .from(ENTITY.event, 'e')
    .withDeleted()
    .where('e.deletedAt <= :cutoff', { cutoff: instant(m, cutoff) });
  if (after !== null) qb.andWhere('e.planId > :after', { after });
  const rows: Array<{ id: string }> = await qb.groupBy('e.planId').orderBy('e.planId', 'ASC').limit(limit).getRawMany();
  return rows.length === 0 ? null : { ids: rows.map((r) => r.id), last: rows[rows.length - 1].id };
}

async function purgePlanBatch(ctx: RunContext, m: EntityManager, ids: string[]): Promise<TableCountMap> {
  // under the head locks: a plan restored since the scan is no longer past its grace period
  return deleteAll(ctx, m, PLAN_TABLES, await duePlans(ctx, m, ids, purgeCutoff(ctx)));
}

/**
 * Of these plans, the ones soft-deleted at or before `cutoff` that no fork row names as its parent
 * (retired or not: a fork reads its inherited steps from its ancestors' rows), in lock order. The
 * parents of those are held for the rest of the run (`heldParents`): a plan whose last fork this
 * run purges is purged by a later run, so a dry run, which deletes nothing, finds the same plans.
 */
async function duePlans(ctx: RunContext, m: EntityManager, ids: string[], cutoff: Date): Promise<string[]> {
  const qb = m
    .createQueryBuilder()
    .select('p.id', 'id')
    .addSelect('p.parentPlanId', 'parentId')
    .from(ENTITY.plan, 'p')
    .withDeleted()
    .where(...idsIn(sqlDialectOf(m), 'p.id', ids))
    .andWhere('p.deletedAt <= :cutoff', { cutoff: instant(m, cutoff) });
  const rows: Array<{ id: string; parentId: string | null }> = await withoutForks(qb).getRawMany();
  const due = rows.filter((r) => !ctx.heldParents.has(r.id));
  for (const r of due) if (r.parentId) ctx.heldParents.add(r.parentId);
  return lockOrder(due.map((r) => r.id));
}

/** Plans `p` no execution_plans row (soft-deleted ones too) names as its parent: one NOT EXISTS through IX_execution_plans_parent. */
function withoutForks<T extends SelectQueryBuilder<object>>(qb: T): T {
  const forks = qb.subQuery().select('1').from(ENTITY.plan, 'f').withDeleted().where('f.parentPlanId = p.id');
  qb.andWhere(`NOT EXISTS ${forks.getQuery()}`);
  return qb;
}

async function purgeOrphanBatch(ctx: RunContext, m: EntityManager, ids: string[]): Promise<TableCountMap> {
  return deleteAll(ctx, m, ORPHAN_TABLES, await dueOrphans(m, ids, purgeCutoff(ctx)));
}

/** Of these plans, the ones still orphans (plan.created may have arrived since) whose head, if any, is past grace. */
async function dueOrphans(m: EntityManager, ids: string[], cutoff: Date): Promise<string[]> {
  const rows: Array<{ id: string }> = await m
    .createQueryBuilder()
    .select('e.planId', 'id')
    .from(ENTITY.event, 'e')
    .withDeleted()
    .leftJoin(ENTITY.plan, 'p', 'p.id = e.planId')
    .leftJoin(ENTITY.head, 'h', 'h.planId = e.planId')
    .where(...idsIn(sqlDialectOf(m), 'e.planId', ids))
    .andWhere('p.id IS NULL')
    .andWhere('(h.planId IS NULL OR h.deletedAt <= :cutoff)', { cutoff: instant(m, cutoff) })
    .groupBy('e.planId')
    .getRawMany();
  return lockOrder(rows.map((r) => r.id));
}

/** Delete (dry run: count) every row of these plans in `tables`, in the order given. */
async function deleteAll(
  ctx: RunContext,
  m: EntityManager,
  tables: readonly PlanTableSpec[],
  ids: string[],
): Promise<TableCountMap> {
  const counts: TableCountMap = {};
  if (ids.length === 0) return counts;
  const sessions = await sessionsOfPlans(m, ids);
  for (const spec of tables) {
    counts[spec.table] = ctx.dryRun
      ? await countRows(m, spec, ids, 'all')
      : affected(await deleteRows(m, spec, ids).execute());
  }
  // a session whose last plan went with this batch goes too; one a worker is writing a plan of
  // is locked by it, and seen not empty once the lock is granted (lockSessions)
  if (!ctx.dryRun) counts.sessions = await deleteEmptySessions(m, sessions);
  else {
    const empty = await emptySessions(m, sessions, purgeCutoff(ctx));
    const fresh = empty.filter((id) => !ctx.wouldPurgeSessions.has(id));
    for (const id of fresh) ctx.wouldPurgeSessions.add(id);
    counts.sessions = fresh.length;
  }
  return counts;
}
