import type { CliContext } from '../cli-context';
import { runDemo } from '../../demo/run-demo';

export interface DemoOptions {
  json?: boolean;
  pace: string;
}

export async function demoCommand(ctx: CliContext, opts: DemoOptions): Promise<void> {
  // the demo reports dead letters itself; keep the worker's warnings out of its progress lines
  const logger = ctx.config.logLevel === 'info' ? ctx.logger.child({}, { level: 'error' }) : ctx.logger;
  await runDemo({
    config: ctx.config,
    logger,
    out: ctx.out,
    progress: ctx.err,
    json: opts.json,
    paceMs: Math.max(0, Number(opts.pace) || 0),
  });
}
