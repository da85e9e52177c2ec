import { parsePlanEvent } from '../contracts';
import type { ContractLimits, PlanEventInput, PlanEventTypeName, PayloadByType, Violation } from '../contracts';
import { ENVELOPE } from '../contracts/declaration';
import { checkEventInput } from '../contracts/fast-check/event-rules';
import { CheckContext, isPlainObject } from '../contracts/fast-check/field-rules';
import { resolveLimits } from '../contracts/limits';
import { violationAt } from '../contracts/violation-path';
import { lazyRequire } from '../shared/lazy-require';
import { createLogger, Logger } from '../shared/logger';
import { hideRedisCommandArguments } from '../shared/redis-debug';
import { DeliveryPump } from './delivery-pump';
import { EventStamper, StampedEvent } from './event-stamper';
import { readUnconfirmedJobs, writeUnconfirmedJobs } from './journal-files';
import { JournalReader } from './journal-reader';
import { MemoryBuffer } from './memory-buffer';
import { checkJobLimit, PublisherOptions, ResolvedOptions, resolveOptions } from './publisher-options';
import type {
  CloseResult,
  Durability,
  DurabilityMark,
  EventStamps,
  PlanRef,
  PublishResult,
  PublisherStats,
} from './publisher.types';
import { RateLimitedLog } from './rate-limited-log';
import { RedisLink } from './redis-link';
import { SpillJournal } from './spill-journal';
import { shardOfPlan } from '../queue/queue-shards';
import { TypedHelpers } from './typed-helpers';

const publisherMetrics = lazyRequire<typeof import('./publisher-metrics')>(require, './publisher-metrics');

/** How often `stored()` looks whether the jobs it waits for are finished. */
const STORED_POLL_MS = 50;

const CLOSED: Violation[] = Object.freeze([
  violationAt('', 'cannot be published: the publisher is closed'),
]) as Violation[];

/**
 * Fire-and-forget publishing of plan events, for executors: `publish()` is synchronous, costs a few
 * microseconds, never waits for Redis and never throws because Redis is slow or down.
 *
 * Path of an event: checked and stamped in `publish()`, serialised once, then queued in a bounded
 * memory buffer; a pump sends batches (`eventsPerJob` events per BullMQ job, `jobsPerBulk` jobs per
 * `addBulk`) off the caller's path. When Redis is down, memory fills up to its bound; past it events
 * go to an append-only spill journal on disk (bounded by `maxJournalBytes`), which drains in order
 * once Redis is back, and which a restarted publisher drains too. Only past the journal bound are
 * events dropped, each one counted and logged.
 *
 * Validation trade-off: `parsePlanEvent` (class-validator) costs ~25 µs per small event here, over
 * the 10 µs budget of `publish()`. The default `validation: 'fast'` runs the publisher's own check
 * of every contract rule (~1 µs) and reports violations at once, in the return value and through
 * `onRejected`; the worker re-validates with `checkStoredEvent` (`parsePlanEvent`'s verdict) and
 * dead-letters anything that slipped through. `validation: 'contract'` runs `parsePlanEvent` inline instead, exact
 * and ~25x slower.
 *
 * Delivery is at-least-once into Redis with duplicates suppressed by job id (a batch keeps its id
 * through retries, spills and restarts); the worker's eventId idempotency does the rest.
 *
 * What a crash (kill -9, OOM kill) of the executor's process can lose, and nothing else:
 * - Redis up: the events accepted but not yet acknowledged by Redis, held in memory on their way
 *   (normally the last few milliseconds; at most `maxBufferedEvents` if Redis is slow).
 * - Redis unreachable: the events accepted in the last `journalCommitMs` (default 100 ms): memory is
 *   written to the journal that often (group commit), and later events go straight to the journal,
 *   written on the next turn of the event loop. Journal writes reach the OS at once and are fsynced
 *   right after: a process crash loses nothing written, a power loss at most the last unsynced write.
 * What is in the journal is delivered by the next publisher on the same `journalDir`.
 * Call `close()` before the process exits: it waits for Redis, then journals what memory still holds.
 *
 * Measured here (BENCHMARKS.md, "Publisher"): p50 ~2 µs, p99 ~8.5 µs with Redis up or down;
 * ~200k+ events/s into Redis when the process has a core to itself.
 *
 * @example
 * ```ts
 * const publisher = new PlanEventPublisher({ redisUrl: process.env.REDIS_URL, journalDir: '/var/lib/executor/journal'
 * });
 * const plan = { planId: 'plan_42', sessionId: 'session_7' };
 * publisher.planCreated(plan, { query: 'Summarise the report', steps: [{ stepId: 's1', index: 0, agentId: 'writer',
 * task: 'Summarise' }] });
 * const result = publisher.stepCompleted(plan, { stepId: 's1', inputTokens: 812, outputTokens: 240, model: 'gpt-4o' });
 * if (!result.ok) console.warn(result.reason, result.violations);
 * await publisher.close(5_000); // on shutdown
 * ```
 */
export class PlanEventPublisher extends TypedHelpers {
  private readonly opts: ResolvedOptions;
  private readonly limits: Readonly<ContractLimits>;
  private readonly logger: Logger;
  private readonly stamper: EventStamper;
  private readonly memory: MemoryBuffer;
  private readonly journal: SpillJournal;
  private readonly link: RedisLink;
  private readonly pump: DeliveryPump;
  private readonly dropLog: RateLimitedLog;
  private readonly rejectLog: RateLimitedLog;
  private counts = { spilled: 0, dropped: 0, rejected: 0, lostAfterAcceptance: 0 };
  /** The durability ticket of the next event taken (memory or journal): 1, 2, 3, ... */
  private nextTicket = 1;
  private durableWaiters: DurableWaiter[] = [];
  private closing: Promise<CloseResult> | undefined;
  private readonly metrics: { remove(): void } | undefined;
  /** Reused by every fast check: publish() allocates as little as it can (GC pauses are latency). */
  private readonly checkContext: CheckContext;

  constructor(options: PublisherOptions = {}) {
    super();
    hideRedisCommandArguments();
    this.opts = resolveOptions(options);
    this.limits = resolveLimits(options.limits);
    checkJobLimit(this.limits, this.opts.journalWriteBytes);
    // prom-client is loaded only for an executor that asks for metrics (`plan-ledger/publisher` stays light)
    const metrics = options.metricsRegistry ? publisherMetrics() : undefined;
    if (metrics) metrics.assertMetricsFree(options.metricsRegistry!);
    this.checkContext = { limits: this.limits, out: [] };
    this.logger = options.logger ?? createLogger({ base: { component: 'publisher' } });
    this.stamper = new EventStamper(this.opts.maxTrackedPlans);
    this.memory = new MemoryBuffer(this.opts.maxBufferedEvents, this.opts.maxBufferedBytes, this.opts.queueShards);
    this.dropLog = new RateLimitedLog(this.logger, 'error', 'events dropped');
    this.rejectLog = new RateLimitedLog(this.logger, 'warn', 'events rejected: they break the event contract');
    this.journal = this.openJournal();
    const reader = new JournalReader(this.journal, {
      readBytes: this.opts.journalWriteBytes,
      readAheadBytes: 4 * this.opts.journalWriteBytes,
      logger: this.logger,
      onUnreadable: (events) => this.drop(events, 'journal record unreadable'),
      wake: () => this.pump.schedule(),
    });
    this.link = new RedisLink({
      target: { redisUrl: this.opts.redisUrl, redisClusterNodes: this.opts.redisClusterNodes },
      connection: this.opts.connection,
      queuePrefix: this.opts.queuePrefix,
      queueShards: this.opts.queueShards,
      commandTimeoutMs: this.opts.redisCommandTimeoutMs,
      jobOptions: this.opts.jobOptions,
      logger: this.logger,
      onReady: () => this.pump.onReady(),
    });
    this.pump = new DeliveryPump(this.memory, this.journal, reader, this.link, {
      ...this.opts,
      maxJobBytes: this.limits.maxJobBytes,
      queueShards: this.opts.queueShards,
      onSpilled: (events) => (this.counts.spilled += events),
      onSent: () => this.settleDurable(),
    });
    // registered last: nothing below can throw, so a failed constructor leaves the registry as it was
    if (metrics) this.metrics = metrics.registerPublisherMetrics(options.metricsRegistry!, () => this.stats());
    if (this.journal.backlog)
      this.logger.info(
        { journalDir: this.opts.journalDir, journalBytes: this.journal.usedBytes },
        'journal left by a previous publisher will be drained',
      );
    this.adoptUnconfirmedJobs();
  }

  /** Read your writes across restarts: the jobs the previous publisher on this journal did not see finished. */
  private adoptUnconfirmedJobs(): void {
    const kept = readUnconfirmedJobs(this.opts.journalDir, this.opts.queueShards);
    this.pump.adoptSentJobs(kept.jobs);
    if (kept.jobs.length > 0 || kept.skipped > 0)
      this.logger.info(
        { journalDir: this.opts.journalDir, jobs: kept.jobs.length, otherShardLayout: kept.skipped },
        'jobs a previous publisher sent are not yet seen finished: stored() waits for them',
      );
  }

  /** Takes the journal directory (throws PublisherConfigError if another live publisher owns it). */
  private openJournal(): SpillJournal {
    return new SpillJournal({
      dir: this.opts.journalDir,
      maxBytes: this.opts.maxJournalBytes,
      segmentBytes: this.opts.journalSegmentBytes,
      writeBytes: this.opts.journalWriteBytes,
      eventsPerRecord: this.opts.eventsPerJob,
      shards: this.opts.queueShards,
      logger: this.logger,
      onWriteLost: (events, err) => {
        this.counts.lostAfterAcceptance += events;
        this.drop(events, 'journal write failed', err);
      },
      onSynced: () => this.settleDurable(),
    });
  }

  /**
   * Checks, stamps and queues one event; see PublishResult. Synchronous, a few microseconds, and it
   * never throws: not for Redis, not for the disk, not for a bug of ours (reported as a rejection).
   */
  publish(input: PlanEventInput): PublishResult {
    try {
      return this.accept(input);
    } catch (err) {
      return this.reject(
        input,
        [violationAt('', `could not be published (${err instanceof Error ? err.name : 'error'})`)],
        'invalid',
      );
    }
  }

  private accept(input: PlanEventInput): PublishResult {
    if (this.closing !== undefined) return this.reject(input, CLOSED, 'closed');
    if (!isPlainObject(input)) return this.reject(input, [violationAt('', 'must be a JSON object')], 'invalid');
    const event = this.stamper.stamp(input);
    const json = this.opts.validation === 'fast' ? this.checkFast(input, event) : this.checkContract(event);
    if (typeof json !== 'string') return this.reject(input, json, 'invalid');
    // A UTF-16 unit is at most 3 UTF-8 bytes: only a large event needs its exact (costly) byte count.
    if (json.length * 3 > this.limits.maxEventBytes && Buffer.byteLength(json, 'utf8') > this.limits.maxEventBytes) {
      return this.reject(
        input,
        [violationAt('', `must be at most ${this.limits.maxEventBytes} bytes of UTF-8 JSON`)],
        'invalid',
      );
    }
    this.stamper.commit(event);
    const eventId = event.eventId as string;
    const seq = event.seq as number;
    return this.enqueue(json, shardOfPlan(event.planId as string, this.opts.queueShards))
      ? { ok: true, eventId, seq }
      : { ok: false, reason: 'dropped', eventId, seq, violations: [] };
  }

  protected publishTyped<T extends PlanEventTypeName>(
    type: T,
    plan: PlanRef,
    payload: PayloadByType[T],
    stamps?: EventStamps,
  ): PublishResult {
    return this.publish({
      type,
      planId: plan.planId,
      sessionId: plan.sessionId,
      payload,
      eventId: stamps?.eventId,
      seq: stamps?.seq,
      occurredAt: stamps?.occurredAt,
    } as PlanEventInput);
  }

  private checkFast(input: Record<string, unknown>, event: StampedEvent): string | Violation[] {
    const ctx = this.checkContext;
    ctx.out.length = 0;
    checkEventInput(input, ctx, event as unknown as Record<string, unknown>);
    if (ctx.out.length > 0) return ctx.out.slice();
    try {
      // One flat string: what the memory bound counts is what the heap holds (a rope built by
      // concatenation would cost ~3x its length in cons cells while it waits).
      return JSON.stringify(event);
    } catch (err) {
      return [violationAt('', `could not be serialised (${(err as Error).name})`)];
    }
  }

  private checkContract(event: StampedEvent): string | Violation[] {
    const parsed = parsePlanEvent(event, { limits: this.limits });
    return parsed.ok ? JSON.stringify(parsed.event) : parsed.error.violations;
  }

  /**
   * Sends an event that was refused on its way in (`plan-ledger serve` refusing an event of a
   * batch) on to the worker, unchecked, through the same memory and journal as accepted events:
   * the worker dead-letters it with its reason and content, and voids its plan's seq so the plan's
   * later events do not wait for it. `json` is the event's JSON text, at most `maxEventBytes` of
   * UTF-8 (larger text is replaced by its identity fields, see `refusedStandIn`). False when the
   * publisher is closed or memory and journal are full (then counted as dropped and logged).
   */
  forwardRefused(json: string): boolean {
    if (this.closing !== undefined) return false;
    const event =
      Buffer.byteLength(json, 'utf8') > this.limits.maxEventBytes
        ? refusedStandIn(json, this.limits.maxEventBytes)
        : json;
    return this.enqueue(event, this.opts.queueShards > 1 ? shardOfJson(event, this.opts.queueShards) : 0);
  }

  /**
   * Memory while the journal is empty and memory has room; else behind the journal's backlog, in
   * order. Memory counts JSON text length (what the string costs the heap, and UTF-8 bytes for
   * ASCII); the journal counts exact UTF-8 bytes, as it writes them.
   */
  private enqueue(json: string, shard: number): boolean {
    const ticket = this.nextTicket;
    if (!this.journal.backlog && this.memory.fits(json.length)) {
      this.memory.push(json, shard, ticket);
    } else if (this.journal.append(json, Buffer.byteLength(json, 'utf8'), shard, ticket)) {
      this.counts.spilled++;
    } else {
      this.drop(1, 'spill journal full');
      return false;
    }
    this.nextTicket++;
    this.pump.schedule();
    return true;
  }

  /** Where the publisher stands now: pass it to `whenDurable` after publishing. */
  durabilityMark(): DurabilityMark {
    return { losses: this.lostAfterAcceptance() };
  }

  private lostAfterAcceptance(): number {
    return this.counts.lostAfterAcceptance + this.journal.syncFailures;
  }

  /**
   * Resolves once every event accepted before this call is durable: in Redis (its job added) or
   * written and fsynced in the spill journal; `lost` when an event accepted since `since` may have
   * been lost on its way (a failed journal write or fsync), `timeout` after `timeoutMs`. This is
   * what `plan-ledger serve` waits for before it answers 2xx. Waiting costs nothing per event: the
   * events leave memory as they would anyway (the next `addBulk`, or the group commit to the
   * journal while Redis is unreachable), and every request waiting meanwhile shares that round
   * trip or that fsync.
   */
  whenDurable(since: DurabilityMark, timeoutMs: number): Promise<Durability> {
    const ticket = this.nextTicket - 1;
    const outcome = (): Durability => (this.lostAfterAcceptance() > since.losses ? 'lost' : 'durable');
    if (ticket < this.lowestPendingTicket()) return Promise.resolve(outcome());
    this.pump.schedule();
    return new Promise((resolve) => {
      const waiter: DurableWaiter = {
        ticket,
        settle: () => {
          clearTimeout(waiter.timer);
          resolve(outcome());
        },
        timer: setTimeout(
          () => {
            this.durableWaiters = this.durableWaiters.filter((w) => w !== waiter);
            resolve('timeout');
          },
          Math.max(0, timeoutMs),
        ).unref(),
      };
      this.durableWaiters.push(waiter);
    });
  }

  /** The lowest ticket of an event not yet durable (in memory, in flight, or not yet fsynced). */
  private lowestPendingTicket(): number {
    return Math.min(
      this.memory.lowestTicket(),
      this.pump.lowestInFlightTicket(),
      this.journal.lowestUnsyncedTicket(),
      this.nextTicket,
    );
  }

  /** Resolves the waiters whose events are all durable now. */
  private settleDurable(): void {
    if (this.durableWaiters.length === 0) return;
    const lowest = this.lowestPendingTicket();
    const still: DurableWaiter[] = [];
    for (const waiter of this.durableWaiters) {
      if (waiter.ticket < lowest) waiter.settle();
      else still.push(waiter);
    }
    this.durableWaiters = still;
  }

  private drop(events: number, reason: string, err?: Error): void {
    this.counts.dropped += events;
    this.dropLog.note(events, {
      reason,
      err: err?.message,
      droppedTotal: this.counts.dropped,
      journalDir: this.opts.journalDir,
      maxJournalBytes: this.opts.maxJournalBytes,
    });
  }

  private reject(input: unknown, violations: Violation[], reason: 'invalid' | 'closed'): PublishResult {
    this.counts.rejected++;
    try {
      const record = isPlainObject(input) ? input : {};
      this.rejectLog.note(1, {
        reason,
        type: record.type,
        planId: record.planId,
        eventId: record.eventId,
        violations: violations.slice(0, 5).map((v) => v.message),
      });
      this.opts.onRejected?.(violations, input);
    } catch (err) {
      // A throwing callback (or a hostile getter on the input) must not make publish() throw.
      this.logger.warn({ err }, 'reporting a rejected event failed; ignored');
    }
    return { ok: false, reason, violations };
  }

  /**
   * Continues a plan started by an earlier process: the next event of `planId` stamped without a
   * `seq` gets `nextSeq` (from `workflows resume-point` or a session's active plan, `nextSeq`), so a
   * restarted executor never reuses a seq (a reused seq makes the worker rebuild the plan).
   * @throws RangeError when `nextSeq` is not a non-negative safe integer
   */
  continuePlan(plan: PlanRef | string, nextSeq: number): void {
    if (!Number.isSafeInteger(nextSeq) || nextSeq < 0)
      throw new RangeError(`nextSeq must be a non-negative integer, got ${String(nextSeq)}`);
    this.stamper.continueFrom(typeof plan === 'string' ? plan : plan.planId, nextSeq);
  }

  stats(): PublisherStats {
    return {
      published: this.pump.published,
      buffered: this.memory.count,
      spilled: this.counts.spilled,
      recovered: this.pump.recovered,
      dropped: this.counts.dropped,
      rejected: this.counts.rejected,
      journalBytes: this.journal.usedBytes,
      redisReady: this.link.healthy,
    };
  }

  /** Resolves true once every event accepted so far is in Redis (journal included), false after `timeoutMs`. */
  flush(timeoutMs = 10_000): Promise<boolean> {
    return this.pump.waitSettled(timeoutMs);
  }

  /**
   * Read your own writes: resolves true once every event accepted before the call is stored by a
   * worker (or dead-lettered: the worker acknowledges a job only after its transaction commits and
   * its dead letters are written), false after `timeoutMs`. First `flush()`, then waits until the
   * jobs that carried those events are finished, looking every 50 ms; while Redis is unreachable it
   * keeps waiting. A restarted executor calls it after its journal drained, before reading its
   * session back. It remembers the last 100,000 jobs sent; older ones count as finished. The jobs
   * a closed publisher had not seen finished are kept in its `journalDir`, and the next publisher on
   * it waits for them too: process A publishes and closes, process B's `stored()` covers A's events.
   */
  async stored(timeoutMs = 30_000): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    if (!(await this.pump.waitSettled(timeoutMs))) return false;
    let pending = this.pump.sentJobList();
    for (;;) {
      try {
        const unfinished = new Set<string>();
        for (let i = 0; i < pending.length; i += 1_000)
          for (const id of await this.link.unfinishedJobs(pending.slice(i, i + 1_000))) unfinished.add(id);
        this.pump.forgetJobs(pending.filter((job) => !unfinished.has(job.id)).map((job) => job.id));
        pending = pending.filter((job) => unfinished.has(job.id));
      } catch {
        // Redis unreachable or a command failed: look again
      }
      if (pending.length === 0) return true;
      if (Date.now() + STORED_POLL_MS > deadline || this.closing !== undefined) return false;
      await new Promise((resolve) => setTimeout(resolve, STORED_POLL_MS));
    }
  }

  /**
   * Stops accepting events, waits up to `timeoutMs` for them to reach Redis, writes what is left in
   * memory to the journal (drained by the next publisher on the same directory), closes the
   * connection and the journal. Idempotent: later calls return the first call's result.
   */
  close(timeoutMs = 10_000): Promise<CloseResult> {
    this.closing ??= this.shutdown(timeoutMs);
    return this.closing;
  }

  private async shutdown(timeoutMs: number): Promise<CloseResult> {
    const deadline = Date.now() + timeoutMs;
    const flushed = await this.pump.waitSettled(timeoutMs);
    let spilledAtClose = 0;
    for (const batch of this.pump.stop()) {
      if (this.journal.appendBatch(batch.id, batch.events, batch.shard, batch.firstTicket))
        spilledAtClose += batch.events.length;
      else {
        this.counts.lostAfterAcceptance += batch.events.length;
        this.drop(batch.events.length, 'spill journal full at close');
      }
    }
    this.counts.spilled += spilledAtClose;
    try {
      writeUnconfirmedJobs(this.opts.journalDir, this.pump.sentJobList(), this.opts.queueShards);
    } catch (err) {
      this.logger.warn(
        { err, journalDir: this.opts.journalDir },
        'the ids of jobs not yet seen finished could not be kept; the next publisher will not wait for them in stored()',
      );
    }
    await this.link.close(Math.max(deadline - Date.now(), 1_000));
    await this.journal.close(Math.max(deadline - Date.now(), 1_000));
    this.settleDurable();
    this.dropLog.flush();
    this.rejectLog.flush();
    this.metrics?.remove();
    this.logger.info({ flushed, spilledAtClose, ...this.stats() }, 'publisher closed');
    return { flushed, spilledAtClose };
  }
}

interface DurableWaiter {
  /** Resolved once every event up to this ticket is durable. */
  ticket: number;
  settle: () => void;
  timer: NodeJS.Timeout;
}

/** The shard of an event given as JSON text: its plan id's, or 0 when it has none (it is dead-lettered). */
function shardOfJson(json: string, shards: number): number {
  try {
    const planId = (JSON.parse(json) as { planId?: unknown } | null)?.planId;
    return typeof planId === 'string' ? shardOfPlan(planId, shards) : 0;
  } catch {
    return 0;
  }
}

/** The envelope's fields but its payload: what a refused event's stand-in keeps. */
const IDENTITY_FIELDS = Object.keys(ENVELOPE.fields).filter((key) => key !== 'payload');

/**
 * What is forwarded of a refused event too large for a job's share: its identity fields (each a
 * short string or a number, so the worker can dead-letter it under its plan and void its seq) and
 * a payload saying what was left out. The worker refuses the stand-in too (its payload breaks the
 * contract); the dead letter then shows the note.
 */
export function refusedStandIn(json: string, maxEventBytes: number): string {
  let event: unknown;
  try {
    event = JSON.parse(json);
  } catch {
    event = undefined;
  }
  const source = isPlainObject(event) ? event : {};
  const standIn: Record<string, unknown> = {};
  for (const key of IDENTITY_FIELDS) {
    const value = source[key];
    if (typeof value === 'number' || (typeof value === 'string' && value.length <= 256)) standIn[key] = value;
  }
  standIn.payload = `omitted by plan-ledger: the event was ${Buffer.byteLength(json, 'utf8')} bytes of JSON, over the limit of ${maxEventBytes}`;
  return JSON.stringify(standIn);
}
