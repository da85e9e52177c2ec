import type { DataSource, EntityManager } from 'typeorm';
import type { Logger } from '../shared/logger';
import { ENTITY } from '../store/entities';
import { sqlDialectOf } from '../store/sql/dialects';
import { runSerialized } from '../store/sql/serial-queue';
import { isRetryableDbError } from '../store/db-errors';
import type { RetentionPolicy } from './retention-config';
import { lockOrder } from './retention-batch';
import { keepingRollups } from '../store/rollups/rollup-measure';
import { countRows, lockHeads, PLAN_TABLES, PlanTable, toDate, unstampRows } from './retention-sql';
import { DAY_MS } from '../shared/time-units';

const ATTEMPTS = 5;

/** What `plans restore` found; an expected "cannot" is an outcome, not an exception. */
export type RestoreOutcome =
  | {
      status: 'restored';
      planId: string;
      deletedAt: string;
      rows: Partial<Record<PlanTable, number>>;
      /** Soft-deleted ancestors restored with it (a fork reads its inherited steps from them), parent first. */
      ancestors: RestoredAncestor[];
    }
  /** No row of this plan at all: never stored, or already purged. */
  | { status: 'not-found'; planId: string }
  | { status: 'not-deleted'; planId: string }
  /** Soft-deleted longer ago than the grace period: due for purge, no longer restorable. */
  | { status: 'grace-expired'; planId: string; deletedAt: string; graceEndedAt: string };

export interface RestoredAncestor {
  planId: string;
  deletedAt: string;
  rows: Partial<Record<PlanTable, number>>;
}

/** Ancestors looked up above a restored fork at most; a longer chain of parents is restored that far. */
const MAX_ANCESTORS = 100;

export interface RestoreOptions {
  /** The clock the grace period is measured against. @defaultValue `new Date()` */
  now?: Date;
  logger?: Logger;
}

/**
 * Undoes a plan's soft delete during the grace period: clears `deleted_at` on its plan row and head
 * and on any other row of it stamped (a DAG/checkpoints that had expired before, so it comes back
 * whole), and counts its rows (`rows`) and stamps the restore
 * (`plan_heads.restored_at`, and `updated_at`), so retention keeps it for another full period from
 * now instead of retiring it again at the next run. A fork's soft-deleted ancestors are restored
 * with it (`ancestors`): it reads its inherited steps from their rows. Under the head locks of the
 * plan and its ancestors, like every writer: a concurrent purge either ran before (not-found) or
 * sees the plans restored.
 */
export async function restorePlan(
  ds: DataSource,
  planId: string,
  policy: Pick<RetentionPolicy, 'graceDays'>,
  options: RestoreOptions = {},
): Promise<RestoreOutcome> {
  const now = options.now ?? new Date();
  for (let attempt = 1; ; attempt++) {
    try {
      const outcome = await runSerialized(ds, () =>
        sqlDialectOf(ds).transaction(ds, (m) => restoreIn(m, planId, policy, now)),
      );
      options.logger?.info(
        {
          planId,
          outcome: outcome.status,
          ...(outcome.status === 'restored'
            ? { rows: outcome.rows, ancestors: outcome.ancestors.map((a) => a.planId) }
            : {}),
        },
        'plan restore',
      );
      return outcome;
    } catch (err) {
      if (!isRetryableDbError(err) || attempt >= ATTEMPTS) throw err;
      await new Promise((resolve) => setTimeout(resolve, 100 * attempt));
    }
  }
}

async function restoreIn(
  m: EntityManager,
  planId: string,
  policy: Pick<RetentionPolicy, 'graceDays'>,
  now: Date,
): Promise<RestoreOutcome> {
  // a plan's parent never changes once its row is written: the chain read before the locks holds
  const ancestors = await ancestorsOf(m, planId);
  await lockHeads(m, lockOrder([planId, ...ancestors])).execute();
  const plan = await m
    .createQueryBuilder()
    .select('p.deletedAt', 'deletedAt')
    .from(ENTITY.plan, 'p')
    .withDeleted()
    .where('p.id = :planId', { planId })
    .getRawOne();
  const head = await m
    .createQueryBuilder()
    .select('h.deletedAt', 'deletedAt')
    .from(ENTITY.head, 'h')
    .withDeleted()
    .where('h.planId = :planId', { planId })
    .getRawOne();
  if (!plan && !head) return { status: 'not-found', planId };
  const deletedAt = toDate(plan ? plan.deletedAt : head.deletedAt);
  if (!deletedAt) return { status: 'not-deleted', planId };
  const graceEndedAt = new Date(deletedAt.getTime() + policy.graceDays * DAY_MS);
  if (graceEndedAt <= now)
    return {
      status: 'grace-expired',
      planId,
      deletedAt: deletedAt.toISOString(),
      graceEndedAt: graceEndedAt.toISOString(),
    };
  const rows = await unstamp(m, planId, now);
  // its soft-deleted ancestors hold what it inherits: they come back with it, whatever their own
  // grace period (purge keeps a plan's rows while a fork row names it), live ones are left as they are
  const restored: RestoredAncestor[] = [];
  for (const id of ancestors) {
    const row = await m
      .createQueryBuilder()
      .select('p.deletedAt', 'deletedAt')
      .from(ENTITY.plan, 'p')
      .withDeleted()
      .where('p.id = :id', { id })
      .getRawOne();
    const at = toDate(row?.deletedAt);
    if (at) restored.push({ planId: id, deletedAt: at.toISOString(), rows: await unstamp(m, id, now) });
  }
  return { status: 'restored', planId, deletedAt: deletedAt.toISOString(), rows, ancestors: restored };
}

/** Clears the stamp on every row of the plan and stamps the restore on its head; the plan is back in the rollups. */
function unstamp(m: EntityManager, planId: string, now: Date): Promise<Partial<Record<PlanTable, number>>> {
  return keepingRollups(m, [planId], () => unstampPlan(m, planId, now));
}

async function unstampPlan(m: EntityManager, planId: string, now: Date): Promise<Partial<Record<PlanTable, number>>> {
  const rows: Partial<Record<PlanTable, number>> = {};
  // a soft delete stamps the plan row and head only; the other tables' stamps are a DAG expired
  // before, rows the worker wrote while the plan was retired, and soft deletes of earlier versions
  // (which stamped every row): all cleared, so the plan comes back whole
  for (const spec of PLAN_TABLES) await unstampRows(m, spec, [planId]).execute();
  // what came back: every row the plan owns
  for (const spec of PLAN_TABLES) rows[spec.table] = await countRows(m, spec, [planId], 'all');
  await m
    .createQueryBuilder()
    .update(ENTITY.head)
    .set({ updatedAt: now, restoredAt: now })
    .where({ planId })
    .callListeners(false)
    .execute();
  return rows;
}

/** The plan's stored ancestors, parent first, up to the first one not stored, a repeated id (a cycle) or MAX_ANCESTORS. */
async function ancestorsOf(m: EntityManager, planId: string): Promise<string[]> {
  const parentOf = async (id: string): Promise<{ parentId: string | null } | undefined> =>
    m
      .createQueryBuilder()
      .select('p.parentPlanId', 'parentId')
      .from(ENTITY.plan, 'p')
      .withDeleted()
      .where('p.id = :id', { id })
      .getRawOne();
  const chain: string[] = [];
  const seen = new Set([planId]);
  let parent = (await parentOf(planId))?.parentId;
  while (parent && !seen.has(parent) && chain.length < MAX_ANCESTORS) {
    const row = await parentOf(parent);
    if (!row) break; // purged, erased, or its plan.created not stored yet
    seen.add(parent);
    chain.push(parent);
    parent = row.parentId;
  }
  return chain;
}
