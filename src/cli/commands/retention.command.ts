import type { Command } from 'commander';
import type { CliContext } from '../cli-context';
import { RETENTION_ENV_HELP } from '../../retention/retention-config';
import type { RunOptions } from './retention.actions';
import { lazyRequire } from '../../shared/lazy-require';

// The implementation (and with it TypeORM, BullMQ...) is loaded when a subcommand runs, so that
// `--help` and the registration of every command stay cheap (see main.ts).
const actions = lazyRequire<typeof import('./retention.actions')>(require, './retention.actions');

export const RETENTION_ENV_TEXT = `\nRetention policy (environment):\n${RETENTION_ENV_HELP.map(([name, help]) => `  ${name.padEnd(26)}${help}`).join('\n')}`;

export function registerRetention(program: Command, context: () => CliContext): void {
  const retention = program
    .command('retention')
    .description(
      "retire old plans: soft delete past retention, purge after the grace period, expire finished workflows' DAGs",
    );
  retention
    .command('run')
    .description(
      'run retention once now with the RETENTION_* policy and report, per table, what it did (the worker also runs it on RETENTION_CRON)',
    )
    .option('--dry-run', 'report what would be soft-deleted, expired and purged; change nothing, lock nothing')
    .option('--json', 'print the report as one JSON object')
    .addHelpText(
      'after',
      `${RETENTION_ENV_TEXT}\n\nExamples:\n  plan-ledger retention run --dry-run\n  RETENTION_COMPLETED_DAYS=14 plan-ledger retention run --json`,
    )
    .action(async (opts: RunOptions) => actions().retentionRun(context(), opts));
}
