import { Job, type JobSchedulerTemplateOptions, Queue, type RepeatOptions, UnrecoverableError, Worker } from 'bullmq';
import type { Logger } from '../shared/logger';
import { RepeatedLog } from '../shared/repeated-log';
import { withTimeout } from '../shared/backoff';
import type { RedisClient } from './connect-redis';

/** One scheduled job on its own queue: what to upsert, and what each of its jobs runs. */
export interface ScheduledQueueOptions {
  /** The queue's name (queue-names.ts). */
  queueName: string;
  /** The job scheduler's id on that queue: one per cluster, whoever upserts it. */
  schedulerId: string;
  /** The name of the jobs it produces; a job of another name fails, unretried. */
  jobName: string;
  /** What the log lines call the job ("retention", "stall-check"). */
  label: string;
  /** What the log lines call the queue ("maintenance", "stall-check"). */
  queueLabel: string;
  /** An ioredis client with `maxRetriesPerRequest: null`; close() closes it only when `owned`. */
  connection: RedisClient;
  /** The caller opened `connection` for this queue: close() quits it (or drops it when late). */
  owned?: boolean;
  /** BullMQ key prefix: config.queuePrefix. */
  prefix: string;
  /** When it runs; null removes the scheduler (no job runs anywhere) and starts no worker. */
  repeat: Omit<RepeatOptions, 'key'> | null;
  /** The jobs' options (attempts, backoff, how many finished jobs are kept). */
  jobOptions: JobSchedulerTemplateOptions;
  /** Why the schedule is off, for the log line when `repeat` is null ("RETENTION_CRON=off"). */
  offReason: string;
  /** Process the jobs in this process too; false only upserts the scheduler. @defaultValue true */
  runWorker?: boolean;
  /** Runs one job; `signal` is aborted by close() (a long run stops between two steps). */
  run: (job: Job, signal: AbortSignal) => Promise<unknown>;
  /** Called when a job fails (logged by the caller: retried or not is the caller's policy). */
  onFailed?: (job: Job | undefined, err: Error) => void;
  logger?: Logger;
}

export interface ScheduledQueue {
  readonly queue: Queue;
  readonly worker: Worker | null;
  /**
   * Aborts the running job's signal, closes the worker (waiting at most `timeoutMs` for its job), the
   * queue and an owned connection. The scheduler stays in Redis for the other processes.
   */
  close(timeoutMs: number): Promise<void>;
}

/**
 * Upserts a job scheduler on a queue of its own and runs a Worker for its jobs, one at a time:
 * every process may call it, upserting is idempotent and BullMQ keeps one delayed job per
 * scheduler, so each tick runs once cluster-wide, on whichever process takes it. The retention
 * and stall check schedulers are this.
 */
export async function startScheduledQueue(o: ScheduledQueueOptions): Promise<ScheduledQueue> {
  const { queueName, prefix, logger } = o;
  const queue = new Queue(queueName, { connection: o.connection, prefix });
  // while Redis is unreachable every reconnection attempt fails: one line per kind per 10 s
  const logs = logger
    ? [RepeatedLog.of(queue, logger, `${o.queueLabel} queue connection error`, { level: 'warn' })]
    : [];
  const runs = { current: null as AbortController | null };
  let worker: Worker | null = null;
  try {
    if (o.repeat === null) {
      await queue.removeJobScheduler(o.schedulerId);
      logger?.info({ queue: queueName, prefix }, `${o.label} schedule off (${o.offReason}): scheduler removed`);
    } else {
      await queue.upsertJobScheduler(o.schedulerId, o.repeat, {
        name: o.jobName,
        data: { v: 1 },
        opts: o.jobOptions,
      });
      logger?.info({ queue: queueName, prefix, ...o.repeat }, `${o.label} scheduler upserted`);
      if (o.runWorker !== false) {
        worker = startWorker(o, runs);
        if (logger) logs.push(RepeatedLog.of(worker, logger, `${o.label} worker error`, { level: 'warn' }));
      }
    }
  } catch (err) {
    await closeAll(o, worker, queue, 1_000);
    throw err;
  }
  let closing: Promise<void> | null = null;
  return {
    queue,
    worker,
    close: (timeoutMs) =>
      (closing ??= (async () => {
        runs.current?.abort(); // a run stops between two steps; the next tick continues it
        await closeAll(o, worker, queue, timeoutMs);
        for (const log of logs) log.flush(); // the counts of their last window
      })()),
  };
}

function startWorker(o: ScheduledQueueOptions, runs: { current: AbortController | null }): Worker {
  const worker = new Worker(
    o.queueName,
    async (job: Job) => {
      if (job.name !== o.jobName) throw new UnrecoverableError(`unknown ${o.queueLabel} job "${job.name}"`);
      const run = (runs.current = new AbortController());
      try {
        return await o.run(job, run.signal);
      } finally {
        runs.current = null;
      }
    },
    { connection: o.connection, prefix: o.prefix, concurrency: 1 },
  );
  if (o.onFailed) worker.on('failed', o.onFailed);
  return worker;
}

/**
 * BullMQ's worker.close() has no timeout and memoises its first call: past the deadline the
 * running job is abandoned (its lock expires and the next tick redoes what is left) and the rest
 * is closed anyway. BullMQ's close can wait forever for its blocking connection to end (on a Redis
 * Cluster, after the queue's slot moved, ~1 shutdown in 10 in test/queue/redis-cluster.test.ts;
 * taskforcesh/bullmq#4065, #4656): then the queue and an owned connection get a second each and
 * are dropped, not quit, so close() always returns within the deadline plus ~2 s.
 */
async function closeAll(
  o: ScheduledQueueOptions,
  worker: Worker | null,
  queue: Queue,
  timeoutMs: number,
): Promise<void> {
  let late = false;
  if (worker) {
    late = (await settleWithin(worker.close(), timeoutMs)) === 'late';
    if (late)
      o.logger?.warn(
        { timeoutMs },
        `${o.label} worker did not close in time; its job, if any, is abandoned (the next tick continues it)`,
      );
  }
  await settleWithin(queue.close(), 1_000);
  if (!o.owned) return;
  let quit = false;
  if (!late)
    await settleWithin(
      o.connection.quit().then(() => (quit = true)),
      1_000,
    );
  if (!quit) o.connection.disconnect();
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
