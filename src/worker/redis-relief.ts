import type { RedisClient } from '../queue/connect-redis';
import type { Queue } from 'bullmq';
import type { Logger } from '../shared/logger';
import { RepeatedLog } from '../shared/repeated-log';

/** Redis refused a write because `used_memory` passed `maxmemory` (policy noeviction). */
export function isRedisOomError(err: unknown): boolean {
  return /\bOOM command not allowed\b/.test(String((err as Error | undefined)?.message ?? err));
}

export interface RedisReliefDeps {
  /** The events queue. */
  queue: Queue;
  connection: RedisClient;
  logger: Logger;
  /** Key of the queue's event stream (`<prefix>:<queue>:events`). */
  eventStreamKey: string;
}

/** Entries of the queue's event stream kept by a relief; BullMQ keeps up to 10,000. */
const EVENT_STREAM_KEEP = 100;
/** Completed jobs removed per `clean` call. */
const CLEAN_BATCH = 1_000;

/**
 * What lets a worker start and drain on a full Redis. At `maxmemory` with `noeviction`, Redis
 * refuses BullMQ's first write of a fetch (`RPOPLPUSH` from wait to active): no job moves, none
 * completes, no memory is freed, so the queue never drains on its own. Deletions are still
 * allowed, so on Redis's OOM error this removes what the events queue holds beyond its work:
 * completed jobs (their events are in the database; publishers before this release kept 1,000
 * with their data) and all but the last entries of the queue's event stream (notifications only).
 * Waiting jobs and dead letters are never touched. At most one relief at a time, one per second.
 */
export class RedisRelief {
  private running: Promise<void> | undefined;
  private lastAt = 0;
  /** Reliefs done (tests, metrics). */
  count = 0;

  /**
   * Failures to free memory, tried again on every refused fetch while Redis stays full: one line a minute, with the
   * count (flushed at shutdown).
   */
  readonly failures: RepeatedLog;

  constructor(private readonly deps: RedisReliefDeps) {
    this.failures = new RepeatedLog(deps.logger, 'could not free Redis memory', {
      windowMs: 60_000,
      kindOf: () => 'relief',
    });
  }

  /** For the worker's `error` event: acts on Redis OOM errors only. */
  readonly onError = (err: unknown): void => {
    if (!isRedisOomError(err) || this.running || Date.now() - this.lastAt < 1_000) return;
    this.running = this.relieve()
      .catch((e) => this.failures.report(e))
      .finally(() => {
        this.lastAt = Date.now();
        this.running = undefined;
      });
  };

  /** Resolves when no relief runs. */
  async settled(): Promise<void> {
    await this.running;
  }

  private async relieve(): Promise<void> {
    let completedJobs = 0;
    for (;;) {
      const removed = await this.deps.queue.clean(0, CLEAN_BATCH, 'completed');
      completedJobs += removed.length;
      if (removed.length < CLEAN_BATCH) break;
    }
    const streamEntries = await this.deps.connection.xtrim(this.deps.eventStreamKey, 'MAXLEN', EVENT_STREAM_KEEP);
    this.count++;
    this.deps.logger.warn(
      { completedJobs, streamEntries },
      'Redis is at maxmemory (noeviction) and refuses the worker: removed completed jobs and trimmed the queue event stream so jobs can move; raise maxmemory or trim the dead-letter queue',
    );
  }
}
