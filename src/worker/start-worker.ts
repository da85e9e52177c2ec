import { Queue } from 'bullmq';
import type { DataSource } from 'typeorm';
import type { AppConfig } from '../config/config';
import type { ClusterSeeds } from '../config/redis-cluster-nodes';
import {
  assertClusterPrefix,
  assertNotClusterNode,
  createRedis,
  describeRedis,
  RedisClient,
  RedisTarget,
  redisVariable,
} from '../queue/connect-redis';
import type { DeadLetter } from '../dead-letters/dead-letter';
import { DeadLetterRepository } from '../dead-letters/dead-letter.repository';
import { startHealthServer, Readiness } from '../health/health-server';
import { checkReadiness } from '../health/readiness';
import { SchemaWatch, watchDataSourceSchema } from '../health/schema-readiness';
import { WorkerMetrics } from './worker-metrics';
import { DEAD_LETTER_QUEUE, EVENTS_QUEUE } from '../queue/queue-names';
import type { Logger } from '../shared/logger';
import { hideRedisCommandArguments } from '../shared/redis-debug';
import { assertCapabilities } from '../store/capabilities';
import { assertSchema, openDataSource } from '../store/data-source';
import { DIALECTS, sqlDialectOf } from '../store/sql/dialects';
import { BackoffPolicy, withTimeout } from '../shared/backoff';
import type { EventPersister } from './batch-writer';
import type { DatabaseGate } from './database-gate';
import { EventsWorker } from './events-worker';
import { DEFAULT_WORKER_CONFIG, WorkerConfig } from './worker-config';
import { WorkerStats, WorkerState } from './worker-state';
import { buildPipeline, WorkerPipeline } from './worker-pipeline';
import { Opened } from './opened-resources';
import { shutdown, ShutdownResult, waitIdle, wireWorkerEvents } from './worker-lifecycle';
import { RedisRelief } from './redis-relief';
import { RepeatedLog } from '../shared/repeated-log';
import { consumedShards, QueueShard, registeredLayouts, shardLabel } from '../queue/queue-shards';

export interface StartWorkerOptions {
  /**
   * REDIS_URL (or REDIS_CLUSTER_NODES), QUEUE_PREFIX and DATABASE_URL (the latter only when `dataSource` is not
   * given).
   */
  config: Pick<AppConfig, 'redisUrl' | 'queuePrefix' | 'database'> &
    Partial<Pick<AppConfig, 'queueShards' | 'workerShards'>> & { redisClusterNodes?: ClusterSeeds | null };
  logger: Logger;
  /** Any subset of the worker settings. @defaultValue DEFAULT_WORKER_CONFIG (see worker-config.ts) */
  settings?: Partial<WorkerConfig>;
  /** An open, migrated DataSource owned by the caller. @defaultValue opened from config.database, closed by close() */
  dataSource?: DataSource;
  /**
   * An ioredis client owned by the caller (`maxRetriesPerRequest: null`). @defaultValue one opened from
   * config.redisUrl, closed by close()
   */
  connection?: RedisClient;
  /** Where validated events go. @defaultValue new PlanEventStore(dataSource, logger) */
  store?: EventPersister;
  /** Metrics (and their registry). @defaultValue a new WorkerMetrics on a private Registry */
  metrics?: WorkerMetrics;
  /** Delays between retries of a failing job. @defaultValue 250 ms doubling to 30 s, jittered */
  retryBackoff?: BackoffPolicy;
  /** Told after every commit (the demo shows progress with it). */
  onCommit?(info: { events: number; inserted: number; duplicates: number; durationMs: number }): void;
  /** Told after every dead letter is written. */
  onDeadLetter?(letter: DeadLetter): void;
  /** While migrations are pending the worker consumes nothing; it looks again this often. @defaultValue 5000 ms */
  schemaPollMs?: number;
  /**
   * How often a worker of every shard (no WORKER_SHARDS) looks for layouts that publishers with
   * another QUEUE_SHARDS registered, to consume their shards too. @defaultValue 10000 ms
   */
  layoutPollMs?: number;
}

export interface WorkerHandle {
  /** Port of the health server, or null when it is off. */
  readonly healthPort: number | null;
  readonly metrics: WorkerMetrics;
  /** Running totals since start. */
  stats(): WorkerStats;
  /** What /readyz answers. */
  readiness(): Promise<Readiness>;
  /** Resolves when no job waits, runs or is delayed and nothing is left to write; false at the timeout. */
  idle(timeoutMs?: number): Promise<boolean>;
  /**
   * Stop fetching, finish in-flight jobs, close everything this function opened. Past `deadlineMs`
   * in-flight jobs are abandoned (their locks expire and BullMQ redelivers them), `clean` is false
   * and `unfinishedJobs` counts them (0: none was in flight, only the Redis connections closed late).
   * @defaultValue deadlineMs = settings.shutdownTimeoutMs (8000)
   */
  close(deadlineMs?: number): Promise<ShutdownResult>;
}

/**
 * Starts a worker on EVENTS_QUEUE in this process: the composition root of the worker runtime.
 * Throws one clear line when Redis or the database cannot be reached or the schema is missing.
 */
export async function startWorker(options: StartWorkerOptions): Promise<WorkerHandle> {
  const settings: WorkerConfig = { ...DEFAULT_WORKER_CONFIG, ...options.settings };
  const { logger, config } = options;
  hideRedisCommandArguments();
  const opened = new Opened(logger);
  try {
    assertClusterPrefix(config.queuePrefix, options.connection ?? config);
    const connection = options.connection ?? opened.redis(createRedis(config, 'worker'));
    await reachRedis(connection, config);
    const dialect = options.dataSource ? sqlDialectOf(options.dataSource) : DIALECTS[config.database.dialect];
    // a dialect that serialises its writes (SQLite: one connection) would only make a second transaction wait
    const flushConcurrency = dialect.serializesWrites ? 1 : settings.transactions;
    const ds =
      options.dataSource ??
      opened.dataSource(await openDataSource(config.database, { poolSize: flushConcurrency + 2 }));
    // never migrated: most likely the wrong DATABASE_URL, so fail at once; merely behind: wait, not ready
    await assertSchema(ds, config.database, 'the worker');
    // a login without a permission, or a SQL Server below OPENJSON's level: one line now, not a paused stream
    await assertCapabilities(ds, config.database, 'worker', logger);
    const schema = await watchDataSourceSchema(ds, logger, options.schemaPollMs);
    opened.closable({ close: async () => schema.stop() });
    return await assemble({ options, settings, connection, ds, transactions: flushConcurrency, opened, schema });
  } catch (err) {
    await opened.closeAll(false);
    throw err;
  }
}

/** Fails fast, in one line, when Redis refuses the connection (ioredis would otherwise retry forever). */
async function reachRedis(connection: RedisClient, target: RedisTarget): Promise<void> {
  const where = `cannot reach ${target.redisClusterNodes ? '' : 'Redis at '}${describeRedis(target)}`;
  const fix = `start it (redis-server) or set ${redisVariable(target)}`;
  let onError: ((err: Error) => void) | undefined;
  const refused = new Promise<never>((_, reject) => {
    onError = (err) => reject(new Error(`${where} (${err.message}); ${fix}`));
    connection.once('error', onError);
  });
  try {
    await withTimeout(Promise.race([connection.ping(), refused]), 5_000, `${where} (no answer within 5 s); ${fix}`);
  } finally {
    connection.removeListener('error', onError!);
  }
  await assertNotClusterNode(connection, target);
}

/** What assemble() receives from startWorker(): the resources it opened or was given. */
interface Opening {
  options: StartWorkerOptions;
  settings: WorkerConfig;
  connection: RedisClient;
  ds: DataSource;
  /** Transactions in flight at once. */
  transactions: number;
  opened: Opened;
  schema: SchemaWatch;
}

/** One consumed shard of the events queue: its Queue (counts, cleaning) and its BullMQ worker. */
interface ShardRuntime {
  shard: QueueShard;
  label: string;
  queue: Queue;
  worker: EventsWorker;
}

async function assemble(o: Opening): Promise<WorkerHandle> {
  const { options, settings, connection, ds, opened, schema } = o;
  const { logger, config } = options;
  const prefix = config.queuePrefix;
  const shardCount = config.queueShards ?? 1;
  const pinned = config.workerShards ?? null;
  // a worker of every shard also drains the shards that publishers with another QUEUE_SHARDS used
  const layouts = pinned ? [] : await registeredLayouts(connection, prefix);
  const shards = consumedShards(prefix, shardCount, pinned, layouts);
  const metrics = options.metrics ?? new WorkerMetrics();
  const state = new WorkerState();
  const closing = new AbortController();
  // read at scrape time only: dead letters by kind and the oldest one's age (one queue for every shard)
  const deadLetterQueue = opened.closable(new Queue(DEAD_LETTER_QUEUE, { connection, prefix }));
  const deadLetterQueueErrors = RepeatedLog.of(deadLetterQueue, logger, 'dead-letter queue connection error', {
    level: 'warn',
  });
  metrics.observeDeadLetters(new DeadLetterRepository(deadLetterQueue));
  const pipeline = buildPipeline({
    settings,
    ds,
    connection,
    queuePrefix: prefix,
    logger,
    metrics,
    state,
    opened,
    transactions: o.transactions,
    closing: closing.signal,
    store: options.store,
    retryBackoff: options.retryBackoff,
    onCommit: options.onCommit,
    onDeadLetter: options.onDeadLetter,
  });
  const { gate, batcher, sweeper } = pipeline;
  // the job concurrency is the process's: each shard's worker gets its share
  const runtimes: ShardRuntime[] = [];
  const workers: EventsWorker[] = [];
  const queues: Queue[] = [];
  const perShard = (n: number) => Math.max(1, Math.ceil(n / Math.max(1, workers.length)));
  const logs: RepeatedLog[] = [deadLetterQueueErrors];
  let fetching = false;
  const run = (worker: EventsWorker) =>
    void worker.run().catch((err) => logger.error({ err }, 'worker stopped with an error'));
  const addShard = (shard: QueueShard): ShardRuntime => {
    const queue = opened.closable(new Queue(EVENTS_QUEUE, { connection, prefix: shard.prefix }));
    const label = shardLabel(shard, shardCount);
    // while Redis is unreachable every reconnection attempt fails: one line per kind per 10 s
    logs.push(RepeatedLog.of(queue, logger, 'events queue connection error', { level: 'warn' }));
    metrics.observeQueue(
      {
        getJobCounts: (...types) => queue.getJobCounts(...(types as never[])),
        oldestWaitingTimestamp: async () => (await queue.getWaiting(0, 0))[0]?.timestamp,
      },
      label,
    );
    const worker = createEventsWorker({
      connection,
      prefix: shard.prefix,
      settings,
      processor: pipeline.processor,
      concurrency: 1,
    });
    logs.push(wireWorkerEvents(worker, state, logger, pipeline.writeDeadLetters, shard.prefix));
    const relief = new RedisRelief({ queue, connection, logger, eventStreamKey: queue.keys.events });
    worker.on('error', relief.onError);
    logs.push(relief.failures);
    const runtime = { shard, label, queue, worker };
    runtimes.push(runtime);
    workers.push(worker);
    queues.push(queue);
    for (const w of workers) w.concurrency = perShard(pipeline.concurrency.concurrency);
    if (fetching) {
      run(worker);
      if (!gate.isOpen) void worker.pause(true); // as the others while the database is down or faulty
    }
    return runtime;
  };
  for (const shard of shards) addShard(shard);
  // the pipeline decides, the BullMQ workers follow: paused while the database is down or faulty, sized to the jobs
  gate.onChange((up) => {
    for (const worker of workers) {
      if (up) {
        if (!closing.signal.aborted) worker.resume();
      } else void worker.pause(true);
    }
  });
  pipeline.concurrency.onChange((n) => workers.forEach((worker) => (worker.concurrency = perShard(n))));
  // the counts of the last window of each repeated-error log, even if the worker's close never ends
  opened.afterClose(() => logs.forEach((log) => log.flush()));
  // Fetch (and sweep gaps) only on the schema this code expects: until then nothing is written.
  void schema.current.then(() => {
    if (closing.signal.aborted) return;
    sweeper.start();
    fetching = true;
    for (const worker of workers) run(worker);
  });
  await Promise.all(workers.map((worker) => worker.waitUntilReady()));
  if (!pinned) {
    // a publisher started later with another QUEUE_SHARDS registers its layout: drain its shards too
    const refresh = async () => {
      const known = new Set(runtimes.map((r) => r.shard.prefix));
      const layouts = await registeredLayouts(connection, prefix).catch(() => [] as number[]);
      if (closing.signal.aborted) return;
      for (const shard of consumedShards(prefix, shardCount, null, layouts)) {
        if (known.has(shard.prefix)) continue;
        const added = addShard(shard);
        logger.info({ shard: added.label, prefix: shard.prefix }, 'worker consumes a shard of another QUEUE_SHARDS');
      }
    };
    const timer = setInterval(() => void refresh(), options.layoutPollMs ?? 10_000);
    timer.unref();
    opened.closable({ close: async () => clearInterval(timer) });
  }
  const readiness = () =>
    readinessOf({ connection, ds, queues, gate, schema, state, stallMs: settings.readyStallSeconds * 1000 });
  const health =
    settings.healthPort === null
      ? undefined
      : await startHealthServer({
          port: settings.healthPort,
          host: settings.healthHost,
          logger,
          readiness,
          metrics: async () => ({ contentType: metrics.registry.contentType, body: await metrics.text() }),
        });
  logger.info(
    {
      queue: EVENTS_QUEUE,
      prefix,
      ...(runtimes.length > 1 || shardCount > 1
        ? { queueShards: shardCount, shards: runtimes.map((r) => r.label) }
        : {}),
      concurrency: settings.concurrency,
      maxEventsInFlight: settings.maxEventsInFlight,
      batchSize: settings.batchSize,
      batchWaitMs: settings.batchWaitMs,
      transactions: o.transactions,
      retryBudgetMs: settings.retryBudgetMs,
      gapTimeoutMs: settings.gapTimeoutMs,
      healthPort: health?.port ?? null,
    },
    'worker started',
  );
  let closed: Promise<ShutdownResult> | undefined;
  return {
    healthPort: health?.port ?? null,
    metrics,
    stats: () => state.snapshot(gate.isUp, batcher.size, gate.fault ?? null),
    readiness,
    idle: (timeoutMs = 60_000) => waitIdle(queues, batcher, timeoutMs),
    close: (deadlineMs = settings.shutdownTimeoutMs) =>
      (closed ??= shutdown({ workers, batcher, gate, sweeper, health, opened, closing, logger, deadlineMs })),
  };
}

function createEventsWorker(w: {
  connection: RedisClient;
  prefix: string;
  settings: WorkerConfig;
  processor: WorkerPipeline['processor'];
  concurrency: number;
}): EventsWorker {
  return new EventsWorker(EVENTS_QUEUE, w.processor, {
    connection: w.connection,
    prefix: w.prefix,
    autorun: false,
    concurrency: w.concurrency,
    lockDuration: w.settings.lockDurationMs,
    stalledInterval: w.settings.lockDurationMs,
    // A crash mid-job is harmless (writes are idempotent): allow several before BullMQ fails the job.
    maxStalledCount: 10,
    // Used only when the publisher set nothing. A completed job's events are in the database:
    // keeping its data would only fill Redis with events stored already.
    removeOnComplete: { count: 0 },
    removeOnFail: { count: 10_000 },
  });
}

function readinessOf(r: {
  connection: RedisClient;
  ds: DataSource;
  queues: Queue[];
  gate: DatabaseGate;
  schema: SchemaWatch;
  state: WorkerState;
  stallMs: number;
}): Promise<Readiness> {
  return checkReadiness({
    // a command on the queue's own keys, not PING: "ready" means the worker's commands succeed
    // (a node that answers PING may still answer MOVED or CLUSTERDOWN to them)
    pingRedis: () => Promise.all(r.queues.map((q) => r.connection.exists(q.toKey('meta')))),
    pingDatabase: () => r.ds.query('SELECT 1'),
    databaseGateUp: () => r.gate.isUp,
    databaseFault: () => r.gate.fault,
    waitingJobs: async () => {
      const counts = await Promise.all(r.queues.map((q) => q.getJobCounts('wait', 'prioritized')));
      return counts.reduce((n, c) => n + (c.wait ?? 0) + (c.prioritized ?? 0), 0);
    },
    schema: () => r.schema.check(),
    lastProgressAt: () => r.state.lastProgressAt,
    stallMs: r.stallMs,
  });
}
