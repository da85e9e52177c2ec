import type { JobsOptions } from 'bullmq';
import IORedis from 'ioredis';
import { EVENTS_QUEUE, EVENT_BATCH_JOB } from '../queue/queue-names';
import type { Logger } from '../shared/logger';
import { RateLimitedLog } from './rate-limited-log';
import { RawBatchQueue, RawJobData } from './raw-batch-queue';

export interface RedisLinkConfig {
  redisUrl: string;
  queuePrefix: string;
  commandTimeoutMs: number;
  jobOptions: JobsOptions;
  logger: Logger;
  /** Redis became usable (first connection or reconnection). */
  onReady: () => void;
}

/** One job to add: its id and its data, EventBatchJobData as UTF-8 JSON (batch-encoding.ts). */
export interface OutgoingJob {
  id: string;
  data: Buffer;
}

/**
 * The publisher's own Redis connection and queue, set up so that nothing ever waits on a dead Redis:
 * - `enableOfflineQueue: false`: a command sent while disconnected fails at once instead of joining
 *   ioredis's unbounded offline queue;
 * - `maxRetriesPerRequest: 0` and no auto-resend: commands in flight when the link drops fail at
 *   once; the publisher resends them itself, with the same job ids;
 * - `commandTimeout`: a half-open link (no RST) fails the command instead of hanging it;
 * - the Queue is created only after the first `ready` (STACK-NOTES: a Queue created while Redis is
 *   down may hang add() forever), and replaced if its initialisation failed.
 */
export class RedisLink {
  private readonly redis: IORedis;
  private queue: RawBatchQueue | undefined;
  private queueReady = false;
  private closed = false;
  private readonly errors: RateLimitedLog;

  constructor(private readonly cfg: RedisLinkConfig) {
    this.errors = new RateLimitedLog(cfg.logger, 'warn', 'redis unavailable; events wait in memory, then in the spill journal');
    this.redis = new IORedis(cfg.redisUrl, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      autoResendUnfulfilledCommands: false,
      commandTimeout: cfg.commandTimeoutMs,
      connectTimeout: 5_000,
      // Reconnect soon after an outage ends, without hammering a dead server: 100 ms, 200 ms, ... 2 s.
      retryStrategy: (times) => Math.min(times * 100, 2_000),
    });
    this.redis.on('error', (err: Error) => this.errors.note(1, { err: err.message }));
    this.redis.on('ready', () => this.onRedisReady());
    this.redis.on('close', () => {
      if (this.queueReady) cfg.logger.warn({ redis: 'disconnected' }, 'redis connection lost');
      this.queueReady = false;
    });
  }

  /** Redis answers and the queue is initialised: a send may succeed. */
  get ready(): boolean {
    return this.queueReady && this.redis.status === 'ready';
  }

  private onRedisReady(): void {
    if (this.closed) return;
    this.queue ??= this.createQueue();
    const queue = this.queue;
    queue.waitUntilReady().then(
      () => {
        if (this.queue !== queue || this.closed) return;
        this.queueReady = true;
        this.errors.flush();
        this.cfg.logger.info({ redis: 'ready', queue: EVENTS_QUEUE }, 'publisher connected to redis');
        this.cfg.onReady();
      },
      (err: Error) => {
        // Redis went away during initialisation: this Queue would stay broken; the next `ready` builds another.
        this.errors.note(1, { err: err.message });
        if (this.queue === queue) this.queue = undefined;
        queue.close().catch(() => undefined);
      },
    );
  }

  private createQueue(): RawBatchQueue {
    const queue = new RawBatchQueue(EVENTS_QUEUE, { connection: this.redis, prefix: this.cfg.queuePrefix, skipVersionCheck: true });
    queue.on('error', (err: Error) => this.errors.note(1, { err: err.message }));
    return queue;
  }

  /** One atomic addBulk; rejects at once when Redis is not connected. */
  async send(jobs: readonly OutgoingJob[]): Promise<void> {
    const queue = this.queue;
    if (queue === undefined || !this.ready) throw new Error('redis is not ready');
    await queue.addBulk(
      jobs.map((job) => ({
        name: EVENT_BATCH_JOB,
        data: new RawJobData(job.data),
        opts: { ...this.cfg.jobOptions, jobId: job.id },
      })),
    );
  }

  noteFailure(err: Error): void {
    this.errors.note(1, { err: err.message });
  }

  /** Closes the queue and the connection, giving up after `timeoutMs` (a dead Redis cannot say goodbye). */
  async close(timeoutMs: number): Promise<void> {
    this.closed = true;
    this.queueReady = false;
    this.errors.flush();
    const closing = (async () => {
      await this.queue?.close().catch(() => undefined);
      await this.redis.quit().catch(() => undefined);
    })();
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, Math.max(0, timeoutMs));
    });
    await Promise.race([closing, deadline]);
    clearTimeout(timer);
    this.redis.disconnect();
  }
}
