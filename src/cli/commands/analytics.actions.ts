import { type CliContext, printJson } from '../cli-context';
import { agentUsage, echoRange, handoffPatterns, plansPerDay } from '../../queries/analytics.query';
import { TOKEN_DIMENSIONS, TokenDimension, tokenUsage, TokenUsage } from '../../queries/token-usage.query';
import { costUsage, type CostUsage, type ReportedVsPriced } from '../../queries/cost-usage.query';
import { DateRange, parseCostDimension, parseCount, parseDateRange } from '../../queries/query-args';
import { DEFAULT_TOKEN_PAGE } from '../../queries/token-pages';
import { QueryArgumentError } from '../../queries/query-errors';
import { Cell, formatInt, formatPercent, renderTable, toCsv } from '../../queries/text-output';
import { outputFormat, withReadSource } from './read-command';

export interface AnalyticsOptions {
  from?: string;
  to?: string;
  json?: boolean;
  csv?: boolean;
  by?: string;
  /** tokens: lines per page of the session and plan lists. */
  limit?: string;
  /** tokens: the page after the one that printed this cursor. */
  cursor?: string;
}

interface Report {
  headers: string[];
  rows: Cell[][];
  /** What `--json` prints besides `from`/`to`. */
  json: Record<string, unknown>;
  /** A line printed after the table (not with --csv or --json). */
  note?: string;
}

export type ReportName = 'daily' | 'agents' | 'handoffs' | 'tokens' | 'cost';

export async function runReport(ctx: CliContext, name: ReportName, opts: AnalyticsOptions): Promise<void> {
  const build = REPORTS[name];
  const format = outputFormat(opts);
  if (opts.by !== undefined) (name === 'cost' ? parseCostDimension : parseDimension)(opts.by);
  const range = parseDateRange(opts.from, opts.to);
  const report = await build(ctx, range, opts);
  if (format === 'json') return printJson(ctx, { ...echoRange(range), ...report.json });
  const lines =
    format === 'csv'
      ? toCsv(report.headers, report.rows)
      : report.rows.length === 0
        ? [`no ${name} data in this range`]
        : renderTable(report.headers, report.rows);
  for (const line of lines) ctx.out(line);
  if (format !== 'csv' && report.note) ctx.out(report.note);
}

async function daily(ctx: CliContext, range: DateRange): Promise<Report> {
  const days = await withReadSource(ctx, 'analytics daily', (ds) => plansPerDay(ds, range));
  return {
    headers: ['day', 'total_plans', 'completed', 'failed', 'cancelled', 'in_progress'],
    rows: days.map((d) => [d.day, d.totalPlans, d.completed, d.failed, d.cancelled, d.inProgress]),
    json: { days },
  };
}

async function agents(ctx: CliContext, range: DateRange, opts: AnalyticsOptions): Promise<Report> {
  const list = await withReadSource(ctx, 'analytics agents', (ds) => agentUsage(ds, range));
  const csv = Boolean(opts.csv);
  return {
    headers: [
      'agent_id',
      'total_steps',
      'completed',
      'failed',
      'skipped',
      'success_rate',
      'avg_input_tokens',
      'avg_output_tokens',
      'input_tokens',
      'output_tokens',
    ],
    rows: list.map((a) => [
      a.agentId,
      a.totalSteps,
      a.completed,
      a.failed,
      a.skipped,
      csv ? a.successRate : formatPercent(a.successRate),
      a.avgInputTokens,
      a.avgOutputTokens,
      a.inputTokens,
      a.outputTokens,
    ]),
    json: { agents: list },
  };
}

async function handoffs(ctx: CliContext, range: DateRange): Promise<Report> {
  const list = await withReadSource(ctx, 'analytics handoffs', (ds) => handoffPatterns(ds, range));
  return {
    headers: ['from_agent_id', 'to_agent_id', 'reason', 'count'],
    rows: list.map((h) => [h.fromAgentId, h.toAgentId, h.reason, h.count]),
    json: { handoffs: list },
  };
}

function parseDimension(raw: string): TokenDimension {
  const value = raw.trim().toLowerCase();
  if (!(TOKEN_DIMENSIONS as readonly string[]).includes(value))
    throw new QueryArgumentError('--by', `"${raw}" is not one of ${TOKEN_DIMENSIONS.join(', ')}`);
  return value as TokenDimension;
}

async function tokens(ctx: CliContext, range: DateRange, opts: AnalyticsOptions): Promise<Report> {
  const dims = opts.by === undefined ? TOKEN_DIMENSIONS : [parseDimension(opts.by)];
  const limit = parseCount('--limit', opts.limit, { min: 1, max: 1000, default: DEFAULT_TOKEN_PAGE });
  const pages = { limit, ...(opts.cursor === undefined ? {} : { cursor: opts.cursor }) };
  const usage = await withReadSource(ctx, 'analytics tokens', (ds) => tokenUsage(ds, range, dims, pages));
  const next = usage.page?.nextCursor;
  return {
    headers: [
      'dimension',
      'key',
      'input_tokens',
      'output_tokens',
      'total_tokens',
      'cache_read_tokens',
      'cache_write_tokens',
      'reasoning_tokens',
    ],
    rows: tokenRows(usage, Boolean(opts.csv)),
    json: { ...usage },
    ...(next ? { note: `more sessions or plans: --cursor ${next}` } : {}),
  };
}

function tokenRows(u: TokenUsage, csv: boolean): Cell[][] {
  const n = (v: number) => (csv ? v : formatInt(v));
  const row = (dimension: string, key: string | null, t: TokenUsage['total']): Cell[] => [
    dimension,
    key ?? (csv ? null : '(no model)'),
    n(t.inputTokens),
    n(t.outputTokens),
    n(t.totalTokens),
    n(t.cacheReadTokens),
    n(t.cacheWriteTokens),
    n(t.reasoningTokens),
  ];
  return [
    ...(u.bySession ?? []).map((s) => row('session', s.sessionId, s)),
    ...(u.byPlan ?? []).map((p) => row('plan', p.planId, p)),
    ...(u.byAgent ?? []).map((a) => row('agent', a.agentId, a)),
    ...(u.byModel ?? []).map((m) => row('model', m.model, m)),
    row('total', csv ? null : '', u.total),
  ];
}

async function cost(ctx: CliContext, range: DateRange, opts: AnalyticsOptions): Promise<Report> {
  const by = opts.by === undefined ? 'model' : parseCostDimension(opts.by);
  const usage = await withReadSource(ctx, 'analytics cost', (ds) => costUsage(ds, range, by));
  const csv = Boolean(opts.csv);
  const none = by === 'model' ? '(no model)' : '';
  const row = (key: Cell, l: CostUsage['total']): Cell[] => [
    key,
    l.cost,
    l.pricedSteps,
    l.unpricedSteps,
    ...reportedCells(l.reported, csv),
  ];
  const total = usage.total.reported;
  return {
    headers: [
      by,
      'cost_usd',
      'priced_steps',
      'unpriced_steps',
      'reported_steps',
      'reported_usd',
      'priced_usd',
      'differs',
    ],
    rows: [
      ...usage.lines.map((l) => row(l.key ?? (csv ? null : none), l)),
      ...(usage.lines.length === 0 ? [] : [row(csv ? 'total' : 'TOTAL', usage.total)]),
    ],
    json: { ...usage },
    ...(total?.differs
      ? {
          note:
            `reported: ${total.steps === 1 ? '1 step' : `${total.steps} steps`} at the provider's own cost, ` +
            `$${total.reportedCost}; the prices give $${total.pricedCost} for them` +
            (total.unpricedSteps > 0 ? ` (${total.unpricedSteps} of them unpriced)` : ''),
        }
      : {}),
  };
}

/**
 * A cost line's reported steps: how many, their reported cost, what the prices give for them, and
 * whether the two differ (`yes` in a table); empty when no step reported a cost.
 */
function reportedCells(r: ReportedVsPriced | null, csv: boolean): Cell[] {
  if (r === null) return csv ? [0, null, null, false] : ['', '', '', ''];
  return [r.steps, r.reportedCost, r.pricedCost, csv ? r.differs : r.differs ? 'yes' : 'no'];
}

const REPORTS: Record<ReportName, (ctx: CliContext, range: DateRange, opts: AnalyticsOptions) => Promise<Report>> = {
  daily,
  agents,
  handoffs,
  tokens,
  cost,
};
