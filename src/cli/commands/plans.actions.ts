import { type CliContext, printJson } from '../cli-context';
import { getPlanView } from '../../queries/plan-timeline.query';
import { formatPlanView } from '../../queries/plan-timeline.format';
import { listPlans, PlanPage, parsePlanCursor, planStatusFilter } from '../../queries/plan-list.query';
import { exportPlanTemplate } from '../../queries/plan-export.query';
import { formatPlanLineage, getPlanLineage } from '../../queries/plan-lineage.query';
import { parseDateRange, parseLimit, parseOffset, requireId } from '../../queries/query-args';
import { QueryArgumentError } from '../../queries/query-errors';
import { formatInt, renderTable } from '../../queries/text-output';
import { withReadSource } from './read-command';

export interface ListOptions {
  session?: string;
  status?: string;
  agent?: string;
  from?: string;
  to?: string;
  limit?: string;
  offset?: string;
  cursor?: string;
  json?: boolean;
}

export async function showPlan(ctx: CliContext, rawId: string, opts: { json?: boolean }): Promise<void> {
  const planId = requireId('planId', rawId);
  const view = await withReadSource(ctx, 'plans show', (ds) => getPlanView(ds, planId));
  if (opts.json) return printJson(ctx, view);
  for (const line of formatPlanView(view)) ctx.out(line);
}

export async function listCommand(ctx: CliContext, opts: ListOptions): Promise<void> {
  const filter = {
    sessionId: opts.session === undefined ? undefined : requireId('--session', opts.session),
    ...(opts.status === undefined ? {} : planStatusFilter(opts.status)),
    agentId: opts.agent === undefined ? undefined : requireId('--agent', opts.agent),
    created: parseDateRange(opts.from, opts.to),
    limit: parseLimit(opts.limit),
    offset: parseOffset(opts.offset),
    cursor: parseCursorOption(opts.cursor, opts.offset),
  };
  const page = await withReadSource(ctx, 'plans list', (ds) => listPlans(ds, filter));
  if (opts.json) return printJson(ctx, page);
  for (const line of formatPlanPage(page, filter.cursor !== undefined)) ctx.out(line);
}

/** `--cursor`, which replaces `--offset`: both at once is a usage error. */
function parseCursorOption(cursor: string | undefined, offset: string | undefined) {
  if (cursor === undefined) return undefined;
  if (offset !== undefined) throw new QueryArgumentError('--cursor', 'give --cursor or --offset, not both');
  return parsePlanCursor(cursor);
}

/** "1,000+" when the count stopped at its cap. */
export function planTotalText(page: Pick<PlanPage, 'total' | 'totalExact'>): string {
  return `${formatInt(page.total)}${page.totalExact ? '' : '+'}`;
}

/** The page as a table and a line saying where it is; `afterCursor`: a page asked for by --cursor. */
export function formatPlanPage(page: PlanPage, afterCursor = false): string[] {
  if (page.plans.length === 0)
    return [page.total === 0 ? 'no plans match' : `no plans past this page (${planTotalText(page)} match)`];
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
  const more = page.nextCursor ? ` (next page: --cursor ${page.nextCursor})` : '';
  const shown = afterCursor
    ? `${page.plans.length} plans after the cursor`
    : `plans ${page.offset + 1}-${page.offset + page.plans.length}`;
  return [
    ...renderTable(['PLAN', 'SESSION', 'STATUS', 'DONE', 'FAILED', 'TOKENS in/out', 'CREATED', 'QUERY'], rows, 50),
    `${shown} of ${planTotalText(page)}${more}`,
  ];
}

export async function exportCommand(ctx: CliContext, rawId: string): Promise<void> {
  const planId = requireId('planId', rawId);
  printJson(ctx, await withReadSource(ctx, 'plans export', (ds) => exportPlanTemplate(ds, planId)));
}

export async function lineageCommand(ctx: CliContext, rawId: string, opts: { json?: boolean }): Promise<void> {
  const planId = requireId('planId', rawId);
  const lineage = await withReadSource(ctx, 'plans lineage', (ds) => getPlanLineage(ds, planId));
  if (opts.json) return printJson(ctx, lineage);
  for (const line of formatPlanLineage(lineage)) ctx.out(line);
}
