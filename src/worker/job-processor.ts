import { DelayedError, Job } from 'bullmq';
import { checkStoredEvent, PlanEvent } from '../contracts';
import type { DeadLetter, DeadLetterKind } from '../dead-letters/dead-letter';
import { buildDeadLetter, DeadLetterReason } from '../dead-letters/dead-letter-writer';
import type { WorkerMetrics } from './worker-metrics';
import type { EventBatchJobData } from '../queue/queue-names';
import { pushAll } from '../shared/arrays';
import type { Logger } from '../shared/logger';
import { dbErrorCode, standingFault } from '../store/db-errors';
import { EventConflictError } from '../store/ledger/event-conflict';
import { refusedSeqOf, voidedSeqEvent } from '../store/projection/voided-seq';
import { BackoffPolicy, backoffDelay, sleep } from '../shared/backoff';
import type { JobWriteOutcome } from './batch-writer';
import type { DatabaseGate } from './database-gate';
import type { MicroBatcher } from './micro-batcher';
import { isUnreadableJobData } from './unreadable-job';

/**
 * The events queue's job data (EventBatchJobData, which documents the worker's `failingSince`), or
 * what the worker puts in place of data that is not JSON (UnreadableJobData, see events-worker.ts).
 */
export type WorkerJobData = EventBatchJobData;

/** The only job envelope version this worker reads (EventBatchJobData.v). */
const ENVELOPE_VERSION = 1;

/** The processor's return value, stored by BullMQ as the job's result. */
export interface JobSummary {
  events: number;
  inserted: number;
  duplicates: number;
  deadLettered: number;
}

export interface JobProcessorDeps {
  batcher: Pick<MicroBatcher<PlanEvent, JobWriteOutcome>, 'submit'>;
  writeDeadLetters(letters: DeadLetter[]): Promise<void>;
  gate: Pick<DatabaseGate, 'whenUp'>;
  metrics: WorkerMetrics;
  logger: Logger;
  queueName: string;
  prefix: string;
  workerVersion: string;
  retryBudgetMs: number;
  backoff: BackoffPolicy;
  /** Aborted when the worker closes: retry waits end and the job is handed back to the queue. */
  closing: AbortSignal;
  /** Told each job's event count as it starts (adaptive concurrency). */
  onJobStart?(events: number): void;
}

interface Indexed {
  index: number;
  raw: unknown;
}

type Write =
  | { done: true; outcome: JobWriteOutcome; tries: number }
  | { done: false; error: unknown; tries: number; firstFailedAt: number };

/** A valid event of the job, with where it came from. */
type ValidEvent = Indexed & { event: PlanEvent };

/** Why, and how long, an event failed before it was dead-lettered. */
interface Failure {
  reason: DeadLetterReason;
  attempts: number;
  firstFailedAt: Date;
}

/**
 * Processes one EVENTS_QUEUE job: validates each event, dead-letters the invalid ones at once,
 * hands the valid ones to the micro-batcher and returns only after their commit, which is when
 * BullMQ acknowledges the job. Transient failures are retried here, inside the job, with
 * exponential backoff and jitter, until the retry budget (time since the first failure) is
 * spent; the job then ends with its events dead-lettered as `retries-exhausted`, written
 * before the job completes so a crash in between loses nothing (the redelivery rewrites the
 * same dead-letter ids). A standing fault (a missing table, a permission denied: see
 * db-errors.ts) spends no budget: the job retries until an operator repairs the database, while
 * the database gate keeps the worker from fetching more.
 */
export function createJobProcessor(deps: JobProcessorDeps) {
  const processor = new JobProcessor(deps);
  return (job: Job<WorkerJobData>, token?: string): Promise<JobSummary> => processor.process(job, token);
}

/** The stages of createJobProcessor's function, one method each. */
class JobProcessor {
  constructor(private readonly deps: JobProcessorDeps) {}

  async process(job: Job<WorkerJobData>, token?: string): Promise<JobSummary> {
    const { deps } = this;
    const started = performance.now();
    deps.onJobStart?.(Array.isArray(job.data?.events) ? job.data.events.length : 1);
    const { valid, invalid } = validate(job.data);
    const deadLetters = invalid.map(({ raw, index, reason }) =>
      this.letter(
        job,
        'invalid',
        { raw, index },
        { reason, attempts: job.attemptsStarted || 1, firstFailedAt: new Date() },
      ),
    );
    await deps.writeDeadLetters(deadLetters);
    let outcome: JobWriteOutcome = { inserted: 0, duplicates: 0, refused: [] };
    // the seqs of the invalid events are voided in the same transaction as the valid events
    const voided = voidsOf(deadLetters);
    if (valid.length > 0 || voided.length > 0) {
      const write = await this.writeWithRetry(job, [...valid.map((v) => v.event), ...voided]);
      if (!write.done) {
        if (deps.closing.aborted) return this.release(job, token);
        pushAll(deadLetters, await this.exhausted(job, { write, valid, voided }));
      } else {
        outcome = write.outcome;
        pushAll(deadLetters, await this.refused(job, write, valid));
      }
    }
    for (const dl of deadLetters) deps.metrics.deadLettered.inc({ kind: dl.kind, type: dl.type ?? 'unknown' });
    const summary: JobSummary = {
      events: valid.length + invalid.length,
      inserted: outcome.inserted,
      duplicates: outcome.duplicates,
      deadLettered: deadLetters.length,
    };
    deps.logger.debug(
      { jobId: job.id, attempt: job.attemptsStarted, ...summary, durationMs: Math.round(performance.now() - started) },
      'job done',
    );
    return summary;
  }

  /** The retry budget is spent: the valid events are dead-lettered and every seq of the job voided. */
  private async exhausted(
    job: Job<WorkerJobData>,
    failed: { write: Write & { done: false }; valid: ValidEvent[]; voided: PlanEvent[] },
  ): Promise<DeadLetter[]> {
    const { write, valid, voided } = failed;
    const reason = reasonOf(write.error, 'retries exhausted');
    const attempts = (job.attemptsStarted || 1) - 1 + write.tries;
    const firstFailedAt = new Date(write.firstFailedAt);
    const exhausted = valid.map((v) => this.letter(job, 'retries-exhausted', v, { reason, attempts, firstFailedAt }));
    await this.deps.writeDeadLetters(exhausted);
    await this.recordVoids(job, [...voided, ...voidsOf(exhausted)], false);
    return exhausted;
  }

  /** The events the database refused in a committed write (conflicts, unprocessable) are dead-lettered. */
  private async refused(
    job: Job<WorkerJobData>,
    write: Write & { done: true },
    valid: ValidEvent[],
  ): Promise<DeadLetter[]> {
    const { deps } = this;
    // by the event object, not its id: two copies of one id (a conflict) are two letters
    const sourceOf = new Map(valid.map((v) => [v.event, v]));
    const refused: DeadLetter[] = [];
    for (const { event, error } of write.outcome.refused) {
      const source = sourceOf.get(event);
      if (!source) {
        deps.logger.warn(
          { jobId: job.id, planId: event.planId, seq: event.seq, err: error },
          'recording a voided seq failed; the plan waits for the gap timeout instead',
        );
        continue;
      }
      const kind = error instanceof EventConflictError ? 'conflict' : 'unprocessable';
      if (kind === 'conflict') deps.metrics.eventConflicts.inc();
      const reason = reasonOf(error, 'refused by the database');
      refused.push(this.letter(job, kind, source, { reason, attempts: write.tries, firstFailedAt: new Date() }));
    }
    await deps.writeDeadLetters(refused);
    await this.recordVoids(job, voidsOf(refused), true);
    return refused;
  }

  /**
   * Voids the seqs of events dead-lettered after their job's write (the write's own transaction
   * voided the invalid ones). With `retry`, within the retry budget; without (the database has
   * just failed for a whole budget), one try. A failure only costs the gap timeout: logged.
   */
  private async recordVoids(job: Job<WorkerJobData>, voided: PlanEvent[], retry: boolean): Promise<void> {
    const { deps } = this;
    if (voided.length === 0) return;
    try {
      const write = retry
        ? await this.writeWithRetry(job, voided)
        : { done: true as const, outcome: await deps.batcher.submit(`${job.id}:voids`, voided), tries: 1 };
      if (write.done && write.outcome.refused.length === 0) return;
      const error = write.done ? write.outcome.refused[0].error : write.error;
      deps.logger.warn(
        { jobId: job.id, seqs: voided.length, err: error },
        'recording voided seqs failed; their plans wait for the gap timeout instead',
      );
    } catch (err) {
      deps.logger.warn(
        { jobId: job.id, seqs: voided.length, err },
        'recording voided seqs failed; their plans wait for the gap timeout instead',
      );
    }
  }

  private letter(job: Job<WorkerJobData>, kind: DeadLetterKind, source: Indexed, failure: Failure): DeadLetter {
    const { deps } = this;
    const { raw, index } = source;
    const { reason, attempts, firstFailedAt } = failure;
    const dl = buildDeadLetter(kind, raw, reason, {
      queue: deps.queueName,
      // the job's own prefix: with QUEUE_SHARDS it names the shard the job came from
      prefix: job.prefix || deps.prefix,
      jobId: String(job.id),
      index,
      attempts,
      firstFailedAt,
      lastFailedAt: new Date(),
      workerVersion: deps.workerVersion,
      replayCount: job.data?.replayCounts?.[index] ?? 0,
    });
    deps.logger.warn(
      {
        jobId: job.id,
        eventId: dl.eventId,
        planId: dl.planId,
        attempt: attempts,
        kind,
        deadLetterId: dl.id,
        reason: reason.message,
      },
      'event dead-lettered',
    );
    return dl;
  }

  private async writeWithRetry(job: Job<WorkerJobData>, events: PlanEvent[]): Promise<Write> {
    const { deps } = this;
    const stored = job.data.failingSince ? Date.parse(job.data.failingSince) : NaN;
    let firstFailedAt = Number.isFinite(stored) ? stored : undefined;
    for (let tries = 1; ; tries++) {
      try {
        return { done: true, outcome: await deps.batcher.submit(String(job.id), events), tries };
      } catch (error) {
        if (standingFault(error)) {
          // the same for every event: no reason to give up on these; the gate has paused fetching
          await sleep(backoffDelay(tries, deps.backoff), deps.closing);
          if (deps.closing.aborted) return { done: false, error, tries, firstFailedAt: firstFailedAt ?? Date.now() };
          continue;
        }
        const now = Date.now();
        if (firstFailedAt === undefined) {
          firstFailedAt = now;
          // Best effort: the budget then survives a crash or a shutdown in the middle of an outage.
          void job.updateData({ ...job.data, failingSince: new Date(now).toISOString() }).catch(() => undefined);
        }
        const deadline = firstFailedAt + deps.retryBudgetMs;
        if (now >= deadline || deps.closing.aborted) return { done: false, error, tries, firstFailedAt };
        await sleep(Math.min(backoffDelay(tries, deps.backoff), deadline - now), deps.closing);
        await deps.gate.whenUp(deadline, deps.closing);
        if (deps.closing.aborted) return { done: false, error, tries, firstFailedAt };
      }
    }
  }

  /**
   * Shutdown during retries: hand the job back (delayed, attempt not counted) so another worker,
   * or this one restarted, picks it up; its `failingSince` keeps the budget running.
   */
  private async release(job: Job<WorkerJobData>, token: string | undefined): Promise<never> {
    this.deps.logger.warn(
      { jobId: job.id, attempt: job.attemptsStarted },
      'worker closing during retries: job handed back to the queue',
    );
    await job.moveToDelayed(Date.now() + this.deps.backoff.baseMs, token).catch(() => undefined);
    throw new DelayedError();
  }
}

function validate(data: WorkerJobData | undefined) {
  const valid: ValidEvent[] = [];
  const invalid: (Indexed & { reason: DeadLetterReason })[] = [];
  const refuse = envelopeProblem(data);
  if (refuse) {
    invalid.push({
      raw: refuse.raw,
      index: 0,
      reason: { message: refuse.message, violations: [{ path: '', message: refuse.message }] },
    });
    return { valid, invalid };
  }
  data!.events.forEach((raw, index) => {
    // parsePlanEvent's exact verdict at a fraction of its CPU: the biggest per-event item of the worker.
    const parsed = checkStoredEvent(raw);
    if (parsed.ok) valid.push({ raw, index, event: parsed.event });
    else invalid.push({ raw, index, reason: { message: parsed.error.message, violations: parsed.error.violations } });
  });
  return { valid, invalid };
}

/**
 * Why a job cannot be read as a batch of events at all, with what to dead-letter (one letter for
 * the whole job): data that is not JSON (its raw text), not an EventBatchJobData, or of an envelope
 * version this worker does not know. Reading a `v: 2` job as v1 could store fields with another
 * meaning; it waits in the dead-letter queue for a worker that knows it (`dlq replay`).
 */
function envelopeProblem(data: unknown): { raw: unknown; message: string } | undefined {
  if (isUnreadableJobData(data)) return { raw: data.unreadable.text, message: data.unreadable.message };
  const batch = data as Partial<EventBatchJobData> | undefined;
  if (!Array.isArray(batch?.events))
    return { raw: data, message: 'job data is not an EventBatchJobData: expected { v: 1, events: [...] }' };
  if (batch.v !== ENVELOPE_VERSION) {
    return {
      raw: data,
      message: `job envelope version v=${JSON.stringify(batch.v) ?? 'undefined'} is not supported: this worker reads v: ${ENVELOPE_VERSION} only`,
    };
  }
  return undefined;
}

/** The voided seqs of dead-lettered events whose plan, session and seq can be read (voided-seq.ts). */
function voidsOf(letters: DeadLetter[]): PlanEvent[] {
  const voided: PlanEvent[] = [];
  const at = new Date();
  for (const dl of letters) {
    const ref = refusedSeqOf(dl.event);
    if (ref) voided.push(voidedSeqEvent(ref, dl.kind, dl.id, at));
  }
  return voided;
}

function reasonOf(err: unknown, fallback: string): DeadLetterReason {
  const e = err as { message?: string; stack?: string } | undefined;
  return { message: e?.message || fallback, stack: e?.stack, code: dbErrorCode(err) };
}
