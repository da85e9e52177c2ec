import type { DataSource, EntityManager } from 'typeorm';
import type { Logger } from '../shared/logger';
import { ENTITY } from '../store/entities';
import { sqlDialectOf } from '../store/sql/dialects';
import { runSerialized } from '../store/sql/serial-queue';
import { isRetryableDbError } from '../store/db-errors';
import type { RetentionPolicy } from './retention-config';
import { affected, lockHeads, PLAN_TABLES, PlanTable, toDate, unstampRows } from './retention-sql';

const DAY_MS = 86_400_000;
const ATTEMPTS = 5;

/** What `plans restore` found; an expected "cannot" is an outcome, not an exception. */
export type RestoreOutcome =
  | { status: 'restored'; planId: string; deletedAt: string; rows: Partial<Record<PlanTable, number>> }
  /** No row of this plan at all: never stored, or already purged. */
  | { status: 'not-found'; planId: string }
  | { status: 'not-deleted'; planId: string }
  /** Soft-deleted longer ago than the grace period: due for purge, no longer restorable. */
  | { status: 'grace-expired'; planId: string; deletedAt: string; graceEndedAt: string };

export interface RestoreOptions {
  /** The clock the grace period is measured against. @defaultValue `new Date()` */
  now?: Date;
  logger?: Logger;
}

/**
 * Undoes a plan's soft delete during the grace period: clears `deleted_at` on every row it owns
 * (also a DAG/checkpoints that had expired before, so it comes back whole) and stamps the restore
 * (`plan_heads.restored_at`, and `updated_at`), so retention keeps it for another full period from
 * now instead of retiring it again at the next run. Under the plan's head lock, like every writer: a concurrent
 * purge either ran before (not-found) or sees the plan restored.
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
        { planId, outcome: outcome.status, ...(outcome.status === 'restored' ? { rows: outcome.rows } : {}) },
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
  await lockHeads(m, [planId]).execute();
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
  const rows: Partial<Record<PlanTable, number>> = {};
  for (const spec of PLAN_TABLES) rows[spec.table] = affected(await unstampRows(m, spec, [planId]).execute());
  await m
    .createQueryBuilder()
    .update(ENTITY.head)
    .set({ updatedAt: now, restoredAt: now })
    .where({ planId })
    .callListeners(false)
    .execute();
  return { status: 'restored', planId, deletedAt: deletedAt.toISOString(), rows };
}
