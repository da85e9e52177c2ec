import type { DataSource, ObjectLiteral, SelectQueryBuilder } from 'typeorm';
import { type AnalyticsRollupRow, ENTITY, ExecutionPlanRow, PlanStatus, PlanStepRow } from '../store/entities';
import { ACTIVE_STATUSES, type DateRange, TOKEN_DIMENSIONS, type TokenDimension } from './query-args';
import { groupByText, whereCreatedIn } from './query-clauses';
import { compareText, toNum } from './row-normalize';
import { sqlDialectOf } from '../store/sql/dialects';
import {
  type CursorLists,
  decodeTokenCursor,
  DEFAULT_TOKEN_PAGE,
  isAfter,
  pageInfo,
  type Position,
  type TokenPageInfo,
  type TokenPageRequest,
} from './token-pages';
import { DAY_MS } from '../shared/time-units';
import {
  combined,
  type RangeSplit,
  rollupQuery,
  splitRange,
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
 * partial days at the range's ends (rollup-totals.query.ts), the total as the sum of the step
 * lines; the session lines are a page (sessionTokens), the plan lines a page of
 * IX_execution_plans_tokens and the usage parts of that page's steps.
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
    want.has('session') ? sessionTokens(ds, range, { limit, cursor }) : Promise.resolve(null),
    stepTotals(ds, range),
    want.has('plan') ? planTokensPage(ds, range, { limit, cursor }) : Promise.resolve(null),
  ]);
  // the plans' token counters are the sums over their steps (the store keeps them so): the range's
  // total is that of its steps
  const sum = (k: keyof TokenTotals & keyof StepTotals) => steps.reduce((n, t) => n + t[k], 0);
  const total = totals(sum('inputTokens'), sum('outputTokens'), {
    cacheReadTokens: sum('cacheReadTokens'),
    cacheWriteTokens: sum('cacheWriteTokens'),
    reasoningTokens: sum('reasoningTokens'),
  });
  const usage: TokenUsage = { total };
  if (sessions) usage.bySession = sessions.rows;
  if (plans) usage.byPlan = plans.rows;
  if (want.has('agent')) usage.byAgent = stepLines(steps, (t) => t.agentId).map(([agentId, l]) => ({ agentId, ...l }));
  if (want.has('model')) usage.byModel = stepLines(steps, (t) => t.model).map(([model, l]) => ({ model, ...l }));
  const next: CursorLists = {};
  if (sessions?.next) next.session = sessions.next;
  if (plans?.next) next.plan = plans.next;
  return { ...usage, page: pageInfo(limit, next) };
}

/** A session line from a row of sums (plans, tokens and their parts). */
function sessionLine(r: Record<string, unknown>): SessionTokens {
  return {
    sessionId: String(r.sessionId),
    plans: toNum(r.plans),
    ...totals(r.inputTokens, r.outputTokens, {
      cacheReadTokens: toNum(r.cacheReadTokens),
      cacheWriteTokens: toNum(r.cacheWriteTokens),
      reasoningTokens: toNum(r.reasoningTokens),
    }),
  };
}

/**
 * The session sums of whole days from the rollups: `plan` rows hold the plans and their tokens,
 * `session-tokens` rows the parts (each zero in the other). No grouping: the range's sums.
 */
function sessionRollupQuery(
  ds: DataSource,
  days: NonNullable<RangeSplit['days']>,
): SelectQueryBuilder<AnalyticsRollupRow> {
  const d = sqlDialectOf(ds);
  const qb = rollupQuery(ds, ['plan', 'session-tokens'], days).select(d.sumInt('r.items'), 'plans');
  for (const c of ['inputTokens', 'outputTokens', ...USAGE_PARTS]) qb.addSelect(d.sumInt(`r.${c}`), c);
  return qb;
}

/**
 * Sessions of whole days from the rollups, largest first (the database's order of their ids
 * breaking ties), after `after`, `limit` of them; sessions whose plans were all retired left out.
 * The database sums and sorts the range's rollup rows and returns the page only.
 */
export function buildSessionTokensPageQuery(
  ds: DataSource,
  days: NonNullable<RangeSplit['days']>,
  limit: number,
  after?: Position,
): SelectQueryBuilder<AnalyticsRollupRow> {
  const d = sqlDialectOf(ds);
  const total = `${d.sumInt('r.inputTokens')} + ${d.sumInt('r.outputTokens')}`;
  const keys = d.textGroupKeys('r.sessionId');
  const qb = groupByText(ds, sessionRollupQuery(ds, days).addSelect('r.sessionId', 'sessionId'), ['r.sessionId']);
  qb.having(`${d.sumInt('r.items')} <> 0`);
  if (after) {
    // after the id in the order of `keys` (the id, then its length where `=` ignores trailing spaces)
    const at = d.textGroupKeys(':afterSession');
    const later = keys.map((k, i) =>
      [...keys.slice(0, i).map((e, j) => `${e} = ${at[j]}`), `${k} > ${at[i]}`].join(' AND '),
    );
    qb.andHaving(`(${total} < :afterTotal OR (${total} = :afterTotal AND ((${later.join(') OR (')}))))`, {
      afterTotal: after[0],
      afterSession: after[1],
    });
  }
  qb.orderBy(total, 'DESC');
  for (const k of keys) qb.addOrderBy(k, 'ASC');
  return qb.limit(limit);
}

/** Ids per rollup read of a list of sessions. */
const SESSION_CHUNK = 500;

/**
 * A page of the session lines of the live plans created in `range`. Whole days are read from the
 * rollups, the parts of days at the range's ends from the plans and steps (splitRange). The
 * sessions those parts touch are summed whole (rollups and parts); the others come from the
 * sessions largest of all time (pageOfAllTime) over more than one day, else (or when those do not
 * settle the page) from the rollups' page, sorted by the database: the page is the largest of both
 * after the cursor.
 */
async function sessionTokens(
  ds: DataSource,
  range: DateRange,
  page: { limit: number; cursor: CursorLists | undefined },
): Promise<{ rows: SessionTokens[]; next?: Position }> {
  const { days } = splitRange(range);
  const scan = async (edge: DateRange) => {
    const [rows, parts] = await Promise.all([
      buildSessionTokensQuery(ds, edge).getRawMany<Record<string, unknown>>(),
      usageParts(ds, edge, 'session'),
    ]);
    return rows.map((r) => ({ ...sessionLine(r), ...(parts.get(String(r.sessionId)) ?? NO_PARTS) }));
  };
  const { limit, cursor } = page;
  if (cursor && !cursor.session) return { rows: [] };
  // the parts of days at the ends, signed, per session (no whole day: the rollups are read below)
  const edges = await combined(range, { rollup: () => Promise.resolve([]), scan }, (r) => r.sessionId);
  const after = cursor?.session;
  const touched = new Map(edges.map((r) => [r.sessionId, r]));
  const ids = [...touched.keys()];
  // the touched sessions whole: their rollup rows and their parts
  const rolled = new Map((days ? await sessionsInDays(ds, days, ids) : []).map((r) => [r.sessionId, r]));
  const exact = [...touched.values()].map((e) => {
    const w = rolled.get(e.sessionId);
    if (!w) return e;
    const line = { ...e, plans: e.plans + w.plans };
    for (const k of ['inputTokens', 'outputTokens', ...USAGE_PARTS] as const) line[k] = e[k] + w[k];
    return line;
  });
  const keep = (r: SessionTokens) => r.plans !== 0 && (!after || isAfter(after, r.totalTokens, r.sessionId));
  let lines = days && spansDays(days) ? await pageOfAllTime(ds, days, exact, limit, keep) : null;
  if (!lines) {
    const top = days
      ? await buildSessionTokensPageQuery(ds, days, limit + 1 + ids.length, after).getRawMany<Record<string, unknown>>()
      : [];
    lines = [...top.map(sessionLine).filter((r) => !touched.has(r.sessionId)), ...exact]
      .map(withTotal)
      // a session whose plans were all retired keeps rollup rows summing to zero
      .filter(keep)
      .sort(byTokens((r) => r.sessionId));
  }
  const rows = lines.slice(0, limit);
  const tail = rows[rows.length - 1];
  return lines.length > limit ? { rows, next: [tail.totalTokens, tail.sessionId] } : { rows };
}

const withTotal = (r: SessionTokens): SessionTokens => ({ ...r, totalTokens: r.inputTokens + r.outputTokens });

/** Whole days of a range longer than one day (or unbounded): the page tries the sessions of all time first. */
function spansDays(days: NonNullable<RangeSplit['days']>): boolean {
  return !days.from || !days.to || Date.parse(days.to) - Date.parse(days.from) > DAY_MS;
}

/**
 * The session lines of `ids` over whole days from their rollup rows (IX_analytics_rollups_session),
 * a chunk of ids per read; an id that only equals one of them (a collation's equality) is another
 * session and is left out.
 */
async function sessionsInDays(
  ds: DataSource,
  days: NonNullable<RangeSplit['days']>,
  ids: string[],
): Promise<SessionTokens[]> {
  const d = sqlDialectOf(ds);
  const wanted = new Set(ids);
  const chunks = await Promise.all(
    Array.from({ length: Math.ceil(ids.length / SESSION_CHUNK) }, (_, i) => {
      const qb = sessionRollupQuery(ds, days)
        .addSelect('r.sessionId', 'sessionId')
        .andWhere(...idsIn(d, 'r.sessionId', ids.slice(i * SESSION_CHUNK, (i + 1) * SESSION_CHUNK)));
      return groupByText(ds, qb, ['r.sessionId']).getRawMany<Record<string, unknown>>();
    }),
  );
  return chunks
    .flat()
    .map(sessionLine)
    .filter((r) => wanted.has(r.sessionId));
}

/**
 * The `session-total` rows largest first (IX_analytics_rollups_total), `limit` of them: each
 * session's plans and tokens of all days.
 */
export function buildSessionTotalsQuery(ds: DataSource, limit: number): SelectQueryBuilder<AnalyticsRollupRow> {
  const total = indexedTotal(ds, 'r');
  return ds
    .getRepository<AnalyticsRollupRow>(ENTITY.rollup)
    .createQueryBuilder('r')
    .select('r.sessionId', 'sessionId')
    .addSelect(total, 'total')
    .where('r.kind = :kind', { kind: 'session-total' })
    .orderBy(total, 'DESC')
    .limit(limit);
}

/** Sessions of all time read per line of a page before the page is read from the range's rollups instead. */
const ALL_TIME_READ = 2;

/**
 * The lines of the page (and more) from the sessions largest of all time: a session's tokens in
 * the range are at most its tokens of all days, so once `limit + 1` lines of the range exceed the
 * all-time tokens of every session not read, those are the page's lines, in order. The sessions
 * read are summed over the range's whole days (their rollup rows), those the range's partial days
 * touch taken from `exact`. Null when the sessions read do not settle the page (the range holds
 * few of the largest sessions): the caller reads the range's rollups.
 */
async function pageOfAllTime(
  ds: DataSource,
  days: NonNullable<RangeSplit['days']>,
  exact: SessionTokens[],
  limit: number,
  keep: (r: SessionTokens) => boolean,
): Promise<SessionTokens[] | null> {
  const want = (limit + 1) * ALL_TIME_READ + exact.length;
  const top = await buildSessionTotalsQuery(ds, want).getRawMany<Record<string, unknown>>();
  // every session not read has at most this many tokens of all time (all read: none)
  const bound = top.length < want ? -1 : toNum(top[top.length - 1].total);
  const touched = new Set(exact.map((r) => r.sessionId));
  const ids = [...new Set(top.map((r) => String(r.sessionId)))].filter((id) => !touched.has(id));
  const lines = [...(await sessionsInDays(ds, days, ids)), ...exact]
    .map(withTotal)
    .filter((r) => keep(r) && r.totalTokens > bound)
    .sort(byTokens((r) => r.sessionId));
  return lines.length > limit || bound < 0 ? lines : null;
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

/**
 * A row's input plus output tokens as its tokens index orders them: the computed column
 * `total_tokens` on MySQL/MariaDB and SQL Server, the indexed expression on SQLite
 * (IX_execution_plans_tokens, migrations/1795227120000-token-pages.ts, for the plans `p`;
 * IX_analytics_rollups_total, migrations/1795227140000-session-total-rollups.ts, for the rollups
 * `r`). On PostgreSQL both index a stored generated column that holds the sum for some rows only
 * (migrations/1795227210000-rollup-hot-updates.ts, 1795227220000-hot-plan-step-updates.ts): the
 * rollups' `total_tokens` (`session-total` rows) and the plans' `final_total_tokens` (ended plans).
 */
function indexedTotal(ds: DataSource, row: 'p' | 'r'): string {
  const d = sqlDialectOf(ds).name;
  if (d === 'postgres') return row === 'p' ? 'p.final_total_tokens' : 'r.total_tokens';
  if (d === 'mysql' || d === 'mssql') return `${row}.total_tokens`;
  return row === 'p' ? 'p.totalInputTokens + p.totalOutputTokens' : 'r.inputTokens + r.outputTokens';
}

/**
 * The plan lines of the range largest first, ids (in the database's order) breaking ties, after
 * `after` (a cursor's total and plan id), `limit` of them. IX_execution_plans_tokens gives them in
 * that order: the page reads about `limit` plans of the range (more when the range holds a small
 * part of the plans), not every plan of it. On PostgreSQL that index holds the ended plans only
 * (a running plan's token updates then change no indexed column): the page is the first `limit` of
 * a page of the ended plans from it and the range's running plans (IX_execution_plans_status_created).
 */
export function buildPlanTokensPageQuery(
  ds: DataSource,
  range: DateRange,
  limit: number,
  after?: [totalTokens: number, planId: string],
): SelectQueryBuilder<ObjectLiteral> {
  const total = indexedTotal(ds, 'p');
  if (sqlDialectOf(ds).name !== 'postgres') return planTokensRun(ds, range, limit, total, after);
  const ended = planTokensRun(ds, range, limit, total, after).andWhere(`${total} IS NOT NULL`);
  const running = planTokensRun(ds, range, limit, 'p.totalInputTokens + p.totalOutputTokens', after).andWhere(
    'p.status IN (:...activeStatuses)',
    { activeStatuses: ACTIVE_STATUSES },
  );
  return ds
    .createQueryBuilder()
    .select(PLAN_TOKEN_COLUMNS.map((c) => `u."${c}"`).join(', '))
    .from(`((${ended.getQuery()}) UNION ALL (${running.getQuery()}))`, 'u')
    .setParameters({ ...ended.getParameters(), ...running.getParameters() })
    .orderBy('u."totalTokens"', 'DESC')
    .addOrderBy('u."planId"', 'ASC')
    .limit(limit);
}

const PLAN_TOKEN_COLUMNS = ['planId', 'sessionId', 'status', 'inputTokens', 'outputTokens', 'totalTokens'] as const;

/** The plan lines of the range ordered by `total` (largest first, then the id) after `after`, `limit` of them. */
function planTokensRun(
  ds: DataSource,
  range: DateRange,
  limit: number,
  total: string,
  after?: [totalTokens: number, planId: string],
): SelectQueryBuilder<ExecutionPlanRow> {
  const qb = buildPlanTokensQuery(ds, range)
    .addSelect(total, 'totalTokens')
    .orderBy(total, 'DESC')
    .addOrderBy('p.id', 'ASC')
    .limit(limit);
  // the first condition bounds the index range; the second drops the cursor's total's lines up to its plan
  if (after)
    qb.andWhere(`${total} <= :afterTotal AND (${total} < :afterTotal OR p.id > :afterId)`, {
      afterTotal: after[0],
      afterId: after[1],
    });
  return qb;
}

/**
 * A page of the plan lines after the cursor's position; one more is read to know whether the list
 * goes on. The usage parts are those of the page's plans' steps only.
 */
async function planTokensPage(
  ds: DataSource,
  range: DateRange,
  request: { limit: number; cursor: CursorLists | undefined },
): Promise<{ rows: PlanTokens[]; next?: [number, string] }> {
  const { limit, cursor } = request;
  if (cursor && !cursor.plan) return { rows: [] };
  const qb = buildPlanTokensPageQuery(ds, range, limit + 1, cursor?.plan);
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
