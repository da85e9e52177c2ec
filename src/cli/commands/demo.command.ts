import type { Command } from 'commander';
import type { CliContext } from '../cli-context';
import { runDemo } from '../../demo/run-demo';

export function registerDemo(program: Command, context: () => CliContext): void {
  program
    .command('demo')
    .description('run the whole flow on DATABASE_URL (default: a SQLite file) and a local Redis: migrate, worker, publisher, timeline')
    .option('--json', 'print the stored plan and dead letters as JSON')
    .option('--pace <ms>', 'pause between the executor events, in ms', '25')
    .addHelpText('after', '\nNeeds Redis (REDIS_URL, default redis://127.0.0.1:6379). Leaves the demo plan in the database and its poison event in the dead-letter queue, to explore with the commands it prints.')
    .action(async (opts: { json?: boolean; pace: string }) => {
      const ctx = context();
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
    });
}
