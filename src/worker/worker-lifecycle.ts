import type { Job, Queue } from 'bullmq';
import type { PlanEvent } from '../contracts';
import type { DeadLetter } from '../dead-letters/dead-letter';
import { buildDeadLetter } from '../dead-letters/dead-letter-writer';
import type { HealthServer } from '../health/health-server';
import { EVENTS_QUEUE } from '../queue/queue-names';
import type { Logger } from '../shared/logger';
import { withTimeout } from '../shared/backoff';
import type { JobWriteOutcome } from './batch-writer';
import type { DatabaseGate } from './database-gate';
import type { EventsWorker } from './events-worker';
import type { WorkerJobData } from './job-processor';
import type { GapSweeper } from './gap-sweeper';
import type { MicroBatcher } from './micro-batcher';
import type { Opened } from './opened-resources';
import type { WorkerState } from './worker-state';
import { workerVersion } from './worker-version';
import { isRedisOomError } from './redis-relief';
import { messageOf, RepeatedLog } from '../shared/repeated-log';

/** What happens around the processor: BullMQ events, idleness, shutdown. */

/** Returns the log of the worker's 'error' events, for the shutdown to flush. */
export function wireWorkerEvents(
  worker: EventsWorker,
  state: WorkerState,
  logger: Logger,
  writeDeadLetters: (l: DeadLetter[]) => Promise<void>,
  prefix: string,
): RepeatedLog {
  // a worker whose every fetch fails (a full Redis) would log each failure: once per kind per 10 s
  const errors = RepeatedLog.of(worker, logger, 'worker error', {
    kindOf: (err) => (isRedisOomError(err) ? 'redis-oom' : messageOf(err)),
  });
  worker.on('drained', () => state.drained());
  worker.on('failed', (job: Job<WorkerJobData> | undefined, err: Error) => {
    // The processor settles every job itself; this is the safety net for what escapes it.
    if (!job || !job.finishedOn || err.name === 'DelayedError') return;
    logger.error(
      { jobId: job.id, attempt: job.attemptsStarted, err },
      'job failed for good outside the processor; dead-lettering its events',
    );
    void lastResortDeadLetters(job, err, prefix)
      .then(writeDeadLetters)
      .catch((e) => logger.error({ err: e, jobId: job.id }, 'could not dead-letter a failed job'));
  });
  return errors;
}

async function lastResortDeadLetters(job: Job<WorkerJobData>, err: Error, prefix: string): Promise<DeadLetter[]> {
  const events = Array.isArray(job.data?.events) ? job.data.events : [job.data];
  const failedAt = new Date(job.finishedOn ?? Date.now());
  return events.map((event, index) =>
    buildDeadLetter(
      'retries-exhausted',
      event,
      { message: err.message, stack: err.stack },
      {
        queue: EVENTS_QUEUE,
        prefix,
        jobId: String(job.id),
        index,
        attempts: job.attemptsStarted || 1,
        firstFailedAt: new Date(job.processedOn ?? failedAt.getTime()),
        lastFailedAt: failedAt,
        workerVersion: workerVersion(),
        replayCount: job.data?.replayCounts?.[index] ?? 0,
      },
    ),
  );
}

export async function waitIdle(
  queues: readonly Queue[],
  batcher: MicroBatcher<PlanEvent, JobWriteOutcome>,
  timeoutMs: number,
): Promise<boolean> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    let jobs = 0;
    for (const queue of queues) {
      const c = await queue.getJobCounts('wait', 'active', 'delayed', 'prioritized');
      jobs += (c.wait ?? 0) + (c.active ?? 0) + (c.delayed ?? 0) + (c.prioritized ?? 0);
    }
    if (jobs === 0 && batcher.size === 0) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}

export interface ShutdownParts {
  /** The BullMQ worker of each consumed shard. */
  workers: EventsWorker[];
  batcher: MicroBatcher<PlanEvent, JobWriteOutcome>;
  gate: DatabaseGate;
  sweeper: GapSweeper;
  health: HealthServer | undefined;
  opened: Opened;
  closing: AbortController;
  logger: Logger;
  deadlineMs: number;
}

/** How a shutdown ended: `clean` if everything closed within the deadline. */
export interface ShutdownResult {
  clean: boolean;
  /**
   * Jobs not acknowledged to Redis when the deadline passed (0 if clean): BullMQ redelivers them
   * once their locks expire. 0 with `clean` false: nothing was in flight, only closing the Redis
   * connections ran late (Redis unreachable), and nothing is handed back.
   */
  unfinishedJobs: number;
}

/** Stop fetching, let in-flight jobs commit (flushing at once), then close, all within the deadline. */
export async function shutdown(p: ShutdownParts): Promise<ShutdownResult> {
  const started = Date.now();
  p.logger.info({ deadlineMs: p.deadlineMs, inFlightJobs: p.batcher.size }, 'worker closing: finishing in-flight jobs');
  // Jobs waiting out a retry hand themselves back to the queue instead of holding the close.
  p.closing.abort();
  const stopping = Promise.all(p.workers.map((w) => w.close()));
  void p.batcher.drain();
  const clean = await withTimeout(stopping, p.deadlineMs, 'deadline').then(
    () => true,
    () => false,
  );
  const unfinishedJobs = clean ? 0 : p.workers.reduce((n, w) => n + w.unacknowledgedJobs, 0);
  if (unfinishedJobs > 0) {
    p.logger.warn(
      { unfinishedJobs },
      'shutdown deadline reached: abandoning in-flight jobs; BullMQ redelivers them once their locks expire',
    );
  } else if (!clean) {
    p.logger.warn(
      'shutdown deadline reached with no job in flight: the Redis connections did not close (is Redis reachable?); they are dropped',
    );
  }
  if (!clean)
    await withTimeout(Promise.all(p.workers.map((w) => w.abandonInFlight())), 1_000, 'abandon').catch(() => undefined);
  p.gate.stop();
  await withTimeout(p.sweeper.stop(), 1_000, 'sweeper').catch(() => undefined);
  const left = Math.max(500, p.deadlineMs - (Date.now() - started));
  await withTimeout(Promise.all([p.health?.close(), p.opened.closeAll(clean)]), left, 'close').catch(() => undefined);
  p.opened.finishClose();
  p.logger.info({ clean, unfinishedJobs, durationMs: Date.now() - started }, 'worker closed');
  return { clean, unfinishedJobs };
}
