import type { Command } from 'commander';
import type { CliContext } from '../cli-context';
import { ConfigError } from '../../config/config';
import { HTTP_ENV_HELP, loadHttpConfig } from '../../http/http-config';
import { createLogger } from '../../shared/logger';
import { CliError, EXIT } from '../exit-codes';

const HELP = `
Serve environment (also DATABASE_URL, REDIS_URL, QUEUE_PREFIX, LOG_LEVEL):
${HTTP_ENV_HELP.map(([name, help]) => `  ${name.padEnd(26)}${help}`).join('\n')}

Routes: POST /v1/events (ingest scope); GET /v1/plans[/:planId[/export|/steps/:step/output]],
/v1/sessions/:sessionId/active|history, /v1/workflows/:planId/resume-point,
/v1/analytics/daily|agents|handoffs|tokens (read scope); GET /v1/openapi.json describes them all;
/healthz and /metrics need no key. Keys go in "Authorization: Bearer <key>" and are never logged.
Logs: one JSON line per request on stdout. Stops on SIGTERM/SIGINT: new batches get 503, requests in
flight are answered, accepted events are flushed to Redis (or kept in HTTP_JOURNAL_DIR).

Example:
  HTTP_INGEST_KEYS=$(openssl rand -hex 24) HTTP_READ_KEYS=$(openssl rand -hex 24) plan-ledger serve`;

/** `plan-ledger serve`: the HTTP API. Fastify is loaded only here, so other commands start without it. */
export function registerServe(program: Command, context: () => CliContext): void {
  program
    .command('serve')
    .description('HTTP API for executors in any language: POST /v1/events, the read endpoints, /v1/openapi.json')
    .addHelpText('after', HELP)
    .action(async () => {
      const ctx = context();
      await runServeCommand(ctx, ctx.env);
    });
}

export async function runServeCommand(ctx: CliContext, env: Record<string, string | undefined>): Promise<void> {
  let settings;
  try {
    settings = loadHttpConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) throw new CliError(err.message, EXIT.usage);
    throw err;
  }
  const logger = createLogger({ level: ctx.config.logLevel, base: { component: 'serve', pid: process.pid } });
  // require, not import(): loaded on demand from both the tsx sources and the compiled CommonJS
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { startHttpServer } = require('../../http/start-http-server') as typeof import('../../http/start-http-server');
  let handle;
  try {
    handle = await startHttpServer({ config: ctx.config, settings, logger });
  } catch (err) {
    throw new CliError(`serve cannot start: ${(err as Error).message}`, EXIT.failed);
  }
  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'));
    process.once('SIGINT', () => resolve('SIGINT'));
  });
  logger.info({ signal }, 'signal received: shutting down');
  const watchdog = setTimeout(() => {
    ctx.err(`plan-ledger: serve did not close within ${settings.shutdownTimeoutMs} ms; exiting (accepted events not yet in Redis stay in ${settings.journalDir})`);
    process.exit(EXIT.failed);
  }, settings.shutdownTimeoutMs + 2_000);
  const { flushed } = await handle.close();
  clearTimeout(watchdog);
  logger.info({ flushed }, 'serve stopped');
  logger.flush();
}
