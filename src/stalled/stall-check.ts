import type { DataSource } from 'typeorm';
import { pushAll } from '../shared/arrays';
import { lockStoredHeads } from '../store/ledger/plan-heads';
import { sqlDialectOf } from '../store/sql/dialects';
import { runSerialized } from '../store/sql/serial-queue';
import { dueStallsStatement, markStalledStatement, stalledCountStatement } from './stall-statements';

export interface StallCheckOptions {
  /** The check's clock. @defaultValue `new Date()` */
  now?: Date;
  /** Plans per transaction. @defaultValue 500 */
  batchSize?: number;
  /** Transactions per check at most; the next check continues. @defaultValue 20 */
  maxBatches?: number;
}

export interface StallCheckResult {
  /** The plans this check marked stalled (none another check or an event got to first). */
  planIds: string[];
  /** False when maxBatches stopped it with due plans left for the next check. */
  complete: boolean;
}

/**
 * Marks the running plans whose stall deadline has passed (`plan_heads.stall_due_at <= now`, set
 * by the worker with each event: docs/store.md#stalled-plans) as stalled, a batch at a time. Each
 * batch is one transaction under the plans' head locks, re-checked under them: a plan whose event
 * committed meanwhile is left alone, and two checks at once mark each plan once. Returns the ids it
 * marked, the plans a "plan stalled" notification is for.
 */
export async function markStalledPlans(ds: DataSource, options: StallCheckOptions = {}): Promise<StallCheckResult> {
  const now = options.now ?? new Date();
  const dialect = sqlDialectOf(ds);
  const batchSize = Math.min(options.batchSize ?? 500, dialect.maxIdsPerStatement);
  const maxBatches = options.maxBatches ?? 20;
  const planIds: string[] = [];
  for (let batch = 0; batch < maxBatches; batch++) {
    const due: Array<{ planId: string }> = await dueStallsStatement(
      ds.manager,
      dialect.instant(now),
      batchSize,
    ).getRawMany();
    if (due.length === 0) return { planIds, complete: true };
    const marked = await runSerialized(ds, () =>
      dialect.transaction(ds, async (m) => {
        const heads = await lockStoredHeads(
          m,
          dialect,
          due.map((r) => r.planId),
        );
        const ids = [...heads.values()]
          .filter((h) => h.stallDueAt && new Date(h.stallDueAt) <= now && !h.stalledAt && !h.deletedAt)
          .map((h) => h.planId);
        if (ids.length > 0) await markStalledStatement(m, ids, now).execute();
        return ids;
      }),
    );
    pushAll(planIds, marked);
    if (due.length < batchSize) return { planIds, complete: true };
  }
  return { planIds, complete: false };
}

/** Live plans stalled now. */
export async function countStalledPlans(ds: DataSource): Promise<number> {
  const row = await stalledCountStatement(ds.manager).getRawOne<{ n: unknown }>();
  return Number(row?.n ?? 0);
}
