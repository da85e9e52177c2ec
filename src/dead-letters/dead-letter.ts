import type { Violation } from '../contracts';

/**
 * Why an event was dead-lettered.
 * - `invalid`: it breaks the event contract; never retried (replaying it unchanged fails again).
 * - `retries-exhausted`: a transient failure (database down, deadlock) outlasted the retry budget.
 * - `unprocessable`: valid, but the database refused it for good (e.g. a value too long for a column).
 * - `conflict`: its id is already stored for another event (other plan, type, seq, time or payload):
 *   a producer reusing an id. The message names the stored event; replaying it conflicts again.
 */
export type DeadLetterKind = 'invalid' | 'retries-exhausted' | 'unprocessable' | 'conflict';

export const DEAD_LETTER_KINDS: readonly DeadLetterKind[] = [
  'invalid',
  'retries-exhausted',
  'unprocessable',
  'conflict',
];

/**
 * One dead letter, stored as the data of a job on DEAD_LETTER_QUEUE (job name = kind, job id = id).
 * The event is kept verbatim, as it arrived, so a replay sends exactly what the executor sent.
 */
export interface DeadLetter {
  /** `dl-<uuid>`; also the BullMQ job id on the dead-letter queue. */
  id: string;
  kind: DeadLetterKind;
  /** The event exactly as received (possibly malformed). */
  event: unknown;
  /** Copied out of the event when present, for filtering without parsing it. */
  eventId: string | null;
  type: string | null;
  planId: string | null;
  sessionId: string | null;
  error: {
    message: string;
    stack?: string;
    /** Contract violations, for `invalid`. */
    violations?: Violation[];
    /** Driver error code (e.g. ECONNREFUSED, 40P01), for database failures. */
    code?: string;
  };
  /** Delivery attempts of the source job when it was dead-lettered. */
  attempts: number;
  /** ISO-8601 UTC. */
  firstFailedAt: string;
  lastFailedAt: string;
  source: { queue: string; jobId: string };
  /** package.json version of the worker that dead-lettered it. */
  workerVersion: string;
  /** How many times this event was replayed from the dead-letter queue before landing here again. */
  replayCount: number;
}
