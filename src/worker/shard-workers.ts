import { Queue } from 'bullmq';
import type { RedisClient } from '../queue/connect-redis';
import { EVENTS_QUEUE } from '../queue/queue-names';
import { consumedShards, QueueShard, registeredLayouts, shardLabel } from '../queue/queue-shards';
import type { Logger } from '../shared/logger';
import { RepeatedLog } from '../shared/repeated-log';
import { EventsWorker } from './events-worker';
import type { Opened } from './opened-resources';
import { RedisRelief } from './redis-relief';
import type { WorkerConfig } from './worker-config';
import { wireWorkerEvents } from './worker-lifecycle';
import type { WorkerMetrics } from './worker-metrics';
import type { WorkerPipeline } from './worker-pipeline';
import type { WorkerState } from './worker-state';

/** One consumed shard of the events queue: its Queue (counts, cleaning) and its BullMQ worker. */
export interface ShardRuntime {
  shard: QueueShard;
  label: string;
  queue: Queue;
  worker: EventsWorker;
}

/** What every shard's worker shares. */
export interface ShardWorkersDeps {
  connection: RedisClient;
  /** QUEUE_PREFIX, and QUEUE_SHARDS (1 without shards). */
  prefix: string;
  shardCount: number;
  settings: WorkerConfig;
  logger: Logger;
  metrics: WorkerMetrics;
  state: WorkerState;
  opened: Opened;
  pipeline: WorkerPipeline;
  /** Aborted when the worker closes. */
  closing: AbortSignal;
}

/**
 * The BullMQ workers of the consumed shards. The pipeline decides, the workers follow: paused
 * while the database is down or faulty, and the process's job concurrency shared between them.
 */
export class ShardWorkers {
  readonly runtimes: ShardRuntime[] = [];
  readonly workers: EventsWorker[] = [];
  readonly queues: Queue[] = [];
  /** The repeated-error logs of the queues and workers, flushed at close. */
  readonly logs: RepeatedLog[] = [];
  private fetching = false;

  constructor(private readonly deps: ShardWorkersDeps) {
    const { pipeline, closing } = deps;
    pipeline.gate.onChange((up) => {
      for (const worker of this.workers) {
        if (up) {
          if (!closing.aborted) worker.resume();
        } else void worker.pause(true);
      }
    });
    pipeline.concurrency.onChange((n) => this.workers.forEach((worker) => (worker.concurrency = this.perShard(n))));
  }

  /** Starts consuming `shard`: at once when the others fetch already. */
  add(shard: QueueShard): ShardRuntime {
    const { connection, logger, metrics, pipeline } = this.deps;
    const queue = this.deps.opened.closable(new Queue(EVENTS_QUEUE, { connection, prefix: shard.prefix }));
    const label = shardLabel(shard, this.deps.shardCount);
    // while Redis is unreachable every reconnection attempt fails: one line per kind per 10 s
    this.logs.push(RepeatedLog.of(queue, logger, 'events queue connection error', { level: 'warn' }));
    metrics.observeQueue(
      {
        getJobCounts: (...types) => queue.getJobCounts(...(types as never[])),
        oldestWaitingTimestamp: async () => (await queue.getWaiting(0, 0))[0]?.timestamp,
      },
      label,
    );
    const worker = createEventsWorker(shard.prefix, this.deps);
    this.logs.push(wireWorkerEvents(worker, this.deps.state, logger, pipeline.writeDeadLetters, shard.prefix));
    const relief = new RedisRelief({ queue, connection, logger, eventStreamKey: queue.keys.events });
    worker.on('error', relief.onError);
    this.logs.push(relief.failures);
    const runtime = { shard, label, queue, worker };
    this.runtimes.push(runtime);
    this.workers.push(worker);
    this.queues.push(queue);
    for (const w of this.workers) w.concurrency = this.perShard(pipeline.concurrency.concurrency);
    if (this.fetching) {
      this.run(worker);
      if (!pipeline.gate.isOpen) void worker.pause(true); // as the others while the database is down or faulty
    }
    return runtime;
  }

  /** Every worker fetches jobs from now on. */
  startFetching(): void {
    this.fetching = true;
    for (const worker of this.workers) this.run(worker);
  }

  /**
   * Polls the registered QUEUE_SHARDS layouts every `pollMs`: a publisher started later with
   * another QUEUE_SHARDS registers its layout, and its shards are drained too.
   */
  followLayouts(pollMs: number): void {
    const { connection, prefix, shardCount, logger, closing } = this.deps;
    const refresh = async () => {
      const known = new Set(this.runtimes.map((r) => r.shard.prefix));
      const layouts = await registeredLayouts(connection, prefix).catch(() => [] as number[]);
      if (closing.aborted) return;
      for (const shard of consumedShards(prefix, shardCount, null, layouts)) {
        if (known.has(shard.prefix)) continue;
        const added = this.add(shard);
        logger.info({ shard: added.label, prefix: shard.prefix }, 'worker consumes a shard of another QUEUE_SHARDS');
      }
    };
    const timer = setInterval(() => void refresh(), pollMs);
    timer.unref();
    this.deps.opened.closable({ close: async () => clearInterval(timer) });
  }

  /** The job concurrency is the process's: each shard's worker gets its share. */
  private perShard(n: number): number {
    return Math.max(1, Math.ceil(n / Math.max(1, this.workers.length)));
  }

  private run(worker: EventsWorker): void {
    void worker.run().catch((err) => this.deps.logger.error({ err }, 'worker stopped with an error'));
  }
}

function createEventsWorker(prefix: string, deps: ShardWorkersDeps): EventsWorker {
  const { settings } = deps;
  return new EventsWorker(EVENTS_QUEUE, deps.pipeline.processor, {
    connection: deps.connection,
    prefix,
    autorun: false,
    concurrency: 1,
    lockDuration: settings.lockDurationMs,
    stalledInterval: settings.lockDurationMs,
    // A crash mid-job is harmless (writes are idempotent): allow several before BullMQ fails the job.
    maxStalledCount: 10,
    // Used only when the publisher set nothing. A completed job's events are in the database:
    // keeping its data would only fill Redis with events stored already.
    removeOnComplete: { count: 0 },
    removeOnFail: { count: 10_000 },
  });
}
