import { Queue } from 'bullmq';
import type { DataSource } from 'typeorm';
import { DeadLetterService } from '../dead-letters/dead-letter.service';
import { createRedis, RedisClient } from '../queue/connect-redis';
import { DEAD_LETTER_QUEUE, EVENTS_QUEUE } from '../queue/queue-names';
import { queueShards } from '../queue/queue-shards';
import { ApprovalWakeups } from '../queue/approval-signals';
import { PlanEventStore } from '../store/plan-event-store';
import type { AppConfig } from '../config/config';
import { PlanEventPublisher } from '../publisher';
import type { Logger } from '../shared/logger';
import { openDataSource } from '../store/data-source';
import { workerVersion } from '../worker/worker-version';
import type { HttpConfig } from './http-config';
import { buildHttpServer, BuiltHttpServer, type HttpServerDeps } from './http-server';
import { RepeatedLog } from '../shared/repeated-log';
import { ApiKeys } from '../shared/api-keys';
import { lazyRequire } from '../shared/lazy-require';
import type { OtlpGrpcServer } from './otlp-grpc';

const otlpGrpc = lazyRequire<typeof import('./otlp-grpc')>(require, './otlp-grpc');

export interface HttpServerHandle {
  /** The bound address, e.g. `http://127.0.0.1:8080`. */
  url: string;
  port: number;
  /** The OTLP/gRPC receiver's port, when OTLP_GRPC_PORT is set. */
  grpcPort: number | undefined;
  server: BuiltHttpServer;
  /** Resolves true once every accepted event is in Redis (the server publisher's `flush`). */
  flush(timeoutMs?: number): Promise<boolean>;
  /**
   * Stops taking batches (503), answers in-flight requests, flushes the publisher (what Redis cannot take stays in
   * the journal), closes the database.
   */
  close(): Promise<{ flushed: boolean }>;
}

/** `webhookAllowPrivate` (WEBHOOKS_ALLOW_PRIVATE) and `approvalRereadMs` go to the app as they are. */
export interface StartHttpServerOptions extends Pick<HttpServerDeps, 'webhookAllowPrivate' | 'approvalRereadMs'> {
  config: Readonly<AppConfig>;
  settings: Readonly<HttpConfig>;
  logger: Logger;
}

/** Composition root of `plan-ledger serve`: opens the database and the publisher, then listens. */
export async function startHttpServer(opts: StartHttpServerOptions): Promise<HttpServerHandle> {
  const { config, settings, logger, ...appOptions } = opts;
  let ds: DataSource | undefined;
  let publisher: PlanEventPublisher | undefined;
  let redis: RedisClient | undefined;
  let wakeups: ApprovalWakeups | undefined;
  const queues: Queue[] = [];
  let server: BuiltHttpServer | undefined;
  let grpc: OtlpGrpcServer | undefined;
  const closeQueues = async () => {
    await Promise.allSettled(queues.map((q) => q.close()));
    await redis?.quit().catch(() => redis?.disconnect());
    wakeups?.close();
  };
  try {
    ds = await openDataSource(config.database, { poolSize: 4 });
    // the console's dead letters and queue health: one connection, not awaited (serve takes
    // events while Redis is down; these pages then answer an error after 5 s)
    redis = createRedis(config, 'publisher', { commandTimeoutMs: 5_000 });
    redis.on('error', () => undefined);
    // held approval reads are woken by the worker's messages: a subscriber connection of its own,
    // reconnecting forever and not awaited (until it subscribes, held reads re-read every 10 s)
    const subscriber = createRedis(config, 'worker');
    subscriber.on('error', () => undefined);
    wakeups = new ApprovalWakeups(subscriber, config.queuePrefix);
    wakeups.start().catch((err) => logger.warn({ err }, 'could not subscribe to the approval channels'));
    const queueOpts = { connection: redis, prefix: config.queuePrefix };
    const deadLetterQueue = new Queue(DEAD_LETTER_QUEUE, queueOpts);
    // one queue per shard (QUEUE_SHARDS): health counts each, replay sends to the shard of a plan
    const eventShards = queueShards(config.queuePrefix, config.queueShards).map((s) => ({
      shard: String(s.index),
      queue: new Queue(EVENTS_QUEUE, { ...queueOpts, prefix: s.prefix }),
    }));
    const eventsQueue = eventShards[0].queue;
    queues.push(deadLetterQueue);
    for (const s of eventShards) queues.push(s.queue);
    const queueErrors = new RepeatedLog(logger, 'console queue connection error', { level: 'warn' });
    for (const q of queues) q.on('error', (err) => queueErrors.report(err));
    const deadLetters = new DeadLetterService({
      deadLetters: deadLetterQueue,
      events: eventsQueue,
      eventShards: eventShards.map((s) => s.queue),
      storedEvents: new PlanEventStore(ds, logger, { rowCacheBytes: 0 }),
      logger: logger.child({ component: 'console' }),
    });
    publisher = new PlanEventPublisher({
      redisUrl: config.redisUrl,
      redisClusterNodes: config.redisClusterNodes,
      queuePrefix: config.queuePrefix,
      queueShards: config.queueShards,
      journalDir: settings.journalDir,
      maxJournalBytes: settings.maxJournalBytes,
      maxBufferedEvents: settings.maxBufferedEvents,
      logger: logger.child({ component: 'publisher' }),
    });
    server = await buildHttpServer({
      ...appOptions,
      settings,
      dataSource: ds,
      publisher,
      logger,
      version: workerVersion(),
      approvalWakeups: wakeups,
      queues: { deadLetters, deadLetterQueue, eventsQueue, eventShards, redis, queuePrefix: config.queuePrefix },
    });
    if (settings.otlpGrpcPort !== undefined) grpc = await startGrpc(settings, server, logger);
    await server.app.listen({ host: settings.host, port: settings.port });
    const address = server.app.server.address();
    const port = typeof address === 'object' && address !== null ? address.port : settings.port;
    const url = `http://${settings.host.includes(':') ? `[${settings.host}]` : settings.host}:${port}`;
    logger.info(
      { url, grpcPort: grpc?.port, ingestKeys: settings.ingestKeys.length, readKeys: settings.readKeys.length },
      'plan-ledger serve listening',
    );
    const openDs = ds;
    const openPublisher = publisher;
    const openServer = server;
    const openGrpc = grpc;
    return {
      url,
      port,
      grpcPort: openGrpc?.port,
      server: openServer,
      flush: (timeoutMs = 10_000) => openPublisher.flush(timeoutMs),
      async close() {
        openServer.beginClosing();
        // gRPC calls in flight are answered first: the assembler they hand spans to closes with the app
        await openGrpc?.close();
        await openServer.app.close();
        const closed = await openPublisher.close(settings.shutdownTimeoutMs);
        await openServer.closeHeldSpans();
        await closeQueues();
        queueErrors.flush(); // the count of its last window
        await openDs.destroy().catch((err: Error) => logger.warn({ err }, 'closing the database failed'));
        return { flushed: closed.flushed };
      },
    };
  } catch (err) {
    await grpc?.close();
    await server?.app.close().catch(() => undefined);
    await publisher?.close(1_000).catch(() => undefined);
    await closeQueues();
    if (ds?.isInitialized) await ds.destroy().catch(() => undefined);
    throw err;
  }
}

/** The OTLP/gRPC receiver over the HTTP server's OTLP ingest, with the same ingest keys. */
function startGrpc(settings: Readonly<HttpConfig>, server: BuiltHttpServer, logger: Logger): Promise<OtlpGrpcServer> {
  return otlpGrpc().startOtlpGrpcServer({
    settings,
    otlp: server.otlp,
    keys: new ApiKeys(settings.ingestKeys, settings.readKeys, settings.adminKeys, settings.approveKeys),
    metrics: server.metrics,
    logger,
  });
}
