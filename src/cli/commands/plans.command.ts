import type { Command } from 'commander';
import type { CliContext } from '../cli-context';
import { PLAN_LIST_STATUS_VALUES } from '../../queries/query-args';
import type { ListOptions } from './plans.actions';
import { lazyRequire } from '../../shared/lazy-require';

// The implementation (and with it TypeORM, BullMQ...) is loaded when a subcommand runs, so that
// `--help` and the registration of every command stay cheap (see main.ts).
const actions = lazyRequire<typeof import('./plans.actions')>(require, './plans.actions');

/** Registers `plans show|list|export|lineage` and returns the `plans` command so others can attach subcommands. */
export function registerPlans(program: Command, context: () => CliContext): Command {
  const plans = program.command('plans').description('read stored plans: timeline, list, export as a template');

  plans
    .command('show')
    .description(
      'one plan as a timeline: steps (status, agent, tokens, duration, error), handoffs, decisions, checkpoints',
    )
    .argument('<planId>', "the executor's plan id")
    .option('--json', 'print the plan, its parts and the timeline as JSON')
    .addHelpText('after', '\nExample:\n  plan-ledger plans show plan-42')
    .action(async (planId: string, opts: { json?: boolean }) => actions().showPlan(context(), planId, opts));

  plans
    .command('list')
    .description('plans, newest first')
    .option('--session <id>', "only this session's plans (default: every session)")
    .option(
      '--status <status>',
      `only this status: ${PLAN_LIST_STATUS_VALUES.join('|')} (stalled: running, no event within its deadline) (default: any)`,
    )
    .option('--agent <id>', 'only plans with a step of this agent (default: any)')
    .option('--from <iso>', 'only plans created at or after this instant (default: any time)')
    .option('--to <iso>', 'only plans created before this instant (exclusive)')
    .option('--limit <n>', 'page size, 1-1000 (default: 20)')
    .option('--offset <n>', 'plans to skip (default: 0)')
    .option('--cursor <cursor>', 'the page after the one that printed this cursor (nextCursor); instead of --offset')
    .option('--json', 'print { total, totalExact, limit, offset, hasMore, nextCursor, plans } as JSON')
    .addHelpText(
      'after',
      '\nThe total counts up to 1,000 plans ("1,000+" past that). Deep pages: follow the cursor each page prints.\n' +
        '\nExample:\n  plan-ledger plans list --session chat-7 --status failed --limit 5',
    )
    .action(async (opts: ListOptions) => actions().listCommand(context(), opts));

  plans
    .command('export')
    .description('a plan as a reusable template (query, steps, agents, dependencies; no runtime state), as JSON')
    .argument('<planId>', "the executor's plan id")
    .option('--json', 'accepted for symmetry: the template is always JSON')
    .addHelpText('after', '\nExample:\n  plan-ledger plans export plan-42 > template.json')
    .action(async (planId: string) => actions().exportCommand(context(), planId));

  plans
    .command('lineage')
    .description(
      'the fork tree a plan belongs to: its root, every fork and replay below it (kind, layer, checkpoint, status, steps, tokens, cost)',
    )
    .argument('<planId>', "the executor's plan id (any plan of the tree)")
    .option('--json', 'print { planId, rootId, plans, truncated, root: { ..., children } } as JSON')
    .addHelpText(
      'after',
      '\nSoft-deleted (retired) plans of the tree are shown as retired; the plan asked for must be live.\n\nExample:\n  plan-ledger plans lineage plan-42',
    )
    .action(async (planId: string, opts: { json?: boolean }) => actions().lineageCommand(context(), planId, opts));

  return plans;
}
