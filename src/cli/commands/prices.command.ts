import type { Command } from 'commander';
import type { CliContext } from '../cli-context';
import { EXIT_HELP } from '../exit-codes';
import { lazyRequire } from '../../shared/lazy-require';

// The implementation (and with it TypeORM) is loaded when a subcommand runs (see main.ts).
const actions = lazyRequire<typeof import('./prices.actions')>(require, './prices.actions');

/** `prices set|list|show|reprice`: negotiated prices, and repricing stored steps on request. */
export function registerPrices(program: Command, context: () => CliContext): Command {
  const prices = program
    .command('prices')
    .description('price overrides (negotiated or internal prices) and repricing of stored steps on request');
  prices
    .command('set')
    .description('add a price override: it prices the steps stored from now on whose time is at or after --from')
    .requiredOption('--model <pattern>', 'model name, * matches any run of characters (case-insensitive), e.g. gpt-4o*')
    .requiredOption('--from <iso>', 'effective from this instant (a bare date is midnight UTC)')
    .requiredOption('--input <usd>', 'USD per million input tokens, e.g. 2.1')
    .requiredOption('--output <usd>', 'USD per million output tokens')
    .option('--provider <id>', 'only steps of this provider (default: any)')
    .option('--cache-read <usd>', 'USD per million cache-read tokens (default: the input price)')
    .option('--cache-write <usd>', 'USD per million cache-write tokens (default: the input price)')
    .option('--currency <code>', 'USD, the only currency costs are kept in', 'USD')
    .option('--json', 'print the stored override as JSON')
    .addHelpText(
      'after',
      `
Steps already stored keep their cost; an override dated in the past reaches them only through
plan-ledger prices reprice. Workers read overrides every 5 s: set one before its date.

Example:
  plan-ledger prices set --model 'gpt-4o*' --provider openai --from 2026-12-01 --input 2.1 --output 8.4
${EXIT_HELP}`,
    )
    .action(async (opts: Record<string, string | boolean | undefined>) => actions().pricesSet(context(), opts));
  prices
    .command('list')
    .description('every price override, oldest effective date first')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) => actions().pricesList(context(), opts));
  prices
    .command('show')
    .description('one price override')
    .argument('<id>', 'its id (ovr-...)')
    .option('--json', 'print JSON')
    .action(async (id: string, opts: { json?: boolean }) => actions().pricesShow(context(), id, opts));
  prices
    .command('reprice')
    .description('price again the steps finished in [--from, --to), at the prices in force now for their time')
    .requiredOption('--from <iso>', 'steps finished at or after this instant')
    .requiredOption('--to <iso>', 'steps finished before this instant')
    .option('--model <name>', 'only steps of this model (exact name)')
    .option('--dry-run', 'show old and new totals per model; change nothing')
    .option('--yes', 'change the steps and their plans’ totals, and write an audit row')
    .option('--json', 'print JSON')
    .addHelpText(
      'after',
      `
Without --dry-run it needs --yes. Only the steps it names change (a reported cost never does),
with the totals of their plans; each run with --yes writes one row to price_reprices.

Example:
  plan-ledger prices reprice --from 2026-11-01 --to 2026-12-01 --model gpt-4o --dry-run
${EXIT_HELP}`,
    )
    .action(async (opts: Record<string, string | boolean | undefined>) => actions().pricesReprice(context(), opts));
  return prices;
}
