import type { DataSource, EntityManager } from 'typeorm';
import type { PlanEvent } from '../contracts';
import type { PriceOverride } from '../pricing';
import type { Logger } from '../shared/logger';
import { ApplyStats, PlanApplier } from './apply/plan-applier';
import { ApprovalChange, applyApprovalEvents } from './approvals/approval-apply';
import { CacheStage, DEFAULT_ROW_CACHE_BYTES, PlanRowCache } from './apply/plan-row-cache';
import { isDuplicateKeyError } from './db-errors';
import type { PlanHeadRow } from './entities';
import { firstCopies } from './ledger/event-conflict';
import { EventLog } from './ledger/event-log';
import { overdueGapsStatement, waitingPlansStatement } from './ledger/log-statements';
import { lockHeads, lockStoredHeads, newHead } from './ledger/plan-heads';
import { PriceOverrideCache } from './price-overrides';
import { isVoidedSeq } from './projection/voided-seq';
import { sqlDialectOf } from './sql/dialects';
import { chunk } from './sql/batch-limits';
import { runSerialized } from './sql/serial-queue';
import type { SqlDialect } from './sql/sql-dialect';
import { deliveriesFor, type OutboxSubscription, SubscriptionCache, writeDeliveries } from './outbox/webhook-outbox';

export { EventConflictError, EventIdConflictError } from './ledger/event-conflict';

export interface PersistOutcome extends ApplyStats {
  /** Events newly stored (voided seqs not counted: see `voided`). */
  inserted: number;
  /** Voided seqs newly recorded (voided-seq.ts): refusals, not events. */
  voided: number;
  /** Events already stored before (redelivered or replayed), or repeated in the batch: no-ops. */
  duplicates: number;
  /** Event ids that were duplicates, for metrics and replay summaries. */
  duplicateIds: string[];
  /** Plans whose rows were written. */
  plans: number;
  /** Webhook deliveries written to the outbox (webhook_deliveries) with the events. */
  webhooks: number;
  /**
   * What the batch changed in `approvals` (approval-apply.ts): the hook point for what reacts to
   * an approval requested or decided, known inside the transaction that stored it.
   */
  approvals: ApprovalChange[];
}

/** What `applyOverdueGaps` did. */
export interface GapSweep {
  /** Plans whose waiting events were applied past their gap. */
  plans: number;
  /** Events those plans applied. */
  events: number;
}

export interface PlanEventStoreOptions {
  /**
   * Estimated bytes of plan rows kept in memory between transactions (see plan-row-cache.ts), so
   * the next events of a plan this store wrote last apply without reading its rows back. 0: off.
   * @defaultValue 64 MiB
   */
  rowCacheBytes?: number;
  /** How long the price overrides read are used before they are read again. @defaultValue 5,000 ms */
  overridesRefreshMs?: number;
  /** STALL_AFTER: a running plan with no deadline of its own is stalled after this long without an event. @defaultValue 15 min */
  stallAfterMs?: number;
  /** How long the webhook subscriptions read are used before they are read again. @defaultValue 2,000 ms */
  subscriptionsRefreshMs?: number;
}

/**
 * A duplicate key on a row another transaction created concurrently (on SQL Server, where inserts
 * cannot skip existing keys): re-run, the transaction then sees that row.
 */
const DUPLICATE_KEY_RETRIES = 5;

/**
 * Writes validated events: appends them to `plan_events` (idempotent by eventId) and applies
 * them to the rows of their plans, in one transaction (docs/store.md). A plan's events apply in
 * seq order up to the first missing seq, each to the rows it touches; events past a gap wait in
 * the log until it fills. The rows always equal the whole-log fold (foldPlan) of the plan's events
 * up to its watermark, whatever order they arrived in. Writers of one plan serialise on its
 * `plan_heads` row, locked before anything of the plan is read. Throws driver errors as they
 * come; classify them with `isRetryableDbError` (src/store/db-errors.ts).
 */
export class PlanEventStore {
  private readonly dialect: SqlDialect;
  /** Rows of the plans this store wrote last (docs/store.md#rows-cached-between-transactions). */
  readonly rowCache: PlanRowCache;
  /** Price overrides in force, read again every few seconds. */
  private readonly prices: PriceOverrideCache;
  private readonly stallAfterMs: number | undefined;
  /** Enabled webhook subscriptions, read again every few seconds (the outbox rows are written with the events). */
  private readonly subscriptions: SubscriptionCache;

  constructor(
    private readonly ds: DataSource,
    private readonly logger?: Logger,
    options: PlanEventStoreOptions = {},
  ) {
    this.dialect = sqlDialectOf(ds);
    this.rowCache = new PlanRowCache(options.rowCacheBytes ?? DEFAULT_ROW_CACHE_BYTES);
    this.prices = new PriceOverrideCache(ds, options.overridesRefreshMs);
    this.stallAfterMs = options.stallAfterMs;
    this.subscriptions = new SubscriptionCache(ds, options.subscriptionsRefreshMs);
  }

  async persist(events: PlanEvent[]): Promise<PersistOutcome> {
    const using = await this.using();
    return this.write((m, stage) => this.persistIn(m, stage, events, using), events.length);
  }

  /** What a transaction of new events reads once before it starts: prices and webhook subscriptions. */
  private async using(): Promise<WriteInputs> {
    const [overrides, subscriptions] = await Promise.all([this.prices.current(), this.subscriptions.current()]);
    return { overrides, subscriptions };
  }

  /**
   * Stores `event` as the first event of a plan id under which nothing was ever stored, or throws
   * `taken(planId)` and writes nothing. Checked under the plan's head lock: of concurrent
   * creations under one id, exactly one is stored and the others are refused.
   */
  async createPlan(event: PlanEvent, taken: (planId: string) => Error): Promise<PersistOutcome> {
    const using = await this.using();
    return this.write((m, stage) => this.persistIn(m, stage, [event], using, taken), 1);
  }

  /** Event ids among `eventIds` already stored (replay summaries: "already stored"). */
  async storedEventIds(eventIds: string[]): Promise<Set<string>> {
    return new Set(
      (
        await new EventLog(this.ds.manager, this.dialect).storedPlans([
          ...new Set(eventIds.map((id) => id.toLowerCase())),
        ])
      ).keys(),
    );
  }

  /**
   * Rebuild these plans' rows from their whole logs (the reference semantics), as a late event
   * would, each stored step keeping its cost (PlanReducer.keepPrices): for an operator who doubts
   * a plan's rows, and for the tests. Returns the plans rebuilt
   * (a plan without plan.created has no rows to rebuild).
   */
  async rebuildPlans(planIds: string[]): Promise<number> {
    const overrides = await this.prices.current();
    let rebuilt = 0;
    for (const part of chunk([...new Set(planIds)].sort(), 100)) {
      rebuilt += await this.write(async (m, stage) => {
        const heads = await lockStoredHeads(m, this.dialect, part);
        const applier = new PlanApplier(m, this.dialect, heads, {
          now: new Date(),
          cache: { rows: this.rowCache, stage },
          overrides,
          stallAfterMs: this.stallAfterMs,
        });
        for (const head of heads.values()) if (head.appliedSeq !== null) await applier.rebuild(head);
        await applier.finish();
        return applier.stats.rebuilt;
      }, part.length);
    }
    return rebuilt;
  }

  /**
   * Plans that have waited on a missing seq since `cutoff` or longer (the event was lost, or
   * dead-lettered, or the executor skipped a seq) apply their waiting events as if none were
   * missing. Should the missing event come later after all, the plan is rebuilt from its log.
   * At most `limit` plans per call, one transaction each.
   */
  async applyOverdueGaps(cutoff: Date, limit = 100): Promise<GapSweep> {
    const rows: { planId: string }[] = await overdueGapsStatement(
      this.ds.manager,
      this.dialect.instant(cutoff),
      limit,
    ).getRawMany();
    const sweep: GapSweep = { plans: 0, events: 0 };
    const overrides = rows.length > 0 ? await this.prices.current() : [];
    for (const { planId } of rows) {
      const done = await this.write(async (m, stage) => {
        const head = (await lockStoredHeads(m, this.dialect, [planId])).get(planId);
        // re-checked under the lock: another worker may have applied or skipped it meanwhile
        if (!head || head.appliedSeq === null || !head.gapSince || new Date(head.gapSince) > cutoff) return undefined;
        const applier = new PlanApplier(m, this.dialect, new Map([[planId, head]]), {
          now: new Date(),
          cache: { rows: this.rowCache, stage },
          overrides,
          stallAfterMs: this.stallAfterMs,
        });
        await applier.skipGap(head);
        await applier.finish();
        return applier.stats;
      }, 1);
      if (done?.gapsSkipped) {
        sweep.plans++;
        sweep.events += done.applied;
        this.logger?.warn(
          { planId, events: done.applied },
          'plan waited too long on a missing seq: its waiting events were applied past the gap',
        );
      }
    }
    return sweep;
  }

  /** Plans waiting on a missing seq now. */
  async waitingPlans(): Promise<number> {
    const row = await waitingPlansStatement(this.ds.manager).getRawOne<{ n: unknown }>();
    return Number(row?.n ?? 0);
  }

  /**
   * One transaction (serialised on SQLite), re-run when a concurrent writer created the same rows.
   * What it staged for the row cache is kept only once it has committed.
   */
  private async write<T>(work: (m: EntityManager, stage: CacheStage) => Promise<T>, events: number): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const stage = this.rowCache.stage();
      try {
        const out = await runSerialized(this.ds, () => this.transaction((m) => work(m, stage)));
        stage.commit();
        return out;
      } catch (err) {
        if (!isDuplicateKeyError(err) || attempt >= DUPLICATE_KEY_RETRIES) throw err;
        this.logger?.debug({ attempt, events }, 'concurrent writer created the same rows; retrying');
      }
    }
  }

  /**
   * After a plan_heads lock is granted, the next statement must see what the previous holder committed: the dialect's
   * write transaction does.
   */
  private transaction<T>(work: (m: EntityManager) => Promise<T>): Promise<T> {
    return this.dialect.transaction(this.ds, work);
  }

  private async persistIn(
    m: EntityManager,
    stage: CacheStage,
    events: PlanEvent[],
    using: WriteInputs,
    /** Set: every plan must be new (its head created by this transaction); else this error. */
    taken?: (planId: string) => Error,
  ): Promise<PersistOutcome> {
    // one copy per id; copies that differ are a conflict (EventConflictError), never a silent pick
    const unique = firstCopies(events);
    const now = new Date();
    // Heads are locked before anything is read, so every read below sees what earlier writers of
    // these plans committed. Lock order is always heads (sorted) then sessions (sorted).
    const heads = await lockHeads(m, this.dialect, headsOf(unique, now));
    if (taken) for (const head of heads.values()) if (!head.isNew) throw taken(head.planId);
    const log = new EventLog(m, this.dialect);
    const { fresh, existing } = await log.append(unique, heads);
    if (existing.size > 0) await log.assertRedeliveries(unique.filter((e) => existing.has(e.eventId)));
    const duplicateIds = events.length === unique.length ? [...existing.keys()] : duplicatesOf(events, existing);
    const voided = countVoided(fresh);
    const outcome: PersistOutcome = {
      inserted: fresh.length - voided,
      voided,
      duplicates: events.length - fresh.length,
      duplicateIds,
      plans: 0,
      approvals: [],
      applied: 0,
      rebuilt: 0,
      gapWaits: 0,
      gapsSkipped: 0,
      cacheHits: 0,
      webhooks: 0,
    };
    if (fresh.length === 0) return outcome;
    const applier = new PlanApplier(m, this.dialect, heads, {
      now,
      cache: { rows: this.rowCache, stage },
      overrides: using.overrides,
      stallAfterMs: this.stallAfterMs,
    });
    await applier.applyNew(fresh);
    await applier.finish();
    const approvals = await applyApprovalEvents(m, this.dialect, fresh);
    // the transactional outbox: a delivery per stored event a webhook trigger matches, committed with it
    const webhooks = await writeDeliveries(m, deliveriesFor(fresh, using.subscriptions, now));
    return { ...outcome, ...applier.stats, plans: applier.plans, webhooks, approvals };
  }
}

/** What every transaction of new events uses, read before it starts. */
interface WriteInputs {
  overrides: readonly PriceOverride[];
  subscriptions: readonly OutboxSubscription[];
}

/** One head per plan, for the plans seen for the first time (lockHeads keeps the stored ones). */
function headsOf(events: PlanEvent[], now: Date): PlanHeadRow[] {
  const heads = new Map<string, PlanHeadRow>();
  for (const e of events) if (!heads.has(e.planId)) heads.set(e.planId, newHead(e.planId, e.sessionId, now));
  return [...heads.values()];
}

function countVoided(events: PlanEvent[]): number {
  let n = 0;
  for (const e of events) if (isVoidedSeq(e)) n++;
  return n;
}

function duplicatesOf(events: PlanEvent[], existing: ReadonlyMap<string, string>): string[] {
  const seen = new Set<string>();
  const dups: string[] = [];
  for (const e of events) {
    if (existing.has(e.eventId) || seen.has(e.eventId)) dups.push(e.eventId);
    seen.add(e.eventId);
  }
  return dups;
}
