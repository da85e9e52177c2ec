import type { Job, Queue, Worker } from 'bullmq';
import type { DataSource } from 'typeorm';
import type { RedisClient } from '../queue/connect-redis';
import { DEFAULT_STALL_AFTER_MS } from '../store/apply/plan-applier';
import { STALL_CHECK_QUEUE } from '../queue/queue-names';
import type { Logger } from '../shared/logger';
import { startScheduledQueue } from '../queue/scheduled-queue';
import { expireApprovals } from './approval-expiry';
import { markStalledPlans, StallCheckResult, subscriptionsOnce, watchUnwatchedPlans } from './stall-check';

/** The scheduler's id on STALL_CHECK_QUEUE: one per cluster, whoever upserts it. */
export const STALL_SCHEDULER_ID = 'stall-check';
/** Name of the jobs it produces. */
export const STALL_CHECK_JOB = 'stall-check';

export interface StallSchedulerOptions {
  /** An ioredis client owned by the caller, with `maxRetriesPerRequest: null` (close() leaves it open). */
  connection: RedisClient;
  /** BullMQ key prefix: config.queuePrefix. */
  prefix: string;
  /** An open, migrated DataSource owned by the caller. */
  dataSource: DataSource;
  /** STALL_CHECK_EVERY in ms; null removes the scheduler (no check runs anywhere) and starts no worker. */
  everyMs: number | null;
  logger?: Logger;
  /**
   * STALL_AFTER in ms: the deadline of a plan with none of its own, for the running plans the check
   * finds unwatched (watchUnwatchedPlans). @defaultValue DEFAULT_STALL_AFTER_MS
   */
  stallAfterMs?: number;
  /** Called with what each check did, once it has committed, and the id of the tick's job. */
  onChecked?: (result: StallTickResult, jobId: string | undefined) => void;
  /** Longest close() waits for a running check. @defaultValue 5000 */
  closeTimeoutMs?: number;
}

/** What one tick did: the plans it marked stalled, the approvals it found expired, the plans it began to watch. */
export interface StallTickResult extends StallCheckResult {
  expiredApprovalIds: string[];
  watchedPlanIds: string[];
}

export interface StallScheduler {
  readonly queue: Queue;
  readonly worker: Worker | null;
  /** Closes this process's worker and queue; the scheduler stays in Redis for the other workers. */
  close(): Promise<void>;
}

/**
 * Upserts the stall check's job scheduler (every `everyMs`) on STALL_CHECK_QUEUE and runs a Worker
 * for its jobs, as the retention scheduler does on the maintenance queue: every worker process may
 * call it, upserting is idempotent and BullMQ keeps one delayed job per scheduler, so each tick
 * runs once cluster-wide, on whichever worker takes it. A failed check is not retried: the next
 * tick does the same work.
 */
export async function startStallScheduler(options: StallSchedulerOptions): Promise<StallScheduler> {
  const { connection, prefix, everyMs, logger, dataSource } = options;
  // until one tick found none left: plans running before the StalledPlans migration get a due time
  let unwatchedLeft = true;
  const run = async (job: Job): Promise<{ marked: number; expired: number; watched: number; complete: boolean }> => {
    let watchedPlanIds: string[] = [];
    if (unwatchedLeft) {
      const watched = await watchUnwatchedPlans(dataSource, options.stallAfterMs ?? DEFAULT_STALL_AFTER_MS);
      unwatchedLeft = !watched.complete;
      watchedPlanIds = watched.planIds;
      if (watchedPlanIds.length > 0)
        logger?.info({ plans: watchedPlanIds.length }, 'running plans without a stall due time now watched');
    }
    const subscriptions = subscriptionsOnce(dataSource, {});
    const stalled = await markStalledPlans(dataSource, { subscriptions });
    if (stalled.planIds.length > 0)
      logger?.info(
        { plans: stalled.planIds.length, planIds: stalled.planIds.slice(0, 20), complete: stalled.complete },
        'plans stalled: no event within their deadline',
      );
    const expired = await expireApprovals(dataSource, { subscriptions });
    if (expired.approvalIds.length > 0)
      logger?.info(
        { approvals: expired.approvalIds.length, approvalIds: expired.approvalIds.slice(0, 20) },
        'approvals expired undecided',
      );
    const result: StallTickResult = {
      planIds: stalled.planIds,
      complete: stalled.complete && expired.complete,
      expiredApprovalIds: expired.approvalIds,
      watchedPlanIds,
    };
    options.onChecked?.(result, job.id);
    return {
      marked: result.planIds.length,
      expired: result.expiredApprovalIds.length,
      watched: watchedPlanIds.length,
      complete: result.complete,
    };
  };
  const scheduled = await startScheduledQueue({
    queueName: STALL_CHECK_QUEUE,
    schedulerId: STALL_SCHEDULER_ID,
    jobName: STALL_CHECK_JOB,
    label: 'stall check',
    queueLabel: 'stall-check',
    connection,
    prefix,
    repeat: everyMs === null ? null : { every: everyMs },
    jobOptions: { removeOnComplete: { count: 10 }, removeOnFail: { count: 50 } },
    offReason: 'STALL_CHECK_EVERY=off',
    run,
    onFailed: (job, err) => logger?.warn({ jobId: job?.id, err }, 'stall check failed; the next tick retries'),
    logger,
  });
  const closeTimeoutMs = options.closeTimeoutMs ?? 5_000;
  return { queue: scheduled.queue, worker: scheduled.worker, close: () => scheduled.close(closeTimeoutMs) };
}
