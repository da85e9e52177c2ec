import type { DataSource, SelectQueryBuilder } from 'typeorm';
import { ENTITY, ExecutionPlanRow, PlanStatus, PlanStepRow } from '../store/entities';
import { type DateRange, TOKEN_DIMENSIONS, type TokenDimension } from './query-args';
import { groupByText, whereCreatedIn } from './query-clauses';
import { compareText, toNum } from './row-normalize';
import { sqlDialectOf } from '../store/sql/dialects';
import {
  type CursorLists,
  decodeTokenCursor,
  DEFAULT_TOKEN_PAGE,
  pageInfo,
  pageTokenLists,
  type TokenPageInfo,
  type TokenPageRequest,
} from './token-pages';
import {
  combined,
  type RangeSplit,
  rollupQuery,
  type StepTotals,
  stepTotals,
  USAGE_PARTS,
} from './rollup-totals.query';
import { idsIn } from '../store/sql/id-lists';

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
 * (token-pages.ts): `pages.limit` lines each, from `pages.cursor`. The totals and the session,
 * agent and model lines are read from the rollups (whole days) and the plans and steps of the
 * partial days at the range's ends (rollup-totals.query.ts); the plan lines are a page of the
 * range's plans, largest first, and the usage parts of that page's steps.
 */
export async function tokenUsage(
  ds: DataSource,
  range: DateRange = {},
  dimensions: readonly TokenDimension[] = TOKEN_DIMENSIONS,
  pages: TokenPageRequest = {},
): Promise<TokenUsage> {
  const cursor = decodeTokenCursor(pages.cursor);
  const limit = pages.limit ?? DEFAULT_TOKEN_PAGE;
  const want = new Set(dimensions);
  const [sessions, steps, plans] = await Promise.all([
    sessionTokens(ds, range),
    want.has('agent') || want.has('model') ? stepTotals(ds, range) : Promise.resolve([]),
    want.has('plan') ? planTokensPage(ds, range, { limit, cursor }) : Promise.resolve(null),
  ]);
  const sum = (k: keyof TokenTotals) => sessions.reduce((n, r) => n + r[k], 0);
  const usage: TokenUsage = {
    total: totals(sum('inputTokens'), sum('outputTokens'), {
      cacheReadTokens: sum('cacheReadTokens'),
      cacheWriteTokens: sum('cacheWriteTokens'),
      reasoningTokens: sum('reasoningTokens'),
    }),
  };
  const paged = pageTokenLists(
    want.has('session')
      ? { session: { rows: sessions.sort(byTokens((r) => r.sessionId)), key: (r: SessionTokens) => r.sessionId } }
      : {},
    { limit, cursor },
  );
  if (paged.session) usage.bySession = paged.session;
  if (plans) usage.byPlan = plans.rows;
  if (want.has('agent')) usage.byAgent = stepLines(steps, (t) => t.agentId).map(([agentId, l]) => ({ agentId, ...l }));
  if (want.has('model')) usage.byModel = stepLines(steps, (t) => t.model).map(([model, l]) => ({ model, ...l }));
  return { ...usage, page: pageInfo(limit, { ...paged.next, ...(plans?.next ? { plan: plans.next } : {}) }) };
}

/** Sessions of the live plans created in `range`: plans, tokens and their parts. */
async function sessionTokens(ds: DataSource, range: DateRange): Promise<SessionTokens[]> {
  const d = sqlDialectOf(ds);
  const line = (r: Record<string, unknown>): SessionTokens => ({
    sessionId: String(r.sessionId),
    plans: toNum(r.plans),
    ...totals(r.inputTokens, r.outputTokens, {
      cacheReadTokens: toNum(r.cacheReadTokens),
      cacheWriteTokens: toNum(r.cacheWriteTokens),
      reasoningTokens: toNum(r.reasoningTokens),
    }),
  });
  const rollup = async (days: NonNullable<RangeSplit['days']>) => {
    // `plan` rows hold the plans and their tokens, `session-tokens` rows the parts (each zero in the other)
    const qb = rollupQuery(ds, ['plan', 'session-tokens'], days)
      .select('r.sessionId', 'sessionId')
      .addSelect(d.sumInt('r.items'), 'plans');
    for (const c of ['inputTokens', 'outputTokens', ...USAGE_PARTS]) qb.addSelect(d.sumInt(`r.${c}`), c);
    groupByText(ds, qb, ['r.sessionId']);
    return (await qb.getRawMany<Record<string, unknown>>()).map(line);
  };
  const scan = async (edge: DateRange) => {
    const [rows, parts] = await Promise.all([
      buildSessionTokensQuery(ds, edge).getRawMany<Record<string, unknown>>(),
      usageParts(ds, edge, 'session'),
    ]);
    return rows.map((r) => ({ ...line(r), ...(parts.get(String(r.sessionId)) ?? NO_PARTS) }));
  };
  const all = await combined(range, { rollup, scan }, (r) => r.sessionId);
  // a session whose plans were all retired keeps rollup rows summing to zero
  return all.filter((s) => s.plans !== 0).map((s) => ({ ...s, totalTokens: s.inputTokens + s.outputTokens }));
}

/** The agent or model lines of the tokens report from the step sums: steps that consumed tokens, largest first. */
function stepLines<K extends string | null>(
  steps: StepTotals[],
  keyOf: (t: StepTotals) => K,
): Array<[K, TokenTotals & { steps: number }]> {
  const lines = new Map<string, [K, TokenTotals & { steps: number }]>();
  for (const t of steps) {
    const key = keyOf(t);
    const k = JSON.stringify(key);
    let line = lines.get(k);
    if (!line) lines.set(k, (line = [key, { steps: 0, ...totals(0, 0) }]));
    const l = line[1];
    l.steps += t.tokenSteps;
    l.inputTokens += t.inputTokens;
    l.outputTokens += t.outputTokens;
    l.totalTokens += t.inputTokens + t.outputTokens;
    for (const part of USAGE_PARTS) l[part] += t[part];
  }
  return [...lines.values()]
    .filter(([, l]) => l.steps !== 0)
    .sort(([ka, a], [kb, b]) => b.totalTokens - a.totalTokens || compareText(ka, kb));
}

const PLAN_TOTAL = 'p.totalInputTokens + p.totalOutputTokens';

/**
 * A page of the plan lines: the plans of the range largest first, ids (in the database's order)
 * breaking ties, after the cursor's position; one more is read to know whether the list goes on.
 * The usage parts are those of the page's plans' steps only.
 */
async function planTokensPage(
  ds: DataSource,
  range: DateRange,
  request: { limit: number; cursor: CursorLists | undefined },
): Promise<{ rows: PlanTokens[]; next?: [number, string] }> {
  const { limit, cursor } = request;
  if (cursor && !cursor.plan) return { rows: [] };
  const qb = buildPlanTokensQuery(ds, range)
    .orderBy(PLAN_TOTAL, 'DESC')
    .addOrderBy('p.id', 'ASC')
    .limit(limit + 1);
  if (cursor?.plan)
    qb.andWhere(`(${PLAN_TOTAL} < :afterTotal OR (${PLAN_TOTAL} = :afterTotal AND p.id > :afterId))`, {
      afterTotal: cursor.plan[0],
      afterId: cursor.plan[1],
    });
  const raw = await qb.getRawMany<Record<string, unknown>>();
  const page = raw.slice(0, limit);
  const parts =
    page.length === 0
      ? new Map<string, UsageParts>()
      : await planParts(
          ds,
          page.map((r) => String(r.planId)),
        );
  const rows = page.map((r) => ({
    planId: String(r.planId),
    sessionId: String(r.sessionId),
    status: r.status as PlanStatus,
    ...totals(r.inputTokens, r.outputTokens, parts.get(String(r.planId)) ?? NO_PARTS),
  }));
  const tail = rows[rows.length - 1];
  return raw.length > limit ? { rows, next: [tail.totalTokens, tail.planId] } : { rows };
}

/** The usage parts of these plans' steps, by plan id. */
async function planParts(ds: DataSource, planIds: string[]): Promise<Map<string, UsageParts>> {
  const d = sqlDialectOf(ds);
  const rows = await ds
    .getRepository<PlanStepRow>(ENTITY.step)
    .createQueryBuilder('s')
    .select('s.planId', 'planId')
    .addSelect(d.sumInt('s.cacheReadTokens'), 'cacheRead')
    .addSelect(d.sumInt('s.cacheWriteTokens'), 'cacheWrite')
    .addSelect(d.sumInt('s.reasoningTokens'), 'reasoning')
    .where(...idsIn(d, 's.planId', planIds))
    .andWhere('(s.cacheReadTokens > 0 OR s.cacheWriteTokens > 0 OR s.reasoningTokens > 0)')
    .groupBy('s.planId')
    .getRawMany<Record<string, unknown>>();
  return new Map(
    rows.map((r) => [
      String(r.planId),
      {
        cacheReadTokens: toNum(r.cacheRead),
        cacheWriteTokens: toNum(r.cacheWrite),
        reasoningTokens: toNum(r.reasoning),
      },
    ]),
  );
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
