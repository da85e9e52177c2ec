import type { Command } from 'commander';
import type { CliContext } from '../cli-context';
import { getPlanView } from '../../queries/plan-timeline.query';
import { formatPlanView } from '../../queries/plan-timeline.format';
import { listPlans, PlanPage } from '../../queries/plan-list.query';
import { exportPlanTemplate } from '../../queries/plan-export.query';
import { parseLimit, parseOffset, parsePlanStatus, PLAN_STATUS_VALUES, requireId } from '../../queries/query-args';
import { formatInt, renderTable } from '../../queries/text-output';
import { parseArgs, printJson, withReadSource } from './read-command';

interface ListOptions {
  session?: string;
  status?: string;
  limit?: string;
  offset?: string;
  json?: boolean;
}

/** Registers `plans show|list|export` and returns the `plans` command so others can attach subcommands. */
export function registerPlans(program: Command, context: () => CliContext): Command {
  const plans = program.command('plans').description('read stored plans: timeline, list, export as a template');

  plans
    .command('show')
    .description("one plan as a timeline: steps (status, agent, tokens, duration, error), handoffs, decisions, checkpoints")
    .argument('<planId>', 'the executor\'s plan id')
    .option('--json', 'print the plan, its parts and the timeline as JSON')
    .addHelpText('after', '\nExample:\n  plan-ledger plans show plan-42')
    .action(async (planId: string, opts: { json?: boolean }) => showPlan(context(), planId, opts));

  plans
    .command('list')
    .description('plans, newest first')
    .option('--session <id>', 'only this session\'s plans (default: every session)')
    .option('--status <status>', `only this status: ${PLAN_STATUS_VALUES.join('|')} (default: any)`)
    .option('--limit <n>', 'page size, 1-1000 (default: 20)')
    .option('--offset <n>', 'plans to skip (default: 0)')
    .option('--json', 'print { total, limit, offset, plans } as JSON')
    .addHelpText('after', '\nExample:\n  plan-ledger plans list --session chat-7 --status failed --limit 5')
    .action(async (opts: ListOptions) => listCommand(context(), opts));

  plans
    .command('export')
    .description('a plan as a reusable template (query, steps, agents, dependencies; no runtime state), as JSON')
    .argument('<planId>', 'the executor\'s plan id')
    .option('--json', 'accepted for symmetry: the template is always JSON')
    .addHelpText('after', '\nExample:\n  plan-ledger plans export plan-42 > template.json')
    .action(async (planId: string) => exportCommand(context(), planId));

  return plans;
}

export async function showPlan(ctx: CliContext, rawId: string, opts: { json?: boolean }): Promise<void> {
  const planId = parseArgs(() => requireId('planId', rawId));
  const view = await withReadSource(ctx, 'plans show', (ds) => getPlanView(ds, planId));
  if (opts.json) return printJson(ctx, view);
  for (const line of formatPlanView(view)) ctx.out(line);
}

export async function listCommand(ctx: CliContext, opts: ListOptions): Promise<void> {
  const filter = parseArgs(() => ({
    sessionId: opts.session === undefined ? undefined : requireId('--session', opts.session),
    statuses: opts.status === undefined ? undefined : [parsePlanStatus(opts.status)],
    limit: parseLimit(opts.limit),
    offset: parseOffset(opts.offset),
  }));
  const page = await withReadSource(ctx, 'plans list', (ds) => listPlans(ds, filter));
  if (opts.json) return printJson(ctx, page);
  for (const line of formatPlanPage(page)) ctx.out(line);
}

export function formatPlanPage(page: PlanPage): string[] {
  if (page.plans.length === 0) return [page.total === 0 ? 'no plans match' : `no plans past offset ${page.offset} (${page.total} match)`];
  const rows = page.plans.map((p) => [
    p.planId,
    p.sessionId,
    p.status,
    `${p.completedSteps}/${p.totalSteps}`,
    p.failedSteps,
    `${formatInt(p.inputTokens)}/${formatInt(p.outputTokens)}`,
    p.createdAt,
    p.query,
  ]);
  const last = page.offset + page.plans.length;
  const more = last < page.total ? ` (next page: --offset ${last})` : '';
  return [...renderTable(['PLAN', 'SESSION', 'STATUS', 'DONE', 'FAILED', 'TOKENS in/out', 'CREATED', 'QUERY'], rows, 50), `plans ${page.offset + 1}-${last} of ${page.total}${more}`];
}

export async function exportCommand(ctx: CliContext, rawId: string): Promise<void> {
  const planId = parseArgs(() => requireId('planId', rawId));
  printJson(ctx, await withReadSource(ctx, 'plans export', (ds) => exportPlanTemplate(ds, planId)));
}
