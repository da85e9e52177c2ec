/**
 * Names shared by the publisher, the worker, the dead-letter tools and the scheduler. Every Redis
 * key is `<QUEUE_PREFIX>:<queue name>:...`; on Redis Cluster use a hash-tag prefix such as
 * `{plan-ledger}` so all of a queue's keys land in one slot.
 */
export const EVENTS_QUEUE = 'plan-events';
export const DEAD_LETTER_QUEUE = 'plan-events-dead';
export const MAINTENANCE_QUEUE = 'plan-ledger-maintenance';
/** The stall check's job scheduler (its own queue: a long retention run never delays a tick). */
export const STALL_CHECK_QUEUE = 'plan-ledger-stall-check';

/** Job name of a batch of events on EVENTS_QUEUE. */
export const EVENT_BATCH_JOB = 'events';

/**
 * The data of one EVENTS_QUEUE job: several events, so one Redis round trip carries many.
 * Each event is validated and dead-lettered on its own by the worker; a bad one never takes its
 * neighbours down with it. `v` versions this job shape (the events carry their own specVersion).
 */
export interface EventBatchJobData {
  v: 1;
  events: unknown[];
  /**
   * Set by `dlq replay` only: replayCounts[i] is how often events[i] has been replayed from the
   * dead-letter queue, so a dead letter written again carries the count raised by one.
   */
  replayCounts?: number[];
  /**
   * Written by the worker on a job's first transient failure (ISO-8601): the retry budget counts
   * from here, and keeping it in the job makes the budget survive worker restarts.
   */
  failingSince?: string;
}
