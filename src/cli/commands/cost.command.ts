import type { Command } from 'commander';
import type { CliContext } from '../cli-context';
import type { ReconcileOptions } from './cost.actions';
import { lazyRequire } from '../../shared/lazy-require';

// The implementation (and with it TypeORM) is loaded when a subcommand runs (see main.ts).
const actions = lazyRequire<typeof import('./cost.actions')>(require, './cost.actions');

const collect = (value: string, previous: string[] | undefined) => [...(previous ?? []), value];

/** `cost reconcile`: the ledger against the provider's bill. */
export function registerCost(program: Command, context: () => CliContext): Command {
  const cost = program.command('cost').description("the ledger's cost against the provider's bill");
  cost
    .command('reconcile')
    .description(
      "compare the ledger with a provider's usage/cost export by UTC day and model: token coverage, money delta, what could not be attributed",
    )
    .option('--openai <file>', 'an OpenAI usage (completions) or costs export: JSON pages or CSV (repeatable)', collect)
    .option(
      '--anthropic <file>',
      'an Anthropic usage_report/messages or cost_report export: JSON pages or CSV (repeatable)',
      collect,
    )
    .option('--from <iso>', 'from this instant, inclusive (default: the first day of the export)')
    .option('--to <iso>', 'to this instant, exclusive (default: the day after the last day of the export)')
    .option('--fail-over <pct>', 'exit 3 when the cost delta or the token coverage gap is above this %')
    .option('--json', 'print JSON')
    .addHelpText(
      'after',
      `
A step counts on the UTC day it completed; a bill's row on the UTC day its bucket starts. Models
match by name without a snapshot date suffix (gpt-4o-2024-08-06 is gpt-4o). Nothing is fetched:
download the exports first (the providers' Admin/organization usage and cost APIs, one file per
page or all pages in one array).

Example:
  plan-ledger cost reconcile --anthropic usage.json --anthropic cost.json --from 2026-11-01 --to 2026-12-01 --fail-over 5`,
    )
    .action(async (opts: ReconcileOptions) => actions().runReconcile(context(), opts));
  return cost;
}
