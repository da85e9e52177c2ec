import type { Command } from 'commander';
import type { CliContext } from '../cli-context';
import { RETENTION_ENV_TEXT } from './retention.command';
import { lazyRequire } from '../../shared/lazy-require';

// The implementation (and with it TypeORM, BullMQ...) is loaded when a subcommand runs, so that
// `--help` and the registration of every command stay cheap (see main.ts).
const actions = lazyRequire<typeof import('./plans-restore.actions')>(require, './plans-restore.actions');

/**
 * Adds `restore` to an existing `plans` command group (another command file owns the group and
 * its show/list/export subcommands).
 */
export function registerPlansRestore(plans: Command, context: () => CliContext): void {
  plans
    .command('restore')
    .description(
      "undo the soft delete of a plan (every row it owns, and a fork's soft-deleted ancestors) during the grace period (RETENTION_GRACE_DAYS)",
    )
    .argument('<planId>', "the executor's plan id")
    .option('--json', 'print the outcome as JSON')
    .addHelpText('after', `${RETENTION_ENV_TEXT}\n\nExample:\n  plan-ledger plans restore plan-42`)
    .action(async (planId: string, opts: { json?: boolean }) => actions().plansRestore(context(), planId, opts));
}
