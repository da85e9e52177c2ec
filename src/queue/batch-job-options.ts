import type { JobsOptions } from 'bullmq';

/**
 * Job options of every batch job on EVENTS_QUEUE: the publisher's, and `dlq replay`'s, so a
 * replayed event is treated exactly like a live one. `attempts`/`backoff` are a generous budget
 * for the worker's transient failures (the worker may replace the backoff with its own strategy).
 * A completed job is removed at once: its events are in the database, and keeping its data (500
 * events) only fills Redis, which at `maxmemory` refuses the worker's moves too. Failed ones are
 * kept for the dead-letter tools. The cost: a batch resent after its job completed (a lost addBulk
 * reply) runs again, as duplicates the worker's eventId idempotency turns into no-ops.
 */
export const DEFAULT_JOB_OPTIONS: Readonly<JobsOptions> = Object.freeze({
  attempts: 50,
  backoff: { type: 'exponential', delay: 1_000 },
  removeOnComplete: true,
  removeOnFail: false,
});
