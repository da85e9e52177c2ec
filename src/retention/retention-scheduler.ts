import { Job, Queue, UnrecoverableError, Worker } from 'bullmq';
import type { DataSource } from 'typeorm';
import { createRedis, RedisClient } from '../queue/connect-redis';
import { MAINTENANCE_QUEUE } from '../queue/queue-names';
import type { ClusterSeeds } from '../config/redis-cluster-nodes';
import type { Logger } from '../shared/logger';
import { RepeatedLog } from '../shared/repeated-log';
import { withTimeout } from '../shared/backoff';
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
  const { prefix, policy, logger } = options;
  if (!options.connection && !options.redisUrl && !options.redisClusterNodes)
    throw new Error('startRetentionScheduler needs a connection, a redisUrl or redisClusterNodes');
  const owned = options.connection
    ? null
    : createRedis({ redisUrl: options.redisUrl ?? '', redisClusterNodes: options.redisClusterNodes }, 'worker');
  const connection = options.connection ?? owned!;
  const queue = new Queue(MAINTENANCE_QUEUE, { connection, prefix });
  // while Redis is unreachable every reconnection attempt fails: one line per kind per 10 s
  const errorLogs = logger
    ? [RepeatedLog.of(queue, logger, 'maintenance queue connection error', { level: 'warn' })]
    : [];
  const runs = { current: null as AbortController | null };
  let worker: Worker | null = null;
  try {
    await upsertSchedule(queue, policy, prefix, logger);
    if (policy.cron !== null && options.runWorker !== false) worker = startWorker(options, connection, runs);
    if (worker && logger) errorLogs.push(RepeatedLog.of(worker, logger, 'retention worker error', { level: 'warn' }));
  } catch (err) {
    await closeAll(worker, queue, owned, 1_000);
    throw err;
  }
  const closeTimeoutMs = options.closeTimeoutMs ?? 10_000;
  let closing: Promise<void> | null = null;
  return {
    queue,
    worker,
    close: () =>
      (closing ??= (async () => {
        runs.current?.abort(); // the run stops between two batches; the next tick continues it
        await closeAll(worker, queue, owned, closeTimeoutMs, logger);
        for (const log of errorLogs) log.flush(); // the counts of their last window
      })()),
  };
}

async function upsertSchedule(
  queue: Queue,
  policy: Readonly<RetentionPolicy>,
  prefix: string,
  logger?: Logger,
): Promise<void> {
  if (policy.cron === null) {
    await queue.removeJobScheduler(RETENTION_SCHEDULER_ID);
    logger?.info(
      { queue: MAINTENANCE_QUEUE, prefix },
      'retention schedule off (RETENTION_CRON=off): scheduler removed',
    );
    return;
  }
  await queue.upsertJobScheduler(
    RETENTION_SCHEDULER_ID,
    { pattern: policy.cron, tz: 'UTC' },
    {
      name: RETENTION_JOB,
      data: { v: 1 },
      opts: {
        attempts: 3,
        backoff: { type: 'exponential', delay: 60_000 },
        removeOnComplete: { count: 30 },
        removeOnFail: { count: 100 },
      },
    },
  );
  logger?.info({ queue: MAINTENANCE_QUEUE, prefix, cron: policy.cron, tz: 'UTC' }, 'retention scheduler upserted');
}

/** One job at a time per process; the run in progress is exposed in `runs` so close() can stop it. */
function startWorker(
  options: RetentionSchedulerOptions,
  connection: RedisClient,
  runs: { current: AbortController | null },
): Worker {
  const { dataSource, policy, logger, prefix } = options;
  const worker = new Worker(
    MAINTENANCE_QUEUE,
    async (job: Job): Promise<RetentionReport> => {
      if (job.name !== RETENTION_JOB) throw new UnrecoverableError(`unknown maintenance job "${job.name}"`);
      const run = (runs.current = new AbortController());
      try {
        return await runRetention(dataSource, policy, {
          logger: logger?.child({ jobId: job.id, attempt: job.attemptsMade + 1 }),
          signal: run.signal,
        });
      } finally {
        runs.current = null;
      }
    },
    { connection, prefix, concurrency: 1 },
  );
  worker.on('failed', (job, err) => {
    // BullMQ sets finishedOn on the last attempt only; earlier ones will be retried
    const final = !job || job.finishedOn !== undefined;
    logger?.[final ? 'error' : 'warn'](
      { jobId: job?.id, attempt: job?.attemptsMade, final, err },
      'retention run failed',
    );
  });
  return worker;
}

/**
 * BullMQ's worker.close() has no timeout and memoises its first call: past the deadline the
 * running job is abandoned (its lock expires and the next tick redoes what is left) and the rest
 * is closed anyway. BullMQ's close can wait forever for its blocking connection to end (on a Redis
 * Cluster, after the queue's slot moved, ~1 shutdown in 10 in test/queue/redis-cluster.test.ts;
 * taskforcesh/bullmq#4065, #4656): then the queue and the connection get a second each and are
 * dropped, not quit, so close() always returns within the deadline plus ~2 s.
 */
async function closeAll(
  worker: Worker | null,
  queue: Queue,
  owned: RedisClient | null,
  timeoutMs: number,
  logger?: Logger,
): Promise<void> {
  let late = false;
  if (worker) {
    late = (await settleWithin(worker.close(), timeoutMs)) === 'late';
    if (late)
      logger?.warn(
        { timeoutMs },
        'retention worker did not close in time; its job, if any, is abandoned (the next tick continues it)',
      );
  }
  await settleWithin(queue.close(), 1_000);
  if (!owned) return;
  let quit = false;
  if (!late)
    await settleWithin(
      owned.quit().then(() => (quit = true)),
      1_000,
    );
  if (!quit) owned.disconnect();
}

/** 'ok' once `promise` settles (either way), 'late' after `ms`. */
function settleWithin(promise: Promise<unknown>, ms: number): Promise<'ok' | 'late'> {
  return withTimeout(
    promise.then(
      () => 'ok' as const,
      () => 'ok' as const,
    ),
    ms,
    'late',
  ).catch(() => 'late' as const);
}
