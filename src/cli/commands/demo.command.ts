import type { Command } from 'commander';
import type { CliContext } from '../cli-context';
import type { DemoOptions } from './demo.actions';
import { lazyRequire } from '../../shared/lazy-require';

// The implementation (and with it TypeORM, BullMQ...) is loaded when a subcommand runs, so that
// `--help` and the registration of every command stay cheap (see main.ts).
const actions = lazyRequire<typeof import('./demo.actions')>(require, './demo.actions');

export function registerDemo(program: Command, context: () => CliContext): void {
  program
    .command('demo')
    .description(
      'run the whole flow on DATABASE_URL (default: a SQLite file) and a local Redis: migrate, worker, publisher, timeline',
    )
    .option('--json', 'print the stored plan and dead letters as JSON')
    .option('--pace <ms>', 'pause between the executor events, in ms', '25')
    .option('--serve', 'then serve the console on the demo data until Ctrl-C (default when stdout is a terminal)')
    .option('--no-serve', 'exit after the report')
    .addHelpText(
      'after',
      '\nNeeds Redis (REDIS_URL, default redis://127.0.0.1:6379). Leaves the demo plan in the database and its poison event in the dead-letter queue, to explore with the commands it prints, or in the console it serves (HTTP_PORT, default 8080, else any free port).',
    )
    .action(async (opts: DemoOptions) => actions().demoCommand(context(), opts));
}
