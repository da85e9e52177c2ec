import { randomBytes } from 'node:crypto';
import type { CliContext } from '../cli-context';
import { runDemo } from '../../demo/run-demo';
import { loadHttpConfig } from '../../http/http-config';
import { startHttpServer } from '../../http/start-http-server';

export interface DemoOptions {
  json?: boolean;
  pace: string;
  /** Serve the console on the demo's data until Ctrl-C. Default: when stdout is a terminal. */
  serve?: boolean;
}

export async function demoCommand(ctx: CliContext, opts: DemoOptions): Promise<void> {
  // the demo reports dead letters itself; keep the worker's warnings out of its progress lines
  const logger = ctx.config.logLevel === 'info' ? ctx.logger.child({}, { level: 'error' }) : ctx.logger;
  const result = await runDemo({
    config: ctx.config,
    logger,
    out: ctx.out,
    progress: ctx.err,
    json: opts.json,
    paceMs: Math.max(0, Number(opts.pace) || 0),
  });
  const serve = opts.serve ?? (process.stdout.isTTY === true && !opts.json);
  const page = `/#/plans/${encodeURIComponent(result.planId)}`;
  if (!serve) {
    if (!opts.json)
      ctx.out(`Console: npx plan-ledger demo --serve (or plan-ledger serve), then open http://127.0.0.1:8080${page}`);
    return;
  }
  // a key for this run only, read and admin: the person at this terminal is the operator
  const key = randomBytes(18).toString('base64url');
  const env = { HTTP_PORT: '8080', ...process.env, HTTP_ADMIN_KEYS: key, HTTP_READ_KEYS: '', HTTP_INGEST_KEYS: '' };
  let server;
  try {
    server = await startHttpServer({ config: ctx.config, settings: loadHttpConfig(env), logger });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
    server = await startHttpServer({
      config: ctx.config,
      settings: loadHttpConfig({ ...env, HTTP_PORT: '0' }),
      logger,
    });
  }
  ctx.out('');
  ctx.out(`Console: ${server.url}${page}`);
  ctx.out(`  sign in with the key ${key} (valid while this runs); Ctrl-C to stop`);
  const handle = server;
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  await handle.close();
}
