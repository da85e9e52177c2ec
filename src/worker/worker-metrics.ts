import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { DEAD_LETTER_KINDS } from '../dead-letters/dead-letter';

/** What the queue gauges read at scrape time; the worker passes its EVENTS_QUEUE Queue. */
export interface QueueProbe {
  getJobCounts(...types: string[]): Promise<Record<string, number>>;
  /** Creation time (ms) of the oldest waiting job, or undefined when none waits. */
  oldestWaitingTimestamp(): Promise<number | undefined>;
}

/** What the dead-letter gauges read at scrape time; the worker passes its DeadLetterRepository. */
export interface DeadLetterProbe {
  /** Dead letters by kind, and when (ms) the oldest was dead-lettered (undefined when none). */
  depth(): Promise<{ byKind: Map<string, number>; oldestAtMs: number | undefined }>;
}

export interface WorkerMetricsOptions {
  /** Registry to register on. @defaultValue a new private Registry (never prom-client's global one) */
  registry?: Registry;
  /** Also export process metrics (RSS, CPU, event-loop lag). @defaultValue true */
  processMetrics?: boolean;
  /** Clock for the oldest-job age. @defaultValue Date.now */
  now?: () => number;
}

const QUEUE_STATES = ['wait', 'active', 'delayed', 'paused', 'prioritized', 'failed'] as const;

/**
 * The worker's Prometheus metrics, on a registry of its own so two workers in one process (tests,
 * the demo) never collide. Names follow Prometheus conventions: `_total` counters, `_seconds`.
 */
export class WorkerMetrics {
  readonly registry: Registry;
  readonly persisted: Counter<'type'>;
  readonly duplicates: Counter<'type'>;
  readonly deadLettered: Counter<'kind' | 'type'>;
  /** Events whose id was already stored for another event (dead-lettered as `conflict`). */
  readonly eventConflicts: Counter;
  readonly retries: Counter<'code'>;
  readonly commitSeconds: Histogram<never>;
  readonly batchEvents: Histogram<never>;
  readonly databaseUp: Gauge<never>;
  readonly eventsApplied: Counter<never>;
  readonly planRebuilds: Counter<never>;
  readonly gapWaits: Counter<never>;
  readonly gapsSkipped: Counter<never>;
  readonly plansWaitingOnGap: Gauge<never>;
  readonly rowCacheHits: Counter<never>;
  /** The events queue's shards by `shard` label (`0` alone without QUEUE_SHARDS). */
  private readonly queueProbes = new Map<string, QueueProbe>();
  private deadLetterProbe: DeadLetterProbe | undefined;
  /** Reads how many plans are stalled now (plan_heads.stalled_at), at scrape time. */
  private stalledPlansProbe: (() => Promise<number>) | undefined;
  /** Reads the pending approvals by age bucket, at scrape time. */
  private pendingApprovalsProbe: (() => Promise<ReadonlyMap<string, number>>) | undefined;
  private deadLetterRead: ReturnType<DeadLetterProbe['depth']> | undefined;
  private readonly now: () => number;

  constructor(options: WorkerMetricsOptions = {}) {
    this.registry = options.registry ?? new Registry();
    this.now = options.now ?? Date.now;
    const registers = [this.registry];
    if (options.processMetrics ?? true)
      collectDefaultMetrics({ register: this.registry, prefix: 'plan_ledger_worker_' });
    this.persisted = new Counter({
      name: 'plan_ledger_events_persisted_total',
      help: 'Events newly stored, by event type',
      labelNames: ['type'],
      registers,
    });
    this.duplicates = new Counter({
      name: 'plan_ledger_events_duplicate_total',
      help: 'Events already stored (redelivered or replayed): no-ops, by event type',
      labelNames: ['type'],
      registers,
    });
    this.deadLettered = new Counter({
      name: 'plan_ledger_events_dead_lettered_total',
      help: 'Events sent to the dead-letter queue, by kind and event type',
      labelNames: ['kind', 'type'],
      registers,
    });
    this.eventConflicts = new Counter({
      name: 'plan_ledger_event_id_conflicts_total',
      help: 'Events whose id is already stored for a different event (other plan, type, seq, time or payload): dead-lettered as conflict',
      registers,
    });
    this.retries = new Counter({
      name: 'plan_ledger_write_retries_total',
      help: 'Batch writes that failed for a transient reason and will be retried, by driver code',
      labelNames: ['code'],
      registers,
    });
    this.commitSeconds = new Histogram({
      name: 'plan_ledger_commit_duration_seconds',
      help: 'Time of one database transaction (persist of one batch), successful ones',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    this.batchEvents = new Histogram({
      name: 'plan_ledger_batch_events',
      help: 'Events per committed batch',
      buckets: [1, 10, 50, 100, 250, 500, 1000, 2500, 5000, 10000],
      registers,
    });
    this.databaseUp = new Gauge({
      name: 'plan_ledger_database_up',
      help: '1 while the worker considers the database reachable',
      registers,
    });
    this.databaseUp.set(1);
    // the store (docs/store.md#metrics): incremental applies, rare rebuilds, gaps in a plan's seq
    this.eventsApplied = new Counter({
      name: 'plan_ledger_events_applied_total',
      help: "Events applied to their plan's rows without reading the plan's log",
      registers,
    });
    this.planRebuilds = new Counter({
      name: 'plan_ledger_plan_rebuilds_total',
      help: 'Plans rebuilt from their whole event log (an event landed behind the plan watermark: a seq used twice, or an event after its gap was skipped)',
      registers,
    });
    this.gapWaits = new Counter({
      name: 'plan_ledger_gap_waits_total',
      help: 'Times a plan started waiting on a missing seq, its later events kept in the log',
      registers,
    });
    this.gapsSkipped = new Counter({
      name: 'plan_ledger_gaps_skipped_total',
      help: 'Plans whose missing seq was waited for longer than WORKER_GAP_TIMEOUT_MS: their waiting events were applied past the gap',
      registers,
    });
    this.plansWaitingOnGap = new Gauge({
      name: 'plan_ledger_plans_waiting_on_gap',
      help: 'Plans waiting on a missing seq now (read by the gap sweeper)',
      registers,
    });
    this.rowCacheHits = new Counter({
      name: 'plan_ledger_row_cache_hits_total',
      help: 'Plans whose new events applied to rows this worker had cached, without reading them back (WORKER_ROW_CACHE_MB)',
      registers,
    });
    this.registerQueueGauges(registers);
    this.registerDeadLetterGauges(registers);
    const stalledPlans = () => this.stalledPlansProbe?.();
    new Gauge({
      name: 'plan_ledger_plans_stalled',
      help: 'Running plans with no event within their deadline (STALL_AFTER or their deadlineMs), found by the stall check',
      registers,
      async collect() {
        // unreadable (the database down, a migration pending): no sample rather than a wrong 0
        const n = await stalledPlans()?.catch(() => undefined);
        if (n !== undefined) this.set(n);
      },
    });
    this.registerApprovalGauges(registers);
  }

  /** The pending approvals by age bucket, read from the database at scrape time. */
  private registerApprovalGauges(registers: Registry[]): void {
    const pendingApprovals = () => this.pendingApprovalsProbe?.();
    new Gauge({
      name: 'plan_ledger_approvals_pending',
      help: 'Approvals requested and neither decided nor expired, by age since the request (<1m, 1m-10m, 10m-1h, 1h-1d, >1d)',
      labelNames: ['age'],
      registers,
      async collect() {
        // unreadable (the database down, a migration pending): no sample rather than a wrong 0
        const byAge = await pendingApprovals()?.catch(() => undefined);
        if (byAge !== undefined) for (const [age, n] of byAge) this.set({ age }, n);
      },
    });
  }

  /** The events queue's gauges, read at scrape time from the observed shards. */
  private registerQueueGauges(registers: Registry[]): void {
    // prom-client calls collect() with the gauge as `this`: the worker's state is reached through these
    const probes = () => this.queueProbes;
    const now = () => this.now();
    new Gauge({
      name: 'plan_ledger_queue_jobs',
      help: 'Jobs of the events queue by shard and state (each job holds several events)',
      labelNames: ['shard', 'state'],
      registers,
      async collect() {
        await Promise.all(
          [...probes()].map(async ([shard, queue]) => {
            const counts = await queue.getJobCounts(...QUEUE_STATES);
            for (const state of QUEUE_STATES) this.set({ shard, state }, counts[state] ?? 0);
          }),
        );
      },
    });
    new Gauge({
      name: 'plan_ledger_queue_oldest_waiting_age_seconds',
      help: 'Age of the oldest job waiting on the events queue, by shard; 0 when none waits',
      labelNames: ['shard'],
      registers,
      async collect() {
        await Promise.all(
          [...probes()].map(async ([shard, queue]) => {
            const ts = await queue.oldestWaitingTimestamp();
            this.set({ shard }, ts === undefined ? 0 : Math.max(0, (now() - ts) / 1000));
          }),
        );
      },
    });
  }

  private registerDeadLetterGauges(registers: Registry[]): void {
    const now = () => this.now();
    const readDeadLetters = () => this.readDeadLetters();
    // the dead-letter queue (`plan-ledger dlq`): nothing consumes it, so its depth only grows until
    // an operator replays or purges; alert on it, and on the age of the oldest entry
    new Gauge({
      name: 'plan_ledger_dead_letters',
      help: 'Dead letters waiting for `plan-ledger dlq replay` or `purge`, by kind (every kind listed, 0 included)',
      labelNames: ['kind'],
      registers,
      async collect() {
        const read = readDeadLetters();
        if (!read) return;
        const { byKind } = await read;
        for (const kind of new Set<string>([...DEAD_LETTER_KINDS, ...byKind.keys()]))
          this.set({ kind }, byKind.get(kind) ?? 0);
      },
    });
    new Gauge({
      name: 'plan_ledger_dead_letter_oldest_age_seconds',
      help: 'Time since the oldest waiting dead letter was dead-lettered; 0 when there is none',
      registers,
      async collect() {
        const read = readDeadLetters();
        if (!read) return;
        const { oldestAtMs } = await read;
        this.set(oldestAtMs === undefined ? 0 : Math.max(0, (now() - oldestAtMs) / 1000));
      },
    });
  }

  /** Attach the read of the stalled plans' count (the plan_ledger_plans_stalled gauge). */
  observeStalledPlans(probe: () => Promise<number>): void {
    this.stalledPlansProbe = probe;
  }

  /** Attach the read of the pending approvals by age bucket (the plan_ledger_approvals_pending gauge). */
  observePendingApprovals(probe: () => Promise<ReadonlyMap<string, number>>): void {
    this.pendingApprovalsProbe = probe;
  }

  /** Attach the dead-letter queue read by the dead-letter depth and age gauges. */
  observeDeadLetters(probe: DeadLetterProbe): void {
    this.deadLetterProbe = probe;
  }

  /** The read in flight, if any, else a new one: the two gauges of one scrape share a single read. */
  private readDeadLetters(): ReturnType<DeadLetterProbe['depth']> | undefined {
    if (!this.deadLetterProbe) return undefined;
    if (!this.deadLetterRead) {
      const read = this.deadLetterProbe.depth();
      this.deadLetterRead = read;
      const done = () => {
        if (this.deadLetterRead === read) this.deadLetterRead = undefined;
      };
      read.then(done, done);
    }
    return this.deadLetterRead;
  }

  /** Attach a queue (shard) read by the depth and age gauges, labelled `shard`. */
  observeQueue(probe: QueueProbe, shard = '0'): void {
    this.queueProbes.set(shard, probe);
  }

  countByType(counter: Counter<'type'>, types: Iterable<string>): void {
    const tally = new Map<string, number>();
    for (const type of types) tally.set(type, (tally.get(type) ?? 0) + 1);
    for (const [type, n] of tally) counter.inc({ type }, n);
  }

  async text(): Promise<string> {
    return this.registry.metrics();
  }
}
