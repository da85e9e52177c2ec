import type { CliContext } from '../cli-context';
import { getPlanView } from '../../queries/plan-timeline.query';
import { formatPlanView } from '../../queries/plan-timeline.format';
import { listPlans, PlanPage } from '../../queries/plan-list.query';
import { exportPlanTemplate } from '../../queries/plan-export.query';
import { formatPlanLineage, getPlanLineage } from '../../queries/plan-lineage.query';
import { parseDateRange, parseLimit, parseOffset, parsePlanStatus, requireId } from '../../queries/query-args';
import { formatInt, renderTable } from '../../queries/text-output';
import { parseArgs, printJson, withReadSource } from './read-command';

export interface ListOptions {
  session?: string;
  status?: string;
  agent?: string;
  from?: string;
  to?: string;
  limit?: string;
  offset?: string;
  json?: boolean;
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
    agentId: opts.agent === undefined ? undefined : requireId('--agent', opts.agent),
    created: parseDateRange(opts.from, opts.to),
    limit: parseLimit(opts.limit),
    offset: parseOffset(opts.offset),
  }));
  const page = await withReadSource(ctx, 'plans list', (ds) => listPlans(ds, filter));
  if (opts.json) return printJson(ctx, page);
  for (const line of formatPlanPage(page)) ctx.out(line);
}

export function formatPlanPage(page: PlanPage): string[] {
  if (page.plans.length === 0)
    return [page.total === 0 ? 'no plans match' : `no plans past offset ${page.offset} (${page.total} match)`];
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
  return [
    ...renderTable(['PLAN', 'SESSION', 'STATUS', 'DONE', 'FAILED', 'TOKENS in/out', 'CREATED', 'QUERY'], rows, 50),
    `plans ${page.offset + 1}-${last} of ${page.total}${more}`,
  ];
}

export async function exportCommand(ctx: CliContext, rawId: string): Promise<void> {
  const planId = parseArgs(() => requireId('planId', rawId));
  printJson(ctx, await withReadSource(ctx, 'plans export', (ds) => exportPlanTemplate(ds, planId)));
}

export async function lineageCommand(ctx: CliContext, rawId: string, opts: { json?: boolean }): Promise<void> {
  const planId = parseArgs(() => requireId('planId', rawId));
  const lineage = await withReadSource(ctx, 'plans lineage', (ds) => getPlanLineage(ds, planId));
  if (opts.json) return printJson(ctx, lineage);
  for (const line of formatPlanLineage(lineage)) ctx.out(line);
}
