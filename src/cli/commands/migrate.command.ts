import type { Command } from 'commander';
import type { CliContext } from '../cli-context';
import type { MigrateOptions } from './migrate.actions';
import { lazyRequire } from '../../shared/lazy-require';

// The implementation (and with it TypeORM, BullMQ...) is loaded when a subcommand runs, so that
// `--help` and the registration of every command stay cheap (see main.ts).
const actions = lazyRequire<typeof import('./migrate.actions')>(require, './migrate.actions');

export function registerMigrate(program: Command, context: () => CliContext): void {
  program
    .command('migrate')
    .description('apply pending schema migrations to DATABASE_URL')
    .option('--revert-all', 'revert every applied migration (leaves only the migrations table)')
    .option('--print-sql', 'print the DDL of every migration for the configured dialect without connecting')
    .option('--status', 'list applied and pending migrations; changes nothing')
    .option('--json', 'print a JSON result instead of text')
    .addHelpText(
      'after',
      '\nExamples:\n  DATABASE_URL=postgres://postgres@127.0.0.1/app plan-ledger migrate\n  plan-ledger migrate --status --json\n  DATABASE_URL=mssql://sa:pw@host/db plan-ledger migrate --print-sql > schema.sql',
    )
    .action(async (opts: MigrateOptions) => actions().migrate(context(), opts));
}
