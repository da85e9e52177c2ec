import type { JobsOptions } from 'bullmq';
import { createRedis, RedisClient, RedisTarget } from '../queue/connect-redis';
import { EVENTS_QUEUE, EVENT_BATCH_JOB } from '../queue/queue-names';
import type { Logger } from '../shared/logger';
import { RateLimitedLog } from './rate-limited-log';
import { RawBatchQueue, RawJobData } from '../queue/raw-batch-queue';
import { queueShards, registerLayout } from '../queue/queue-shards';

export interface RedisLinkConfig {
  /** REDIS_URL or REDIS_CLUSTER_NODES. */
  target: RedisTarget;
  /** A connection owned by the caller, used instead of opening one from `target` (close() leaves it open). */
  connection?: RedisClient;
  queuePrefix: string;
  /** QUEUE_SHARDS: one queue per shard (src/queue/queue-shards.ts). @defaultValue 1 */
  queueShards?: number;
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
  /** The queue shard it goes to. @defaultValue 0 */
  shard?: number;
}

/**
 * The publisher's own Redis connection and queue, set up so that nothing ever waits on a dead Redis:
 * - `enableOfflineQueue: false`: a command sent while disconnected fails at once instead of joining
 *   ioredis's unbounded offline queue;
 * - `maxRetriesPerRequest: 0` and no auto-resend: commands in flight when the link drops fail at
 *   once; the publisher resends them itself, with the same job ids;
 * - `commandTimeout`: a half-open link (no RST) fails the command instead of hanging it;
 * - the Queue is created only after the first `ready` (BullMQ: a Queue created while Redis is
 *   down may hang add() forever), and replaced if its initialisation failed;
 * - "ready" means commands succeed, not that a socket is open: after each (re)connection a command
 *   on the queue's own keys must answer before anything is sent (a single-node link to a cluster
 *   node answers PING but MOVED to queue commands), and a failing send makes it not ready until a
 *   send succeeds again.
 * The same options hold for a Redis Cluster (connect-redis.ts: no cluster offline queue either).
 */
export class RedisLink {
  private readonly redis: RedisClient;
  private readonly ownsRedis: boolean;
  /** One queue per shard, all built together (undefined until the first `ready`). */
  private queues: RawBatchQueue[] | undefined;
  private readonly prefixes: string[];
  private queueReady = false;
  /** The last command on the queue (probe or send) succeeded. */
  private commandsOk = false;
  private probeTimer: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly errors: RateLimitedLog;

  constructor(private readonly cfg: RedisLinkConfig) {
    this.errors = new RateLimitedLog(
      cfg.logger,
      'warn',
      'redis unavailable; events wait in memory, then in the spill journal',
    );
    this.prefixes = queueShards(cfg.queuePrefix, cfg.queueShards ?? 1).map((s) => s.prefix);
    this.ownsRedis = cfg.connection === undefined;
    this.redis = cfg.connection ?? createRedis(cfg.target, 'publisher', { commandTimeoutMs: cfg.commandTimeoutMs });
    this.redis.on('error', (err: Error) => this.noteLinkError(err));
    this.redis.on('ready', () => this.onRedisReady());
    this.redis.on('close', () => {
      if (this.queueReady) cfg.logger.warn({ redis: 'disconnected' }, 'redis connection lost');
      this.queueReady = false;
      this.commandsOk = false;
    });
    // a caller's connection may be ready already: its `ready` event is gone
    if (this.redis.status === 'ready') setImmediate(() => this.onRedisReady());
  }

  /** The connection is up and the queue answered its probe: a send may be tried. */
  get ready(): boolean {
    return this.queueReady && this.redis.status === 'ready';
  }

  /** Commands succeed: ready, and the last probe or send succeeded (stats().redisReady). */
  get healthy(): boolean {
    return this.ready && this.commandsOk;
  }

  private onRedisReady(): void {
    if (this.closed) return;
    this.queues ??= this.prefixes.map((prefix) => this.createQueue(prefix));
    const queues = this.queues;
    Promise.all(queues.map((q) => q.waitUntilReady())).then(
      () => this.probe(queues),
      (err: Error) => {
        // Redis went away during initialisation: these Queues would stay broken; the next `ready` builds others.
        this.noteLinkError(err);
        if (this.queues === queues) this.queues = undefined;
        for (const q of queues) q.close().catch(() => undefined);
      },
    );
  }

  /**
   * One command on each shard's own slot (and, with several shards, the layout's registration, so
   * workers of another QUEUE_SHARDS drain these shards too). Until they answer nothing is sent and
   * the publisher is not ready; they are retried every second while the connection stays up.
   */
  private probe(queues: RawBatchQueue[]): void {
    clearTimeout(this.probeTimer);
    this.probeTimer = undefined;
    if (this.queues !== queues || this.closed || this.redis.status !== 'ready') return;
    const count = queues.length;
    Promise.all([
      ...queues.map((q) => this.redis.exists(q.toKey('meta'))),
      count > 1 ? registerLayout(this.redis, this.cfg.queuePrefix, count) : undefined,
    ]).then(
      () => {
        if (this.queues !== queues || this.closed) return;
        this.queueReady = true;
        this.commandsOk = true;
        this.errors.flush();
        this.cfg.logger.info(
          { redis: 'ready', queue: EVENTS_QUEUE, ...(count > 1 ? { shards: count } : {}) },
          'publisher connected to redis',
        );
        this.cfg.onReady();
      },
      (err: Error) => {
        this.commandsOk = false;
        this.noteLinkError(err);
        if (this.closed) return;
        this.probeTimer = setTimeout(() => this.probe(queues), 1_000);
        this.probeTimer.unref();
      },
    );
  }

  private createQueue(prefix: string): RawBatchQueue {
    const queue = new RawBatchQueue(EVENTS_QUEUE, {
      connection: this.redis,
      prefix,
      skipVersionCheck: true,
    });
    queue.on('error', (err: Error) => this.noteLinkError(err));
    return queue;
  }

  /**
   * One atomic addBulk per shard the jobs go to, sent together; rejects at once when Redis is not
   * connected, and when any shard's addBulk fails (the caller resends all with the same job ids:
   * a shard that took them ignores them as duplicates while the jobs exist).
   */
  async send(jobs: readonly OutgoingJob[]): Promise<void> {
    const queues = this.queues;
    if (queues === undefined || !this.ready) throw new Error('redis is not ready');
    const byShard = new Map<number, OutgoingJob[]>();
    for (const job of jobs) {
      const shard = job.shard ?? 0;
      const list = byShard.get(shard);
      if (list) list.push(job);
      else byShard.set(shard, [job]);
    }
    try {
      await Promise.all(
        [...byShard].map(([shard, list]) =>
          queues[shard].addBulk(
            list.map((job) => ({
              name: EVENT_BATCH_JOB,
              data: new RawJobData(job.data),
              opts: { ...this.cfg.jobOptions, jobId: job.id },
            })),
          ),
        ),
      );
    } catch (err) {
      this.commandsOk = false;
      throw err;
    }
    this.commandsOk = true;
  }

  /**
   * Of these jobs, those that still wait or run: its hash exists (every job hash has a
   * `timestamp`) and has no `finishedOn`. A job the worker finished is removed (removeOnComplete)
   * or marked finished: its events are stored or dead-lettered. Rejects when Redis is not ready.
   */
  async unfinishedJobs(jobs: ReadonlyArray<{ id: string; shard: number }>): Promise<string[]> {
    const queues = this.queues;
    if (queues === undefined || !this.ready) throw new Error('redis is not ready');
    // a pipeline per shard: on a cluster one pipeline's keys must live on one node
    const byShard = new Map<number, string[]>();
    for (const job of jobs) {
      const list = byShard.get(job.shard);
      if (list) list.push(job.id);
      else byShard.set(job.shard, [job.id]);
    }
    const unfinished: string[] = [];
    for (const [shard, ids] of byShard) {
      const pipeline = this.redis.pipeline();
      for (const id of ids) pipeline.hmget(queues[shard].toKey(id), 'finishedOn', 'timestamp');
      const replies = (await pipeline.exec()) ?? [];
      replies.forEach(([err, value], i) => {
        if (err) throw err;
        const [finishedOn, timestamp] = value as [string | null, string | null];
        if (timestamp !== null && finishedOn === null) unfinished.push(ids[i]);
      });
    }
    return unfinished;
  }

  /**
   * An error of the connection, of a queue's set-up or of a probe. Once close() has begun they are
   * the close's own doing (a set-up cut short answers "Connection is closed"), not Redis being down.
   */
  private noteLinkError(err: Error): void {
    if (!this.closed) this.errors.note(1, { err: err.message });
  }

  noteFailure(err: Error): void {
    this.errors.note(1, { err: err.message });
  }

  /** Closes the queue and the connection, giving up after `timeoutMs` (a dead Redis cannot say goodbye). */
  async close(timeoutMs: number): Promise<void> {
    this.closed = true;
    this.queueReady = false;
    clearTimeout(this.probeTimer);
    this.errors.flush();
    const closing = (async () => {
      await Promise.all((this.queues ?? []).map((q) => q.close().catch(() => undefined)));
      if (this.ownsRedis) await this.redis.quit().catch(() => undefined);
    })();
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, Math.max(0, timeoutMs));
    });
    await Promise.race([closing, deadline]);
    clearTimeout(timer);
    if (this.ownsRedis) this.redis.disconnect();
  }
}
