import { encodeBatch, encodeRecord } from '../queue/batch-encoding';
import type { JournalReader, JournalRecord } from './journal-reader';
import type { Batch, MemoryBuffer } from './memory-buffer';
import type { OutgoingJob, RedisLink } from './redis-link';
import { shardOfPlan } from '../queue/queue-shards';
import type { SpillJournal } from './spill-journal';

export interface DeliveryPumpConfig {
  eventsPerJob: number;
  jobsPerBulk: number;
  maxInFlightBulks: number;
  /** Largest job data (ContractLimits.maxJobBytes): a batch holds fewer events rather than pass it. */
  maxJobBytes: number;
  /** While Redis is unreachable, memory is written to the journal at least this often (group commit). */
  journalCommitMs: number;
  /** QUEUE_SHARDS: journal records are routed (and split) by their events' plan ids. @defaultValue 1 */
  queueShards?: number;
}

/**
 * The jobs of one journal record: itself, on the shard of its events' plans. A record whose line
 * names its shard in this layout is sent as it is; any other is parsed and routed by its events'
 * plan ids, split into one job per shard (ids `<record id>.s<shard>`) when they belong to several,
 * as a record written before a restart with another QUEUE_SHARDS may. A record that is not JSON
 * goes to shard 0 as it is, where the worker dead-letters it.
 */
export function recordJobs(record: JournalRecord, shards: number): OutgoingJob[] {
  if (shards <= 1) return [{ id: record.id, data: encodeRecord(record.events), shard: 0 }];
  if (record.shards === shards) return [{ id: record.id, data: encodeRecord(record.events), shard: record.shard! }];
  let events: unknown[];
  try {
    const parsed: unknown = JSON.parse(record.events.toString('utf8'));
    if (!Array.isArray(parsed)) throw new TypeError('not an array');
    events = parsed;
  } catch {
    return [{ id: record.id, data: encodeRecord(record.events), shard: 0 }];
  }
  const groups = new Map<number, unknown[]>();
  for (const event of events) {
    const planId = (event as { planId?: unknown } | null)?.planId;
    const shard = typeof planId === 'string' ? shardOfPlan(planId, shards) : 0;
    const group = groups.get(shard);
    if (group) group.push(event);
    else groups.set(shard, [event]);
  }
  if (groups.size === 1) {
    const [shard] = groups.keys();
    return [{ id: record.id, data: encodeRecord(record.events), shard }];
  }
  return [...groups].map(([shard, group]) => ({
    id: `${record.id}.s${shard}`,
    data: encodeBatch(group.map((e) => JSON.stringify(e))),
    shard,
  }));
}

/** Job ids `stored()` can wait for: 100k jobs are up to 50M events at 500 a job, ~6 MB of ids. */
const MAX_TRACKED_JOBS = 100_000;

/** Delay before resending after a failed addBulk while the connection still looks up: 100 ms doubling to 5 s. */
function retryDelayMs(failures: number): number {
  return Math.min(100 * 2 ** Math.min(failures - 1, 6), 5_000);
}

/**
 * Moves events out of the publisher, off the caller's path: memory first (oldest), then the
 * journal in order, as `addBulk` calls of `jobsPerBulk` jobs, at most `maxInFlightBulks` at once.
 * It runs on `setImmediate` after a publish, after each addBulk settles, when Redis becomes ready
 * and when a journal read completes; a burst published in one tick therefore leaves in a few large
 * bulks, a trickle in small ones without waiting.
 */
export class DeliveryPump {
  /** Events Redis confirmed (from memory and from the journal). */
  published = 0;
  /** Of `published`, the events drained from the journal. */
  recovered = 0;
  private inFlight = 0;
  private readonly inFlightBatches = new Set<Batch[]>();
  private scheduled = false;
  private stopped = false;
  private failures = 0;
  private retryTimer: NodeJS.Timeout | undefined;
  private settledWaiters: (() => void)[] = [];
  private readonly commitTimer: NodeJS.Timeout;
  /**
   * Ids of jobs Redis took, oldest first, until `stored()` sees them finished; at most
   * MAX_TRACKED_JOBS (past it the oldest are forgotten: long finished, as a rule).
   */
  private readonly sentJobs = new Map<string, number>();

  constructor(
    private readonly memory: MemoryBuffer,
    private readonly journal: SpillJournal,
    private readonly reader: JournalReader,
    private readonly link: RedisLink,
    private readonly cfg: DeliveryPumpConfig & {
      onSpilled?: (events: number) => void;
      /** Redis took a bulk of batches from memory (their events are durable now). */
      onSent?: () => void;
    },
  ) {
    this.commitTimer = setInterval(this.commit, cfg.journalCommitMs);
    this.commitTimer.unref();
  }

  /**
   * Group commit: while Redis is unreachable (not ready, or its last send failed), events waiting
   * in memory (queued, or back from a failed send) go to the journal with their job ids, and are
   * written at once; new events then queue behind them in the journal. A crash therefore loses at
   * most the events accepted in the last `journalCommitMs`, instead of the whole memory buffer.
   * Batches in flight stay (a send to a down Redis fails at once and they come back to memory).
   * Events spilled after newer journal events are out of order; the worker's store is
   * order-independent (docs/store.md#idempotent-and-order-independent). The journal's records
   * still being filled (held while its drain is behind, see `run`) are written then too, whether
   * Redis is up or not.
   */
  private readonly commit = (): void => {
    if (this.stopped) return;
    const down = !this.link.ready || this.failures > 0;
    const spilled =
      down && !this.memory.idle
        ? this.memory.spill(this.cfg.eventsPerJob, this.cfg.maxJobBytes, (batch) =>
            this.journal.appendBatch(batch.id, batch.events, batch.shard, batch.firstTicket),
          )
        : 0;
    this.journal.writeStaged();
    if (spilled > 0) this.cfg.onSpilled?.(spilled);
  };

  /** Everything accepted so far is in Redis. */
  get settled(): boolean {
    return this.memory.count === 0 && this.inFlight === 0 && !this.journal.backlog;
  }

  readonly schedule = (): void => {
    if (this.scheduled || this.stopped) return;
    this.scheduled = true;
    setImmediate(this.run);
  };

  /** Redis is (back) up: forget the failure backoff and send. */
  readonly onReady = (): void => {
    this.failures = 0;
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    this.schedule();
  };

  private readonly run = (): void => {
    this.scheduled = false;
    if (this.stopped) return;
    // While the drain is behind, records still being filled wait (up to the group commit) to leave
    // as full jobs; once it has caught up, they are written at once.
    this.journal.writeStaged(this.reader.idle);
    if (this.link.ready && this.retryTimer === undefined) {
      this.sendWhatIsWaiting();
      this.reader.maybeRead();
    }
    if (this.settled) this.notifySettled();
  };

  /**
   * Full jobs go whenever a slot is free; a partial job only when nothing is in flight. An idle
   * publisher thus sends at once, and a busy one fills its jobs while waiting for Redis (fewer,
   * larger jobs: Redis and the workers pay per job).
   */
  private sendWhatIsWaiting(): void {
    while (this.inFlight < this.cfg.maxInFlightBulks) {
      const batches = this.memory.takeForSend(
        this.cfg.jobsPerBulk,
        this.cfg.eventsPerJob,
        this.inFlight === 0,
        this.cfg.maxJobBytes,
      );
      if (batches.length > 0) {
        this.sendBatches(batches);
        continue;
      }
      if (!this.memory.idle) return; // a partial job waits for the bulk in flight
      // Memory is empty (in-flight aside): the journal holds only newer events, drain them in order.
      const records = this.reader.take(this.cfg.jobsPerBulk);
      if (records.length === 0) return;
      this.sendRecords(records);
    }
  }

  private sendBatches(batches: Batch[]): void {
    this.inFlight++;
    this.inFlightBatches.add(batches);
    const jobs = batches.map((b) => ({ id: b.id, data: encodeBatch(b.events), shard: b.shard }));
    this.link.send(jobs).then(
      () => {
        if (!this.inFlightBatches.delete(batches)) return; // spilled by close(): the journal owns them now
        this.memory.release(batches);
        for (const b of batches) {
          this.published += b.events.length;
          this.track(b.id, b.shard);
        }
        this.succeeded();
        this.cfg.onSent?.();
      },
      (err: Error) => {
        if (!this.inFlightBatches.delete(batches)) return;
        this.memory.restore(batches);
        this.failed(err);
      },
    );
  }

  private sendRecords(records: JournalRecord[]): void {
    this.inFlight++;
    const jobs = records.flatMap((r) => recordJobs(r, this.cfg.queueShards ?? 1));
    this.link.send(jobs).then(
      () => {
        const events = records.reduce((n, r) => n + r.count, 0);
        for (const job of jobs) this.track(job.id, job.shard ?? 0);
        this.published += events;
        this.recovered += events;
        this.reader.done(records);
        this.succeeded();
      },
      (err: Error) => {
        this.reader.failed(records);
        this.failed(err);
      },
    );
  }

  /** The lowest durability ticket of a batch on its way to Redis; `Infinity` when none is. */
  lowestInFlightTicket(): number {
    let lowest = Infinity;
    for (const batches of this.inFlightBatches)
      for (const b of batches) if (b.firstTicket < lowest) lowest = b.firstTicket;
    return lowest;
  }

  private track(jobId: string, shard: number): void {
    this.sentJobs.set(jobId, shard);
    if (this.sentJobs.size > MAX_TRACKED_JOBS) this.sentJobs.delete(this.sentJobs.keys().next().value!);
  }

  /** Jobs Redis took whose finish nobody has seen yet (see `stored()` of the publisher), with their shards. */
  sentJobList(): Array<{ id: string; shard: number }> {
    return [...this.sentJobs].map(([id, shard]) => ({ id, shard }));
  }

  /** Jobs an earlier publisher on this journal sent and did not see finished: `stored()` waits for them too. */
  adoptSentJobs(jobs: ReadonlyArray<{ id: string; shard: number }>): void {
    for (const job of jobs) this.track(job.id, job.shard);
  }

  /** These jobs are finished: forget them. */
  forgetJobs(ids: Iterable<string>): void {
    for (const id of ids) this.sentJobs.delete(id);
  }

  private succeeded(): void {
    this.inFlight--;
    this.failures = 0;
    this.schedule();
  }

  private failed(err: Error): void {
    this.inFlight--;
    this.failures++;
    this.link.noteFailure(err);
    if (this.stopped || this.retryTimer !== undefined) return;
    // A lost connection resumes on `ready`; a link that still looks up (timeout, Redis error) waits a little.
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.schedule();
    }, retryDelayMs(this.failures));
    this.retryTimer.unref();
  }

  /** Resolves true once everything accepted is in Redis, false after `timeoutMs`. */
  waitSettled(timeoutMs: number): Promise<boolean> {
    if (this.settled) return Promise.resolve(true);
    this.schedule();
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(this.settled), Math.max(0, timeoutMs));
      this.settledWaiters.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }

  private notifySettled(): void {
    const waiters = this.settledWaiters;
    this.settledWaiters = [];
    for (const resolve of waiters) resolve();
  }

  /**
   * Stops sending; returns what memory still holds (queued, awaiting retry or in flight) as batches
   * with their job ids, for the journal. A bulk in flight may still land in Redis: its records are
   * then ignored as duplicates when the journal is drained.
   */
  stop(): Batch[] {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    clearInterval(this.commitTimer);
    const inFlight = [...this.inFlightBatches].flat();
    this.inFlightBatches.clear();
    this.memory.release(inFlight);
    return [...inFlight, ...this.memory.takeAll(this.cfg.eventsPerJob, this.cfg.maxJobBytes)].sort(
      (a, b) => a.order - b.order,
    );
  }
}
