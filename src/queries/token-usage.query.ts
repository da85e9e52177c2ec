import type { DataSource, SelectQueryBuilder } from 'typeorm';
import { ENTITY, ExecutionPlanRow, PlanStatus, PlanStepRow } from '../store/entities';
import { type DateRange, TOKEN_DIMENSIONS, type TokenDimension } from './query-args';
import { groupByText, whereCreatedIn } from './query-clauses';
import { compareText, toNum } from './row-normalize';
import { sqlDialectOf } from '../store/sql/dialects';
import {
  decodeTokenCursor,
  DEFAULT_TOKEN_PAGE,
  pageTokenLists,
  type TokenPageInfo,
  type TokenPageRequest,
} from './token-pages';

// Billing (tokens per plan and step): tokens per session, plan, agent, model.
// The dimensions live with the other argument values, so `analytics tokens --help` needs no TypeORM.
export { TOKEN_DIMENSIONS, type TokenDimension };

export interface TokenTotals {
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
  /** Parts of inputTokens: read from and written to the provider's prompt cache. */
  cacheReadTokens: number;
  cacheWriteTokens: number;
  /** Part of outputTokens. */
  reasoningTokens: number;
}

/** The parts of the tokens the steps reported beyond in and out. */
type UsageParts = Pick<TokenTotals, 'cacheReadTokens' | 'cacheWriteTokens' | 'reasoningTokens'>;
const NO_PARTS: UsageParts = Object.freeze({ cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 });

export interface SessionTokens extends TokenTotals {
  sessionId: string;
  plans: number;
}
export interface PlanTokens extends TokenTotals {
  planId: string;
  sessionId: string;
  status: PlanStatus;
}
export interface AgentTokens extends TokenTotals {
  agentId: string;
  /** Steps that consumed tokens. */
  steps: number;
}
export interface ModelTokens extends TokenTotals {
  /** Null for steps that reported tokens but no model. */
  model: string | null;
  steps: number;
}

export interface TokenUsage {
  /** Every plan of the range, whatever the page. */
  total: TokenTotals;
  /** The page of the session and plan lists (tokenUsage only; the agent and model lists are whole). */
  page?: TokenPageInfo;
  bySession?: SessionTokens[];
  byPlan?: PlanTokens[];
  byAgent?: AgentTokens[];
  byModel?: ModelTokens[];
}

function totals(input: unknown, output: unknown, parts: UsageParts = NO_PARTS): TokenTotals {
  const inputTokens = toNum(input);
  const outputTokens = toNum(output);
  return { inputTokens, outputTokens, totalTokens: inputTokens + outputTokens, ...parts };
}

const USAGE_PART_GROUPS = { session: 'p.sessionId', plan: 'p.id', agent: 's.agentId', model: 's.model' } as const;

/**
 * Cache read, cache write and reasoning tokens of the steps of plans created in the range, per
 * session, plan, agent or model (`total`: one line, key null). Only steps that reported any are read.
 */
export function buildUsagePartsQuery(
  ds: DataSource,
  range: DateRange,
  by: TokenDimension | 'total',
): SelectQueryBuilder<PlanStepRow> {
  const d = sqlDialectOf(ds);
  const column = by === 'total' ? null : USAGE_PART_GROUPS[by];
  const qb = ds
    .getRepository<PlanStepRow>(ENTITY.step)
    .createQueryBuilder('s')
    .innerJoin(ENTITY.plan, 'p', 'p.id = s.planId AND p.deletedAt IS NULL')
    .select(column ?? 'NULL', 'key')
    .addSelect(d.sumInt('s.cacheReadTokens'), 'cacheRead')
    .addSelect(d.sumInt('s.cacheWriteTokens'), 'cacheWrite')
    .addSelect(d.sumInt('s.reasoningTokens'), 'reasoning')
    .where('(s.cacheReadTokens > 0 OR s.cacheWriteTokens > 0 OR s.reasoningTokens > 0)');
  return whereCreatedIn(ds, column ? groupByText(ds, qb, [column]) : qb, range);
}

/** The usage parts per key (`''` for a null key) of one dimension. */
async function usageParts(
  ds: DataSource,
  range: DateRange,
  by: TokenDimension | 'total',
): Promise<Map<string, UsageParts>> {
  const rows = await buildUsagePartsQuery(ds, range, by).getRawMany<Record<string, unknown>>();
  return new Map(
    rows.map((r) => [
      r.key === null || r.key === undefined ? '' : String(r.key),
      {
        cacheReadTokens: toNum(r.cacheRead),
        cacheWriteTokens: toNum(r.cacheWrite),
        reasoningTokens: toNum(r.reasoning),
      },
    ]),
  );
}

/** Largest consumer first; the key breaks ties. */
const byTokens =
  <T extends TokenTotals>(key: (row: T) => string | null) =>
  (a: T, b: T) =>
    b.totalTokens - a.totalTokens || compareText(key(a), key(b));

function planQuery(ds: DataSource, range: DateRange): SelectQueryBuilder<ExecutionPlanRow> {
  return whereCreatedIn(ds, ds.getRepository<ExecutionPlanRow>(ENTITY.plan).createQueryBuilder('p'), range);
}

/** Plan counters are the sums over their steps (the store keeps them so): no join needed. */
export function buildSessionTokensQuery(ds: DataSource, range: DateRange): SelectQueryBuilder<ExecutionPlanRow> {
  return planQuery(ds, range)
    .select('p.sessionId', 'sessionId')
    .addSelect('COUNT(*)', 'plans')
    .addSelect(sqlDialectOf(ds).sumInt('p.totalInputTokens'), 'inputTokens')
    .addSelect(sqlDialectOf(ds).sumInt('p.totalOutputTokens'), 'outputTokens')
    .groupBy('p.sessionId');
}

export function buildPlanTokensQuery(ds: DataSource, range: DateRange): SelectQueryBuilder<ExecutionPlanRow> {
  return planQuery(ds, range)
    .select('p.id', 'planId')
    .addSelect('p.sessionId', 'sessionId')
    .addSelect('p.status', 'status')
    .addSelect('p.totalInputTokens', 'inputTokens')
    .addSelect('p.totalOutputTokens', 'outputTokens');
}

/** Steps that consumed tokens, grouped by agent or by model. */
export function buildStepTokensQuery(
  ds: DataSource,
  range: DateRange,
  by: 'agent' | 'model',
): SelectQueryBuilder<PlanStepRow> {
  const column = by === 'agent' ? 's.agentId' : 's.model';
  const qb = ds
    .getRepository<PlanStepRow>(ENTITY.step)
    .createQueryBuilder('s')
    .innerJoin(ENTITY.plan, 'p', 'p.id = s.planId AND p.deletedAt IS NULL')
    .select(column, 'key')
    .addSelect('COUNT(*)', 'steps')
    .addSelect(sqlDialectOf(ds).sumInt('s.inputTokens'), 'inputTokens')
    .addSelect(sqlDialectOf(ds).sumInt('s.outputTokens'), 'outputTokens')
    .where('(s.inputTokens > 0 OR s.outputTokens > 0)');
  return whereCreatedIn(ds, groupByText(ds, qb, [column]), range);
}

/**
 * Token totals for billing, with their cache and reasoning parts; `dimensions` picks the
 * breakdowns. @defaultValue all four. The session and plan lists come a page at a time
 * (token-pages.ts): `pages.limit` lines each, from `pages.cursor`.
 */
export async function tokenUsage(
  ds: DataSource,
  range: DateRange = {},
  dimensions: readonly TokenDimension[] = TOKEN_DIMENSIONS,
  pages: TokenPageRequest = {},
): Promise<TokenUsage> {
  const cursor = decodeTokenCursor(pages.cursor);
  const limit = pages.limit ?? DEFAULT_TOKEN_PAGE;
  const usage = await tokenUsageScan(ds, range, dimensions);
  const paged = pageTokenLists(
    {
      ...(usage.bySession ? { session: { rows: usage.bySession, key: (s: SessionTokens) => s.sessionId } } : {}),
      ...(usage.byPlan ? { plan: { rows: usage.byPlan, key: (p: PlanTokens) => p.planId } } : {}),
    },
    { limit, cursor },
  );
  if (paged.session) usage.bySession = paged.session;
  if (paged.plan) usage.byPlan = paged.plan;
  return { ...usage, page: paged.page };
}

/** Every line of the tokens report, by a scan of the range's plans and steps (unpaged). */
export async function tokenUsageScan(
  ds: DataSource,
  range: DateRange = {},
  dimensions: readonly TokenDimension[] = TOKEN_DIMENSIONS,
): Promise<TokenUsage> {
  const want = new Set(dimensions);
  const none = Promise.resolve([] as Record<string, unknown>[]);
  const noParts = Promise.resolve(new Map<string, UsageParts>());
  const [sessions, plans, agents, models, parts] = await Promise.all([
    buildSessionTokensQuery(ds, range).getRawMany<Record<string, unknown>>(),
    want.has('plan') ? buildPlanTokensQuery(ds, range).getRawMany<Record<string, unknown>>() : none,
    want.has('agent') ? buildStepTokensQuery(ds, range, 'agent').getRawMany<Record<string, unknown>>() : none,
    want.has('model') ? buildStepTokensQuery(ds, range, 'model').getRawMany<Record<string, unknown>>() : none,
    Promise.all(
      (['total', ...TOKEN_DIMENSIONS] as const).map((by) =>
        by === 'total' || want.has(by) ? usageParts(ds, range, by) : noParts,
      ),
    ),
  ]);
  const [totalParts, sessionParts, planParts, agentParts, modelParts] = parts;
  const partsOf = (map: Map<string, UsageParts>, key: unknown) =>
    map.get(key === null || key === undefined ? '' : String(key)) ?? NO_PARTS;
  const bySession = sessions.map((r) => ({
    sessionId: String(r.sessionId),
    plans: toNum(r.plans),
    ...totals(r.inputTokens, r.outputTokens, partsOf(sessionParts, r.sessionId)),
  }));
  const total = totals(
    bySession.reduce((n, s) => n + s.inputTokens, 0),
    bySession.reduce((n, s) => n + s.outputTokens, 0),
    partsOf(totalParts, null),
  );
  const usage: TokenUsage = { total };
  if (want.has('session')) usage.bySession = bySession.sort(byTokens((s) => s.sessionId));
  if (want.has('plan')) {
    usage.byPlan = plans
      .map((r) => ({
        planId: String(r.planId),
        sessionId: String(r.sessionId),
        status: r.status as PlanStatus,
        ...totals(r.inputTokens, r.outputTokens, partsOf(planParts, r.planId)),
      }))
      .sort(byTokens((p) => p.planId));
  }
  if (want.has('agent'))
    usage.byAgent = agents
      .map((r) => ({
        agentId: String(r.key),
        steps: toNum(r.steps),
        ...totals(r.inputTokens, r.outputTokens, partsOf(agentParts, r.key)),
      }))
      .sort(byTokens((a) => a.agentId));
  if (want.has('model')) {
    usage.byModel = models
      .map((r) => ({
        model: r.key === null || r.key === undefined ? null : String(r.key),
        steps: toNum(r.steps),
        ...totals(r.inputTokens, r.outputTokens, partsOf(modelParts, r.key)),
      }))
      .sort(byTokens((m) => m.model));
  }
  return usage;
}
