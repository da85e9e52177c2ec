import type { CliContext } from '../cli-context';
import { loadHttpConfig } from '../../http/http-config';
import { createLogger } from '../../shared/logger';
import { CliError } from '../exit-codes';
import { stopWithin, waitForSignal } from '../process-supervisor';
import { lazyRequire } from '../../shared/lazy-require';
import { parseAllowance } from '../../webhooks/webhook-target';

const httpServer = lazyRequire<typeof import('../../http/start-http-server')>(require, '../../http/start-http-server');

export async function runServeCommand(ctx: CliContext, env: Record<string, string | undefined>): Promise<void> {
  const settings = loadHttpConfig(env);
  let webhookAllowPrivate;
  try {
    webhookAllowPrivate = parseAllowance(env.WEBHOOKS_ALLOW_PRIVATE);
  } catch (err) {
    throw new CliError((err as Error).message, 'usage');
  }
  const logger = createLogger({ level: ctx.config.logLevel, base: { component: 'serve', pid: process.pid } });
  const { startHttpServer } = httpServer();
  let handle;
  try {
    handle = await startHttpServer({ config: ctx.config, settings, logger, webhookAllowPrivate });
  } catch (err) {
    throw new CliError(`serve cannot start: ${(err as Error).message}`);
  }
  const signal = await waitForSignal();
  logger.info({ signal }, 'signal received: shutting down');
  const server = handle;
  const { flushed } = await stopWithin(
    {
      err: ctx.err,
      watchdogMs: settings.shutdownTimeoutMs + 2_000,
      watchdogMessage: `plan-ledger: serve did not close within ${settings.shutdownTimeoutMs} ms; exiting (accepted events not yet in Redis stay in ${settings.journalDir})`,
    },
    () => server.close(),
  );
  logger.info({ flushed }, 'serve stopped');
  logger.flush();
}
