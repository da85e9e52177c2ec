import type { EntityManager, SelectQueryBuilder } from 'typeorm';
import { ENTITY } from '../store/entities';
import { inBatch, Keyset, lockOrder, RunContext, shouldStop, TableCountMap } from './retention-batch';
import { addTableCounts } from './retention-report';
import { affected, countRows, instant, PLAN_TABLES, stampRows } from './retention-sql';

/** Statuses a plan ends in. Planning/executing plans are never retired, whatever their age. */
export const TERMINAL_STATUSES = ['completed', 'failed', 'cancelled'] as const;
export type TerminalStatus = (typeof TERMINAL_STATUSES)[number];

/**
 * 'ended': the normal case, found through IX_execution_plans_status (status, completed_at).
 * 'undated': a terminal plan with no completed_at (should not happen; the worker sets it from
 * plan.finalized) is aged by its updated_at instead, so it cannot stay forever.
 */
type Mode = 'ended' | 'undated';

const DAY_MS = 86_400_000;

export function retirementCutoff(ctx: Pick<RunContext, 'now' | 'policy'>, status: TerminalStatus): Date {
  const days = {
    completed: ctx.policy.completedDays,
    failed: ctx.policy.failedDays,
    cancelled: ctx.policy.cancelledDays,
  }[status];
  return new Date(ctx.now.getTime() - days * DAY_MS);
}

/** Soft-deletes, plan by plan, every terminal plan older than its status's retention. */
export async function retirePlans(ctx: RunContext): Promise<void> {
  for (const status of TERMINAL_STATUSES) {
    for (const mode of ['ended', 'undated'] as const) {
      let after: Keyset | null = null;
      while (!shouldStop(ctx)) {
        const page = await scanPage(ctx.ds.manager, status, retirementCutoff(ctx, status), mode, after, ctx.batchSize);
        if (page.length === 0) break;
        after = { at: page[page.length - 1].endedAt, id: page[page.length - 1].id };
        const ids = lockOrder(page.map((r) => r.id));
        const counts = await inBatch(ctx, ids, (m) => retireBatch(ctx, m, ids, status, mode));
        addTableCounts(ctx.report, 'softDeleted', counts);
        ctx.report.plans.softDeleted += counts.execution_plans ?? 0;
        if (page.length < ctx.batchSize) break;
      }
    }
  }
}

/** The conditions that make a plan retirable; shared by the scan and the re-check under lock. */
function retirable(
  m: EntityManager,
  qb: SelectQueryBuilder<object>,
  status: TerminalStatus,
  cutoff: Date,
  mode: Mode,
): SelectQueryBuilder<object> {
  qb.andWhere('p.deletedAt IS NULL')
    .andWhere('p.status = :status', { status })
    // aged from the end (below) and from a `plans restore`, never from late events
    .andWhere('(h.restoredAt IS NULL OR h.restoredAt <= :cutoff)', { cutoff: instant(m, cutoff) });
  return mode === 'ended'
    ? qb.andWhere('p.completedAt <= :cutoff')
    : qb.andWhere('p.completedAt IS NULL AND p.updatedAt <= :cutoff');
}

function plansWithHeads(m: EntityManager): SelectQueryBuilder<object> {
  return m.createQueryBuilder().from(ENTITY.plan, 'p').withDeleted().leftJoin(ENTITY.head, 'h', 'h.planId = p.id');
}

async function scanPage(
  m: EntityManager,
  status: TerminalStatus,
  cutoff: Date,
  mode: Mode,
  after: Keyset | null,
  limit: number,
): Promise<Array<{ id: string; endedAt: unknown }>> {
  const qb = retirable(m, plansWithHeads(m).select('p.id', 'id'), status, cutoff, mode);
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
  return qb.limit(limit).getRawMany();
}

async function retireBatch(
  ctx: RunContext,
  m: EntityManager,
  ids: string[],
  status: TerminalStatus,
  mode: Mode,
): Promise<TableCountMap> {
  // under the head locks: a plan restored or written to since the scan no longer qualifies
  const rows: Array<{ id: string }> = await retirable(
    m,
    plansWithHeads(m).select('p.id', 'id').where('p.id IN (:...ids)', { ids }),
    status,
    retirementCutoff(ctx, status),
    mode,
  ).getRawMany();
  const eligible = lockOrder(rows.map((r) => r.id));
  const counts: TableCountMap = {};
  if (eligible.length === 0) return counts;
  if (ctx.dryRun) for (const id of eligible) ctx.wouldRetire.add(id);
  for (const spec of PLAN_TABLES) {
    counts[spec.table] = ctx.dryRun
      ? await countRows(m, spec, eligible, 'live')
      : affected(await stampRows(m, spec, eligible, ctx.now).execute());
  }
  return counts;
}
