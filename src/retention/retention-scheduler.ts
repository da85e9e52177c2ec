import type { Queue, Worker } from 'bullmq';
import type { DataSource } from 'typeorm';
import { createRedis, RedisClient } from '../queue/connect-redis';
import { MAINTENANCE_QUEUE } from '../queue/queue-names';
import { startScheduledQueue } from '../queue/scheduled-queue';
import type { ClusterSeeds } from '../config/redis-cluster-nodes';
import type { Logger } from '../shared/logger';
import type { RetentionPolicy } from './retention-config';
import type { RetentionReport } from './retention-report';
import { runRetention } from './retention.service';

/** The scheduler's id on MAINTENANCE_QUEUE: one per cluster, whoever upserts it. */
export const RETENTION_SCHEDULER_ID = 'retention';
/** Name of the jobs it produces. */
export const RETENTION_JOB = 'retention';

export interface RetentionSchedulerOptions {
  /**
   * An ioredis client owned by the caller, with `maxRetriesPerRequest: null`. @defaultValue one opened from
   * `redisUrl`, closed by close()
   */
  connection?: RedisClient;
  /** Used when `connection` is not given. @defaultValue none: one of the two is required */
  redisUrl?: string;
  /** REDIS_CLUSTER_NODES: with `redisUrl`, the connection it opens is a Cluster. @defaultValue null */
  redisClusterNodes?: ClusterSeeds | null;
  /** BullMQ key prefix: config.queuePrefix. */
  prefix: string;
  /** An open, migrated DataSource owned by the caller (close() leaves it open). */
  dataSource: DataSource;
  policy: Readonly<RetentionPolicy>;
  logger?: Logger;
  /** Process the scheduled jobs in this process too; false only upserts the scheduler. @defaultValue true */
  runWorker?: boolean;
  /** Longest close() waits for a running retention batch to end before abandoning it. @defaultValue 10000 */
  closeTimeoutMs?: number;
}

export interface RetentionScheduler {
  readonly queue: Queue;
  readonly worker: Worker | null;
  /**
   * Stops the running retention pass (between batches), closes the worker, the queue and any connection it opened.
   * The scheduler stays in Redis for the other workers.
   */
  close(): Promise<void>;
}

/**
 * Upserts the retention job scheduler (cron RETENTION_CRON, UTC) on MAINTENANCE_QUEUE and runs a
 * Worker that runs retention for each of its jobs. Every worker process may call it: upserting is
 * idempotent and BullMQ keeps exactly one delayed job per scheduler, so each tick runs once
 * cluster-wide, on whichever worker takes the job. A failed run is retried (3 attempts, 1 min
 * then 2 min apart); an unfinished one is continued by the next tick. With `policy.cron` null
 * (RETENTION_CRON=off) the scheduler is removed and no worker starts.
 */
export async function startRetentionScheduler(options: RetentionSchedulerOptions): Promise<RetentionScheduler> {
  const { prefix, policy, logger, dataSource } = options;
  if (!options.connection && !options.redisUrl && !options.redisClusterNodes)
    throw new Error('startRetentionScheduler needs a connection, a redisUrl or redisClusterNodes');
  const scheduled = await startScheduledQueue({
    queueName: MAINTENANCE_QUEUE,
    schedulerId: RETENTION_SCHEDULER_ID,
    jobName: RETENTION_JOB,
    label: 'retention',
    queueLabel: 'maintenance',
    connection:
      options.connection ??
      createRedis({ redisUrl: options.redisUrl ?? '', redisClusterNodes: options.redisClusterNodes }, 'worker'),
    owned: !options.connection,
    prefix,
    repeat: policy.cron === null ? null : { pattern: policy.cron, tz: 'UTC' },
    jobOptions: {
      attempts: 3,
      backoff: { type: 'exponential', delay: 60_000 },
      removeOnComplete: { count: 30 },
      removeOnFail: { count: 100 },
    },
    offReason: 'RETENTION_CRON=off',
    runWorker: options.runWorker,
    run: (job, signal): Promise<RetentionReport> =>
      runRetention(dataSource, policy, {
        logger: logger?.child({ jobId: job.id, attempt: job.attemptsMade + 1 }),
        signal,
      }),
    onFailed: (job, err) => {
      // BullMQ sets finishedOn on the last attempt only; earlier ones will be retried
      const final = !job || job.finishedOn !== undefined;
      logger?.[final ? 'error' : 'warn'](
        { jobId: job?.id, attempt: job?.attemptsMade, final, err },
        'retention run failed',
      );
    },
    logger,
  });
  const closeTimeoutMs = options.closeTimeoutMs ?? 10_000;
  return { queue: scheduled.queue, worker: scheduled.worker, close: () => scheduled.close(closeTimeoutMs) };
}
