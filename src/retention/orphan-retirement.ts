import type { EntityManager } from 'typeorm';
import { idsIn } from '../store/sql/id-lists';
import { sqlDialectOf } from '../store/sql/dialects';
import { ENTITY } from '../store/entities';
import { lockOrder, RunContext, shouldStop, TableCountMap } from './retention-batch';
import { batchContext, changePlans, PlanChange, planSizes } from './row-batches';
import { addTableCounts } from './retention-report';
import { affected, countRows, instant, ORPHAN_TABLES, stampRows, toDate } from './retention-sql';
import { DAY_MS } from '../shared/time-units';

export function orphanCutoff(ctx: Pick<RunContext, 'now' | 'policy'>): Date | null {
  return ctx.policy.orphanDays > 0 ? new Date(ctx.now.getTime() - ctx.policy.orphanDays * DAY_MS) : null;
}

/**
 * Soft-deletes the events (and head) of plans that never got an execution_plans row and had no
 * activity for RETENTION_ORPHAN_DAYS: a plan.created lost upstream, or late events that arrived
 * after their plan was purged. Nothing indexes "has no plan row", so this walks plan_heads in
 * key order, one page per statement, and acts on the few orphans found.
 */
export async function retireOrphans(ctx: RunContext): Promise<void> {
  const cutoff = orphanCutoff(ctx);
  if (!cutoff) return;
  const bc = batchContext(ctx);
  const change: PlanChange = {
    tables: ORPHAN_TABLES,
    tail: 1, // plan_heads: stamped last, so a half-retired orphan is still found by the next run
    stamp: ctx.now,
    dropsEmptySessions: false,
    whole: (m, ids) => retireOrphanBatch(ctx, m, ids, cutoff),
    stillDue: async (m, id) => (await stillOrphans(m, [id], cutoff)).length > 0,
    add: (counts) => {
      addTableCounts(ctx.report, 'softDeleted', counts);
      ctx.report.orphans.softDeleted += counts.plan_heads ?? 0;
    },
  };
  let after: string | null = null;
  while (!shouldStop(ctx)) {
    const page = await scanHeads(ctx.ds.manager, after, ctx.batchSize);
    if (page.length === 0) return;
    after = page[page.length - 1].id;
    const orphans = page.filter(
      (h) => h.planRow === null && h.deletedAt === null && (toDate(h.updatedAt) ?? cutoff) <= cutoff,
    );
    if (orphans.length > 0) {
      const sizes = await planSizes(
        ctx.ds.manager,
        ORPHAN_TABLES,
        orphans.map((h) => h.id),
        'live',
      );
      if (!(await changePlans(bc, change, sizes))) return;
    }
    if (page.length < ctx.batchSize) return;
  }
}

interface HeadRow {
  id: string;
  deletedAt: unknown;
  updatedAt: unknown;
  planRow: string | null;
}

async function scanHeads(m: EntityManager, after: string | null, limit: number): Promise<HeadRow[]> {
  const qb = m
    .createQueryBuilder()
    .select('h.planId', 'id')
    .addSelect('h.deletedAt', 'deletedAt')
    .addSelect('h.updatedAt', 'updatedAt')
    .addSelect('p.id', 'planRow')
    .from(ENTITY.head, 'h')
    .withDeleted()
    // the keyset bound repeated on the joined key, or PostgreSQL merge-joins from the start per page
    .leftJoin(ENTITY.plan, 'p', after === null ? 'p.id = h.planId' : 'p.id = h.planId AND p.id > :after');
  if (after !== null) qb.where('h.planId > :after', { after });
  return qb.orderBy('h.planId', 'ASC').limit(limit).getRawMany();
}

async function retireOrphanBatch(
  ctx: RunContext,
  m: EntityManager,
  ids: string[],
  cutoff: Date,
): Promise<TableCountMap> {
  const eligible = await stillOrphans(m, ids, cutoff);
  const counts: TableCountMap = {};
  if (eligible.length === 0) return counts;
  for (const spec of ORPHAN_TABLES) {
    counts[spec.table] = ctx.dryRun
      ? await countRows(m, spec, eligible, 'live')
      : affected(await stampRows(m, spec, eligible, ctx.now).execute());
  }
  return counts;
}

/** Of these plans, the ones still live orphans idle since `cutoff` (under the head locks), in lock order. */
async function stillOrphans(m: EntityManager, ids: string[], cutoff: Date): Promise<string[]> {
  const rows: Array<{ id: string }> = await m
    .createQueryBuilder()
    .select('h.planId', 'id')
    .from(ENTITY.head, 'h')
    .withDeleted()
    .leftJoin(ENTITY.plan, 'p', 'p.id = h.planId')
    .where(...idsIn(sqlDialectOf(m), 'h.planId', ids))
    .andWhere('p.id IS NULL AND h.deletedAt IS NULL AND h.updatedAt <= :cutoff', { cutoff: instant(m, cutoff) })
    .getRawMany();
  return lockOrder(rows.map((r) => r.id));
}
