import type { CliContext } from '../cli-context';
import { limitHeapGrowth } from '../../shared/process-tuning';
import { createLogger } from '../../shared/logger';
import { loadWorkerConfig } from '../../worker/worker-config';
import { startWorker } from '../../worker/start-worker';
import { type WebhookConfig, webhookConfigFromEnv } from '../../webhooks/webhook-config';
import { loadRetentionPolicy, startRetentionScheduler } from '../../retention';
import { openDataSource } from '../../store/data-source';
import { CliError, EXIT } from '../exit-codes';
import type { Logger } from '../../shared/logger';
import { isRedisOomError } from '../../worker/redis-relief';
import { exitAfterLogs, stopWithin, waitForSignal } from '../process-supervisor';

/** Delay between attempts to start the retention scheduler while Redis is at maxmemory. */
const RETENTION_RETRY_MS = 30_000;

/**
 * The retention scheduler starts with an upsert, a write that a Redis at `maxmemory` (noeviction)
 * refuses. The worker must start all the same (draining the queue is what frees Redis), so on
 * Redis's OOM error the scheduler is started later, retried in the background; other errors still
 * stop the start-up.
 */
async function startRetentionWhenRedisHasRoom(
  start: () => Promise<{ close(): Promise<void> }>,
  logger: Logger,
): Promise<{ close(): Promise<void> }> {
  try {
    return await start();
  } catch (err) {
    if (!isRedisOomError(err)) throw err;
  }
  logger.warn(
    { retryMs: RETENTION_RETRY_MS },
    'Redis is at maxmemory: the retention scheduler will start once Redis has room; the worker starts now',
  );
  let started: { close(): Promise<void> } | undefined;
  let closed = false;
  let timer: NodeJS.Timeout | undefined;
  const attempt = () => {
    timer = setTimeout(() => {
      start().then(
        (s) => {
          if (closed) return void s.close();
          started = s;
          logger.info('retention scheduler started');
        },
        (err) => {
          if (!closed) attempt();
          if (!isRedisOomError(err)) logger.warn({ err }, 'retention scheduler could not start; retrying');
        },
      );
    }, RETENTION_RETRY_MS);
    timer.unref();
  };
  attempt();
  return {
    close: async () => {
      closed = true;
      clearTimeout(timer);
      await started?.close();
    },
  };
}

/** Runs until a signal; throws CliError (exit 1) when the start fails or the shutdown misses its deadline. */
export async function runWorkerCommand(ctx: CliContext, env: Record<string, string | undefined>): Promise<void> {
  const settings = loadWorkerConfig(env);
  const policy = loadRetentionPolicy(env);
  const webhooks = webhookSettings(env);
  // see WorkerConfig.heapGrowingPercent
  limitHeapGrowth(settings.heapGrowingPercent);
  // The worker is a service: its logs go to stdout at the configured level (the CLI's own logger is quieter).
  const logger = createLogger({ level: ctx.config.logLevel, base: { component: 'worker', pid: process.pid } });
  // Listening from the start: a SIGTERM while the worker or retention is still starting (retention
  // waits on Redis while Redis is down) is a shutdown, not a kill by the default handler.
  const signalled = waitForSignal();
  // One DataSource for the worker and retention: on SQLite every writer must share its write queue.
  let ds;
  let handle;
  let retention;
  try {
    ds = await openDataSource(ctx.config.database, { poolSize: settings.transactions + 3 });
    handle = await startWorker({ config: ctx.config, logger, settings, dataSource: ds, stallCheck: true, webhooks });
    const dataSource = ds;
    const retentionStarting = startRetentionWhenRedisHasRoom(
      () =>
        startRetentionScheduler({
          redisUrl: ctx.config.redisUrl,
          redisClusterNodes: ctx.config.redisClusterNodes,
          prefix: ctx.config.queuePrefix,
          dataSource,
          policy,
          logger: logger.child({ component: 'retention' }),
          closeTimeoutMs: settings.shutdownTimeoutMs,
        }),
      logger,
    );
    const first = await Promise.race([
      retentionStarting.then((started) => ({ started })),
      signalled.then((signal) => ({ signal })),
    ]);
    retention =
      'started' in first
        ? first.started
        : {
            // signalled while retention was starting: it is closed once started, within the deadline
            close: () =>
              Promise.race([
                retentionStarting.then(
                  (started) => started.close(),
                  () => undefined,
                ),
                new Promise<void>((r) => setTimeout(r, settings.shutdownTimeoutMs).unref()),
              ]),
          };
  } catch (err) {
    await handle?.close(settings.shutdownTimeoutMs).catch(() => undefined);
    if (ds?.isInitialized) await ds.destroy().catch(() => undefined);
    throw new CliError(`worker cannot start: ${(err as Error).message}`);
  }
  const signal = await signalled;
  logger.info({ signal }, 'signal received: shutting down');
  // Both at once, each within the deadline: a retention worker slow to close must not hold back the
  // events worker (whose jobs would then wait for their locks to expire). The watchdog: close() is
  // bounded, but a stuck driver call must not keep the process past its deadline.
  const [, { clean, unfinishedJobs }] = await stopWithin(
    {
      err: ctx.err,
      watchdogMs: settings.shutdownTimeoutMs + 3_000,
      watchdogMessage: `plan-ledger: worker did not close within ${settings.shutdownTimeoutMs} ms; exiting`,
      // a second signal means "now": the jobs in flight are redelivered after their locks expire
      secondSignalMessage: 'plan-ledger: second signal: exiting without waiting for in-flight jobs',
    },
    async () => {
      const closed = await Promise.all([
        retention.close().catch((err: Error) => logger.warn({ err }, 'retention scheduler did not close cleanly')),
        handle.close(settings.shutdownTimeoutMs),
      ]);
      await ds.destroy().catch((err: Error) => logger.warn({ err }, 'closing the database failed'));
      return closed;
    },
  );
  if (unfinishedJobs > 0) {
    // A hung driver call still holds its socket: exit rather than linger; BullMQ redelivers the jobs.
    ctx.err(
      `plan-ledger: shutdown deadline (${settings.shutdownTimeoutMs} ms) reached; ${unfinishedJobs} unfinished job${unfinishedJobs === 1 ? '' : 's'} will be redelivered`,
    );
    process.exit(EXIT.failed);
  }
  if (!clean) {
    // Nothing was in flight, nothing is handed back: only the goodbye to an unreachable Redis ran late.
    ctx.err(
      `plan-ledger: shutdown deadline (${settings.shutdownTimeoutMs} ms) reached with no job in flight; the Redis connections were dropped (is Redis reachable?)`,
    );
  }
  await exitAfterLogs(logger, EXIT.ok);
}

/** The WEBHOOKS_* settings; a wrong one is a configuration error (exit 2), named in one line. */
function webhookSettings(env: Record<string, string | undefined>): WebhookConfig {
  try {
    return webhookConfigFromEnv(env);
  } catch (err) {
    throw new CliError((err as Error).message, 'config');
  }
}
