import { createHash } from 'node:crypto';
import { Queue } from 'bullmq';
import type { ConnectionOptions } from 'bullmq';
import type { Violation } from '../contracts';
import { DEAD_LETTER_QUEUE } from '../queue/queue-names';
import type { DeadLetter, DeadLetterKind } from './dead-letter';
import { addRawJobs, RawJobData } from '../queue/raw-batch-queue';
import { encodeDeadLetter } from './dead-letter-codec';
import { DeadLetterRepository } from './dead-letter.repository';

/** Where a dead-lettered event came from and how hard it was tried. */
export interface DeadLetterProvenance {
  /** Queue of the source job (EVENTS_QUEUE). */
  queue: string;
  /** BullMQ key prefix; part of the id so two deployments on one Redis never collide. */
  prefix: string;
  jobId: string;
  /** Position of the event in the source job's `events`. */
  index: number;
  attempts: number;
  firstFailedAt: Date;
  lastFailedAt: Date;
  workerVersion: string;
  replayCount: number;
}

export interface DeadLetterReason {
  message: string;
  stack?: string;
  violations?: Violation[];
  code?: string;
}

/**
 * `dl-<uuid>` derived from (prefix, queue, job id, event position, replay count): a job that is
 * delivered again after a crash writes the same id, and BullMQ ignores a duplicate job id, so a
 * redelivery never doubles a dead letter. A replayed event lives in a new job, hence a new id.
 */
export function deadLetterId(
  p: Pick<DeadLetterProvenance, 'prefix' | 'queue' | 'jobId' | 'index' | 'replayCount'>,
): string {
  const h = createHash('sha256')
    .update(`${p.prefix}\n${p.queue}\n${p.jobId}\n${p.index}\n${p.replayCount}`)
    .digest('hex');
  // RFC 9562 layout, version 8 (custom), variant 10xx
  const variant = ((parseInt(h[16], 16) & 0x3) | 0x8).toString(16);
  return `dl-${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

function field(event: unknown, name: string): string | null {
  if (typeof event !== 'object' || event === null || Array.isArray(event)) return null;
  const value = (event as Record<string, unknown>)[name];
  return typeof value === 'string' ? value.slice(0, 200) : null;
}

/** Builds the stored record; the event is kept verbatim so a replay sends what the executor sent. */
export function buildDeadLetter(
  kind: DeadLetterKind,
  event: unknown,
  reason: DeadLetterReason,
  p: DeadLetterProvenance,
): DeadLetter {
  const error: DeadLetter['error'] = { message: reason.message };
  if (reason.stack) error.stack = reason.stack;
  if (reason.violations) error.violations = reason.violations;
  if (reason.code) error.code = reason.code;
  return {
    id: deadLetterId(p),
    kind,
    event,
    eventId: field(event, 'eventId'),
    type: field(event, 'type'),
    planId: field(event, 'planId'),
    sessionId: field(event, 'sessionId'),
    error,
    attempts: p.attempts,
    firstFailedAt: p.firstFailedAt.toISOString(),
    lastFailedAt: p.lastFailedAt.toISOString(),
    source: { queue: p.queue, jobId: p.jobId },
    workerVersion: p.workerVersion,
    replayCount: p.replayCount,
  };
}

/**
 * Appends dead letters to `queue` (DEAD_LETTER_QUEUE; job name = kind, job id = letter id), all
 * of one call in one atomic `addBulk`, then their summaries beside them.
 */
export async function writeDeadLetters(queue: Queue, letters: readonly DeadLetter[]): Promise<void> {
  if (letters.length === 0) return;
  // each record laid out with its event last (encodeDeadLetter), so a replay can cut it out
  const encoded = letters.map((letter) => encodeDeadLetter(letter));
  await addRawJobs(
    queue,
    letters.map((letter, i) => ({
      name: letter.kind,
      data: new RawJobData(encoded[i].bytes),
      // Kept until `dlq purge` / `dlq replay` removes them: the dead-letter queue is a store.
      opts: { jobId: letter.id, removeOnComplete: false, removeOnFail: false },
    })),
  );
  // then its summary beside it, so that listings and stats never decode the event: a crash in
  // between leaves entries without one, which readers decode as before (and a replay parses)
  await new DeadLetterRepository(queue).addSummaries(
    letters.map((letter, i) => ({
      id: letter.id,
      bytes: encoded[i].bytes.length,
      replayField: encoded[i].replayField,
    })),
  );
}

/**
 * The worker's writer: its own Queue on DEAD_LETTER_QUEUE. Nothing consumes that queue: the jobs
 * wait there for `dlq` commands.
 */
export class DeadLetterWriter {
  private readonly queue: Queue;

  /** `connection` may be a shared ioredis instance (left open by close()) or connection options. */
  constructor(connection: ConnectionOptions, prefix: string) {
    this.queue = new Queue(DEAD_LETTER_QUEUE, { connection, prefix });
    // Errors surface on the awaited addBulk; this only keeps the emitter from throwing.
    this.queue.on('error', () => undefined);
  }

  async write(letters: DeadLetter[]): Promise<void> {
    await writeDeadLetters(this.queue, letters);
  }

  async close(): Promise<void> {
    await this.queue.close();
  }
}
