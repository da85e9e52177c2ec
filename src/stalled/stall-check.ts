import type { DataSource, EntityManager } from 'typeorm';
import { pushAll } from '../shared/arrays';
import type { LockedHead } from '../store/ledger/plan-heads';
import { lockStoredHeads, writeHeads } from '../store/ledger/plan-heads';
import {
  deliveriesFor,
  findingEvent,
  type OutboxSubscription,
  SubscriptionCache,
  writeDeliveries,
} from '../store/outbox/webhook-outbox';
import { STALL_CHECK_FINDINGS } from '../store/outbox/webhook-triggers';
import { sqlDialectOf } from '../store/sql/dialects';
import { runSerialized } from '../store/sql/serial-queue';
import {
  dueStallsStatement,
  markStalledStatement,
  stalledCountStatement,
  unwatchedRunningStatement,
} from './stall-statements';

export interface StallCheckOptions {
  /** The check's clock. @defaultValue `new Date()` */
  now?: Date;
  /** Plans per transaction. @defaultValue 500 */
  batchSize?: number;
  /** Transactions per check at most; the next check continues. @defaultValue 20 */
  maxBatches?: number;
  /**
   * The enabled webhook subscriptions the check writes its deliveries for, read once per check
   * before its first transaction. @defaultValue read from the database
   */
  subscriptions?: () => Promise<readonly OutboxSubscription[]>;
}

/** The subscriptions of one check: read once, when it first has something to write. */
export function subscriptionsOnce(
  ds: DataSource,
  options: StallCheckOptions,
): () => Promise<readonly OutboxSubscription[]> {
  const read = options.subscriptions ?? (() => new SubscriptionCache(ds, 0).current());
  let list: Promise<readonly OutboxSubscription[]> | null = null;
  return () => (list ??= read());
}

export interface StallCheckResult {
  /** The plans this check marked stalled (none another check or an event got to first). */
  planIds: string[];
  /** False when maxBatches stopped it with due plans left for the next check. */
  complete: boolean;
}

/**
 * Marks the running plans whose stall deadline has passed (`plan_heads.stall_due_at <= now`, set
 * by the worker with each event: docs/store.md#stalled-plans) as stalled, a batch at a time, among
 * those whose check time has come (`stall_check_at <= now`). Each batch is one transaction under
 * the plans' head locks, re-checked under them: a plan whose event committed meanwhile is left
 * alone, and two checks at once mark each plan once; a plan whose events pushed its deadline on
 * gets that deadline as its next check time. Returns the ids it marked. Each plan marked gets its
 * `plan.stalled` webhook deliveries, written in the transaction that marks it (their ids derived
 * from the plan and its stalled_at: findingEvent).
 */
export async function markStalledPlans(ds: DataSource, options: StallCheckOptions = {}): Promise<StallCheckResult> {
  const now = options.now ?? new Date();
  const dialect = sqlDialectOf(ds);
  const subscriptions = subscriptionsOnce(ds, options);
  const { ids, complete } = await inBatches(
    ds,
    options,
    (limit) => dueStallsStatement(ds.manager, dialect.instant(now), limit).getRawMany<{ planId: string }>(),
    async (m, due) => {
      const subs = await subscriptions();
      const heads = await lockStoredHeads(
        m,
        dialect,
        due.map((r) => r.planId),
      );
      const stalled: LockedHead[] = [];
      const later: LockedHead[] = [];
      for (const h of heads.values()) {
        if (h.stalledAt || h.deletedAt) continue;
        if (h.stallDueAt && new Date(h.stallDueAt) <= now) stalled.push(h);
        else if (h.stallCheckAt && new Date(h.stallCheckAt) <= now) later.push(h);
      }
      // the next look at each: its deadline as its events left it (none: not running, never again)
      for (const h of later) h.stallCheckAt = h.stallDueAt;
      if (later.length > 0) await writeHeads(m, dialect, later);
      const planIds = stalled.map((h) => h.planId);
      if (planIds.length === 0) return planIds;
      await markStalledStatement(m, planIds, now).execute();
      await writeDeliveries(
        m,
        deliveriesFor(
          stalled.map((h) => stalledEvent(h, now)),
          subs,
          now,
        ),
      );
      return planIds;
    },
  );
  return { planIds: ids, complete };
}

/**
 * The stall check's loop: scans at most `batchSize` rows (`scan`), handles them in one serialized
 * transaction (`inTransaction`, which returns the ids it changed), until a scan finds fewer than
 * `batchSize` (complete) or `maxBatches` transactions ran (not complete: the next check continues).
 */
export async function inBatches<R>(
  ds: DataSource,
  options: Pick<StallCheckOptions, 'batchSize' | 'maxBatches'>,
  scan: (limit: number) => Promise<R[]>,
  inTransaction: (m: EntityManager, rows: R[]) => Promise<string[]>,
): Promise<{ ids: string[]; complete: boolean }> {
  const dialect = sqlDialectOf(ds);
  const batchSize = Math.min(options.batchSize ?? 500, dialect.maxIdsPerStatement);
  const maxBatches = options.maxBatches ?? 20;
  const ids: string[] = [];
  for (let batch = 0; batch < maxBatches; batch++) {
    const rows = await scan(batchSize);
    if (rows.length === 0) return { ids, complete: true };
    pushAll(ids, await runSerialized(ds, () => dialect.transaction(ds, (m) => inTransaction(m, rows))));
    if (rows.length < batchSize) return { ids, complete: true };
  }
  return { ids, complete: false };
}

/** The finding a `plan.stalled` webhook is made of: the plan's head as the check marked it. */
function stalledEvent(h: LockedHead, now: Date) {
  return findingEvent(
    STALL_CHECK_FINDINGS.planStalled,
    h.planId,
    now,
    { planId: h.planId, sessionId: h.sessionId, seq: h.lastSeq, occurredAt: now.toISOString() },
    {
      stalledSince: now.toISOString(),
      stallDueAt: new Date(h.stallDueAt!).toISOString(),
      deadlineMs: h.deadlineMs,
      lastSeq: h.lastSeq,
    },
  );
}

/**
 * Gives the running plans the check does not watch (no `stall_due_at`: plans running when the
 * StalledPlans migration ran, until their next event) the due time their last event would have
 * set: the head's `updated_at` (when the worker applied it) plus the plan's deadlineMs, else
 * `stallAfterMs`. Under the head locks, re-checked: a plan whose event committed meanwhile keeps
 * the due time that event set. Returns the ids it set, and whether none is left.
 */
export async function watchUnwatchedPlans(
  ds: DataSource,
  stallAfterMs: number,
  options: Pick<StallCheckOptions, 'batchSize' | 'maxBatches'> = {},
): Promise<{ planIds: string[]; complete: boolean }> {
  const dialect = sqlDialectOf(ds);
  const { ids, complete } = await inBatches(
    ds,
    options,
    (limit) => unwatchedRunningStatement(ds.manager, limit).getRawMany<{ planId: string }>(),
    async (m, rows) => {
      const heads = await lockStoredHeads(
        m,
        dialect,
        rows.map((r) => r.planId),
      );
      const unwatched = [...heads.values()].filter((h) => !h.stallDueAt && !h.stalledAt && !h.deletedAt);
      for (const h of unwatched) {
        h.stallDueAt = new Date(new Date(h.updatedAt).getTime() + (h.deadlineMs ?? stallAfterMs));
        h.stallCheckAt = h.stallDueAt;
      }
      if (unwatched.length > 0) await writeHeads(m, dialect, unwatched);
      return unwatched.map((h) => h.planId);
    },
  );
  return { planIds: ids, complete };
}

/** Live plans stalled now. */
export async function countStalledPlans(ds: DataSource): Promise<number> {
  const row = await stalledCountStatement(ds.manager).getRawOne<{ n: unknown }>();
  return Number(row?.n ?? 0);
}
