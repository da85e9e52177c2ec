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
import { DEFAULT_WORKER_CONFIG, WorkerConfig } from './worker-config';
import { WorkerStats, WorkerState } from './worker-state';
import { buildPipeline, type WorkerPipeline } from './worker-pipeline';
import { Opened } from './opened-resources';
import { shutdown, ShutdownResult, waitIdle } from './worker-lifecycle';
import { RepeatedLog } from '../shared/repeated-log';
import { consumedShards, registeredLayouts } from '../queue/queue-shards';
import { ShardWorkers } from './shard-workers';
import { countStalledPlans } from '../stalled/stall-check';
import { ApprovalLedger } from '../store/approvals/approval-ledger';
import { startStallScheduler } from '../stalled/stall-scheduler';
import { DEFAULT_WEBHOOK_CONFIG, type WebhookConfig } from '../webhooks/webhook-config';
import { type IngestBacklog, WebhookDeliveryLoop } from '../webhooks/webhook-delivery';
import { WebhookMetrics } from '../webhooks/webhook-metrics';

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
  /**
   * Run the stall check in this process too (settings.stallCheckMs; once per cluster whatever the
   * number of workers that do: docs/store.md#stalled-plans). `plan-ledger worker` does. @defaultValue false
   */
  stallCheck?: boolean;
  /** Webhook delivery (docs/webhooks.md): the loop runs in every worker unless `enabled` is false. @defaultValue DEFAULT_WEBHOOK_CONFIG */
  webhooks?: WebhookConfig;
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
  // a transaction of a quarter of WORKER_BATCH_SIZE: events come faster than small batches take them
  const state = new WorkerState(Math.max(1, Math.floor(settings.batchSize / 4)));
  const closing = new AbortController();
  // read at scrape time only: dead letters by kind and the oldest one's age (one queue for every shard)
  const deadLetterQueue = opened.closable(new Queue(DEAD_LETTER_QUEUE, { connection, prefix }));
  const deadLetterQueueErrors = RepeatedLog.of(deadLetterQueue, logger, 'dead-letter queue connection error', {
    level: 'warn',
  });
  metrics.observeDeadLetters(new DeadLetterRepository(deadLetterQueue));
  observeLedgerGauges(metrics, ds);
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
  const shardWorkers = new ShardWorkers({
    connection,
    prefix,
    shardCount,
    settings,
    logger,
    metrics,
    state,
    opened,
    pipeline,
    closing: closing.signal,
  });
  const { runtimes, workers, queues } = shardWorkers;
  for (const shard of shards) shardWorkers.add(shard);
  // the counts of the last window of each repeated-error log, even if the worker's close never ends
  opened.afterClose(() => [deadLetterQueueErrors, ...shardWorkers.logs].forEach((log) => log.flush()));
  const webhooks = startWebhooks(options, ds, metrics, opened, ingestBacklog(shardWorkers.queues, pipeline, state));
  // Fetch (and sweep gaps, send webhooks) only on the schema this code expects: until then nothing is written.
  void schema.current.then(() => {
    if (closing.signal.aborted) return;
    sweeper.start();
    shardWorkers.startFetching();
    if (options.stallCheck) void startStallCheck(o, closing.signal);
    webhooks?.start();
  });
  await Promise.all(workers.map((worker) => worker.waitUntilReady()));
  if (!pinned) shardWorkers.followLayouts(options.layoutPollMs ?? 10_000);
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

/** The stall check's scheduler and worker, closed with the worker; a failed start is logged, the next start retries. */
async function startStallCheck(o: Opening, closing: AbortSignal): Promise<void> {
  const { logger, config } = o.options;
  try {
    const scheduler = await startStallScheduler({
      connection: o.connection,
      prefix: config.queuePrefix,
      dataSource: o.ds,
      everyMs: o.settings.stallCheckMs,
      stallAfterMs: o.settings.stallAfterMs,
      logger: logger.child({ component: 'stall-check' }),
      closeTimeoutMs: o.settings.shutdownTimeoutMs,
    });
    if (closing.aborted) await scheduler.close();
    else o.opened.closable(scheduler);
  } catch (err) {
    logger.warn({ err }, 'stall check did not start: stalled plans are found by the other workers only');
  }
}

/** The webhook delivery loop, closed with the worker; undefined when WEBHOOKS_DELIVERY=off. */
function startWebhooks(
  options: StartWorkerOptions,
  ds: DataSource,
  metrics: WorkerMetrics,
  opened: Opened,
  ingest: IngestBacklog,
): WebhookDeliveryLoop | undefined {
  const config = options.webhooks ?? DEFAULT_WEBHOOK_CONFIG;
  if (!config.enabled) return undefined;
  const loop = new WebhookDeliveryLoop(ds, config, options.logger, new WebhookMetrics(metrics.registry), ingest);
  return opened.closable(loop);
}

/** How recent a large commit must be for the worker to count as ingesting a burst. */
const BURST_COMMIT_MS = 1_000;

/**
 * A burst the delivery loop gives way to: a large transaction committed within the last second
 * (events come faster than small batches take them), or more jobs wait unfetched than the worker
 * runs at once (its concurrency, which follows the jobs' size). A few jobs waiting is no burst:
 * small jobs at a steady rate are often caught between publish and fetch.
 */
function ingestBacklog(
  queues: readonly Queue[],
  pipeline: Pick<WorkerPipeline, 'concurrency'>,
  state: WorkerState,
): IngestBacklog {
  return {
    backlogged: async () =>
      state.recentLargeCommit(BURST_COMMIT_MS) || (await waitingJobs(queues)) > pipeline.concurrency.concurrency,
  };
}

/** Jobs waiting to be fetched, over every queue the worker consumes. */
async function waitingJobs(queues: readonly Queue[]): Promise<number> {
  const counts = await Promise.all(queues.map((q) => q.getJobCounts('wait', 'prioritized')));
  return counts.reduce((n, c) => n + (c.wait ?? 0) + (c.prioritized ?? 0), 0);
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
    waitingJobs: () => waitingJobs(r.queues),
    schema: () => r.schema.check(),
    lastProgressAt: () => r.state.lastProgressAt,
    stallMs: r.stallMs,
  });
}

/** The gauges read from the database at scrape time: stalled plans, pending approvals by age. */
function observeLedgerGauges(metrics: WorkerMetrics, ds: DataSource): void {
  metrics.observeStalledPlans(() => countStalledPlans(ds));
  const approvals = new ApprovalLedger(ds);
  metrics.observePendingApprovals(() => approvals.pendingByAge());
}
