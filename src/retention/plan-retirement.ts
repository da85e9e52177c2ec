import type { EntityManager, SelectQueryBuilder } from 'typeorm';
import { idsIn } from '../store/sql/id-lists';
import { sqlDialectOf } from '../store/sql/dialects';
import { ENTITY } from '../store/entities';
import { Keyset, lockOrder, RunContext, shouldStop, TableCountMap } from './retention-batch';
import { batchContext, changePlans, PlanChange, planSizes } from './row-batches';
import { addTableCounts } from './retention-report';
import { affected, countRows, instant, PLAN_TABLES, stampRows, tableSpec } from './retention-sql';
import { DAY_MS } from '../shared/time-units';

/** Statuses a plan ends in. Planning/executing plans are never retired, whatever their age. */
export const TERMINAL_STATUSES = ['completed', 'failed', 'cancelled'] as const;
export type TerminalStatus = (typeof TERMINAL_STATUSES)[number];

/**
 * 'ended': the normal case, found through IX_execution_plans_status (status, completed_at).
 * 'undated': a terminal plan with no completed_at (should not happen; the worker sets it from
 * plan.finalized) is aged by its updated_at instead, so it cannot stay forever.
 */
type Mode = 'ended' | 'undated';

export function retirementCutoff(ctx: Pick<RunContext, 'now' | 'policy'>, status: TerminalStatus): Date {
  const days = {
    completed: ctx.policy.completedDays,
    failed: ctx.policy.failedDays,
    cancelled: ctx.policy.cancelledDays,
  }[status];
  return new Date(ctx.now.getTime() - days * DAY_MS);
}

/** What a soft delete stamps: the plan row and its head, two rows a plan whatever its size. */
const STAMPED_TABLES = [tableSpec('execution_plans'), tableSpec('plan_heads')] as const;
/** The rows a plan owns that its soft delete hides through the plan, unchanged: every read reaches them through it. */
const HIDDEN_TABLES = PLAN_TABLES.filter((t) => !STAMPED_TABLES.some((s) => s.table === t.table));

/**
 * Soft-deletes every terminal plan older than its status's retention: stamps its plan row and its
 * head (`deleted_at`), never its events, steps or other rows, which every read reaches through the
 * plan and so no longer sees; the purge deletes them. Two rows a plan, so transactions of at most
 * `maxRows` rows and `batchSize` plans; the report counts the rows the plans hid (live ones).
 */
export async function retirePlans(ctx: RunContext): Promise<void> {
  const bc = batchContext(ctx);
  for (const status of TERMINAL_STATUSES) {
    for (const mode of ['ended', 'undated'] as const) {
      const change: PlanChange = {
        tables: STAMPED_TABLES,
        tail: 2, // execution_plans, plan_heads
        stamp: ctx.now,
        dropsEmptySessions: false,
        whole: (m, ids) => retireBatch(ctx, m, ids, status, mode),
        stillDue: async (m, id) => (await stillRetirable(ctx, m, [id], status, mode)).length > 0,
        add: (counts) => {
          addTableCounts(ctx.report, 'softDeleted', counts);
          ctx.report.plans.softDeleted += counts.execution_plans ?? 0;
        },
      };
      let after: Keyset | null = null;
      while (!shouldStop(ctx)) {
        const page = await scanPage(ctx, status, mode, after);
        if (page.length === 0) break;
        after = { at: page[page.length - 1].endedAt, id: page[page.length - 1].id };
        // the two stamped rows a plan: counted without a query
        const sizes = await planSizes(
          ctx.ds.manager,
          STAMPED_TABLES,
          page.map((r) => r.id),
          'live',
        );
        if (!(await changePlans(bc, change, sizes))) return;
        if (page.length < ctx.batchSize) break;
      }
    }
  }
}

/**
 * The conditions that make a plan retirable; shared by the scan and the re-check under lock. A
 * plan with a live fork is kept (the fork reads its inherited steps from it), and so is one whose
 * fork this run retired (stamped `runAt`): it is retired by a later run, by its own age, so a dry
 * run, which stamps nothing, finds the same plans. One NOT EXISTS through IX_execution_plans_parent.
 */
function retirable(
  m: EntityManager,
  qb: SelectQueryBuilder<object>,
  rule: { status: TerminalStatus; cutoff: Date; mode: Mode; runAt: Date },
): SelectQueryBuilder<object> {
  const { status, cutoff, mode, runAt } = rule;
  const forks = qb
    .subQuery()
    .select('1')
    .from(ENTITY.plan, 'f')
    .withDeleted()
    .where('f.parentPlanId = p.id')
    .andWhere('(f.deletedAt IS NULL OR f.deletedAt >= :runAt)');
  qb.andWhere('p.deletedAt IS NULL')
    .andWhere('p.status = :status', { status })
    // aged from the end (below) and from a `plans restore`, never from late events
    .andWhere('(h.restoredAt IS NULL OR h.restoredAt <= :cutoff)', { cutoff: instant(m, cutoff) })
    .andWhere(`NOT EXISTS ${forks.getQuery()}`, { runAt: instant(m, runAt) });
  return mode === 'ended'
    ? qb.andWhere('p.completedAt <= :cutoff')
    : qb.andWhere('p.completedAt IS NULL AND p.updatedAt <= :cutoff');
}

function plansWithHeads(m: EntityManager): SelectQueryBuilder<object> {
  return m.createQueryBuilder().from(ENTITY.plan, 'p').withDeleted().leftJoin(ENTITY.head, 'h', 'h.planId = p.id');
}

async function scanPage(
  ctx: RunContext,
  status: TerminalStatus,
  mode: Mode,
  after: Keyset | null,
): Promise<Array<{ id: string; endedAt: unknown }>> {
  const m = ctx.ds.manager;
  const cutoff = retirementCutoff(ctx, status);
  const qb = retirable(m, plansWithHeads(m).select('p.id', 'id'), { status, cutoff, mode, runAt: ctx.now });
  if (mode === 'ended') {
    qb.addSelect('p.completedAt', 'endedAt');
    // keyset (completed_at, id); the redundant `>=` keeps the index range bounded
    if (after) {
      const at = after.at instanceof Date ? instant(m, after.at) : after.at;
      qb.andWhere('p.completedAt >= :afterAt AND (p.completedAt > :afterAt OR p.id > :afterId)', {
        afterAt: at,
        afterId: after.id,
      });
    }
    qb.orderBy('p.completedAt', 'ASC').addOrderBy('p.id', 'ASC');
  } else {
    if (after) qb.andWhere('p.id > :afterId', { afterId: after.id });
    qb.orderBy('p.id', 'ASC');
  }
  return qb.limit(ctx.batchSize).getRawMany();
}

async function retireBatch(
  ctx: RunContext,
  m: EntityManager,
  ids: string[],
  status: TerminalStatus,
  mode: Mode,
): Promise<TableCountMap> {
  // under the head locks: a plan restored or written to since the scan no longer qualifies
  const eligible = await stillRetirable(ctx, m, ids, status, mode);
  const counts: TableCountMap = {};
  if (eligible.length === 0) return counts;
  if (ctx.dryRun) for (const id of eligible) ctx.wouldRetire.add(id);
  // read only: the rows the plans hide (a DAG expired before is not counted again)
  for (const spec of HIDDEN_TABLES) counts[spec.table] = await countRows(m, spec, eligible, 'live');
  for (const spec of STAMPED_TABLES) {
    counts[spec.table] = ctx.dryRun
      ? await countRows(m, spec, eligible, 'live')
      : affected(await stampRows(m, spec, eligible, ctx.now).execute());
  }
  return counts;
}

/** Of these plans, the ones that still qualify, in lock order. */
async function stillRetirable(
  ctx: RunContext,
  m: EntityManager,
  ids: string[],
  status: TerminalStatus,
  mode: Mode,
): Promise<string[]> {
  const rows: Array<{ id: string }> = await retirable(
    m,
    plansWithHeads(m)
      .select('p.id', 'id')
      .where(...idsIn(sqlDialectOf(m), 'p.id', ids)),
    { status, cutoff: retirementCutoff(ctx, status), mode, runAt: ctx.now },
  ).getRawMany();
  return lockOrder(rows.map((r) => r.id));
}
