import type { Command } from 'commander';
import type { CliContext } from '../cli-context';
import { COST_DIMENSIONS, TOKEN_DIMENSIONS } from '../../queries/query-args';
import type { AnalyticsOptions, ReportName } from './analytics.actions';
import type { RebuildOptions } from './rollups.actions';
import { lazyRequire } from '../../shared/lazy-require';

// The implementation (and with it TypeORM, BullMQ...) is loaded when a subcommand runs, so that
// `--help` and the registration of every command stay cheap (see main.ts).
const actions = lazyRequire<typeof import('./analytics.actions')>(require, './analytics.actions');
const rollups = lazyRequire<typeof import('./rollups.actions')>(require, './rollups.actions');

const RANGE_HELP = `
--from/--to select plans by creation time, from inclusive, to exclusive, in UTC; a bare date is
midnight UTC (--from 2026-02-01 --to 2026-03-01 is February). Every report counts the same plans.`;

/** `analytics daily|agents|handoffs|tokens`: the product's analytics queries, plus tokens for billing. */
export function registerAnalytics(program: Command, context: () => CliContext): Command {
  const analytics = program
    .command('analytics')
    .description('plans per day, agent usage, handoff patterns, tokens and cost for billing');
  const add = (name: ReportName, description: string) =>
    analytics
      .command(name)
      .description(description)
      .option('--from <iso>', 'plans created at or after this instant (default: no lower bound)')
      .option('--to <iso>', 'plans created before this instant (default: no upper bound)')
      .option('--json', 'print JSON')
      .option('--csv', 'print CSV with a header line')
      .addHelpText('after', RANGE_HELP)
      .action(async (opts: AnalyticsOptions) => actions().runReport(context(), name, opts));

  add('daily', 'plans per UTC day: total, completed, failed, cancelled, in progress (newest day first)');
  add(
    'agents',
    'per agent: steps, completed, failed, skipped, success rate = completed/(completed+failed), average tokens per step that ran',
  );
  add('handoffs', 'handoff matrix: count per (from agent, to agent, reason), most frequent first');
  add('tokens', 'input/output tokens per session, plan, agent and model, for billing')
    .option('--by <dimension>', `only one breakdown: ${TOKEN_DIMENSIONS.join('|')} (default: all four)`)
    .option('--limit <n>', 'lines per page of the session and plan lists, 1-1000 (default 100)')
    .option('--cursor <cursor>', 'the page after the one that printed this cursor (page.nextCursor)');
  add(
    'cost',
    'cost in USD per model, agent, session or plan: each step at the price in force when it was stored; unpriced steps counted apart',
  )
    .option('--by <dimension>', `the breakdown: ${COST_DIMENSIONS.join('|')} (default: model)`)
    .addHelpText(
      'after',
      `
A step's cost was fixed when it was stored: the provider's reported cost, else a price override
(plan-ledger prices), else the bundled price table at the step's time. A step whose model has no
known price is "unpriced": counted in unpriced_steps, never as zero.`,
    );
  analytics
    .command('rebuild-rollups')
    .description('sum the analytics rollups again from the stored plans, steps and handoffs (all days, or --from/--to)')
    .option('--from <date>', 'the first UTC day rebuilt, e.g. 2026-02-01 (default: the first)')
    .option('--to <date>', 'the UTC day after the last rebuilt (exclusive; default: none)')
    .option('--json', 'print JSON: from, to, plans, seconds')
    .addHelpText(
      'after',
      `
The reports read whole UTC days from the rollups, which the worker, retention, restore, erasure
and reprice keep in the transactions that change the plans, and migrate fills for stored plans.
Rebuild them after rows were loaded or changed behind the worker's back. The days' rows are
deleted and summed again a page of plans at a time in one transaction (memory: one page); run it
with the worker stopped. With --from or --to, each session's sums of all days (the tokens report's
session order) are left as they are: rebuild all days to sum those again. Progress goes to stderr.`,
    )
    .action(async (opts: RebuildOptions) => rollups().runRebuildRollups(context(), opts));
  return analytics;
}
