import type { DataSource, SelectQueryBuilder } from 'typeorm';
import {
  type AnalyticsRollupRow,
  ENTITY,
  type ExecutionPlanRow,
  type PlanStepRow,
  type RollupKind,
} from '../store/entities';
import { sqlDialectOf } from '../store/sql/dialects';
import { groupByText, whereCreatedIn } from './query-clauses';
import type { DateRange } from './query-args';
import { toDay, toNum } from './row-normalize';
import { DAY_MS } from '../shared/time-units';

/**
 * The sums the analytics report on, for plans created in a range: whole UTC days from
 * `analytics_rollups` (O(days x keys) rows), the parts of days at either end of the range from the
 * plans and steps themselves, added together here. Keys are compared byte for byte on both sides,
 * as the ids' collations do (docs/store.md#analytics-rollups).
 */

/** Milliseconds in a UTC day. */

/**
 * How a range is read: whole UTC days `[from, to)` from the rollups (`YYYY-MM-DD`, absent:
 * unbounded; null: no day), plus the parts of days in the range around them (`edges`, read from
 * the rows and added), minus the parts of the rollups' days outside the range (`minus`, read from
 * the rows and subtracted). At each end of the range the shorter of the two is read from the rows:
 * the part of the day in the range, or the rest of that day. A range ending now, the usual one,
 * reads the rest of today from the rows: nothing yet.
 */
export interface RangeSplit {
  days: { from?: string; to?: string } | null;
  edges: DateRange[];
  minus: DateRange[];
}

export function splitRange(range: DateRange): RangeSplit {
  const from = range.from?.getTime();
  const to = range.to?.getTime();
  const dayOf = (ms: number) => Math.floor(ms / DAY_MS) * DAY_MS;
  const at = (ms: number) => new Date(ms);
  const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
  const edges: DateRange[] = [];
  const minus: DateRange[] = [];
  if (from !== undefined && to !== undefined && to <= dayOf(from) + DAY_MS) {
    // within one day: that day's rollups minus the rest of the day, when the rest is the shorter
    const start = dayOf(from);
    if (to - from === DAY_MS) return { days: { from: day(start), to: day(to) }, edges, minus };
    if (DAY_MS - (to - from) >= to - from) return { days: null, edges: [range], minus };
    if (from > start) minus.push({ from: at(start), to: at(from) });
    if (to < start + DAY_MS) minus.push({ from: at(to), to: at(start + DAY_MS) });
    return { days: { from: day(start), to: day(start + DAY_MS) }, edges, minus };
  }
  let lo = from;
  if (from !== undefined && from !== dayOf(from)) {
    const start = dayOf(from);
    if (from - start < start + DAY_MS - from) {
      lo = start;
      minus.push({ from: at(start), to: at(from) });
    } else {
      lo = start + DAY_MS;
      edges.push({ from: at(from), to: at(lo) });
    }
  }
  let hi = to;
  if (to !== undefined && to !== dayOf(to)) {
    const start = dayOf(to);
    if (start + DAY_MS - to < to - start) {
      hi = start + DAY_MS;
      minus.push({ from: at(to), to: at(hi) });
    } else {
      hi = start;
      edges.push({ from: at(start), to: at(to) });
    }
  }
  if (lo !== undefined && hi !== undefined && hi <= lo) return { days: null, edges, minus };
  const days: NonNullable<RangeSplit['days']> = {};
  if (lo !== undefined) days.from = day(lo);
  if (hi !== undefined) days.to = day(hi);
  return { days, edges, minus };
}

/** Sums of steps (of live plans) per agent, model and status. */
export interface StepTotals {
  agentId: string;
  model: string | null;
  status: string;
  steps: number;
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  reasoningTokens: number;
  tokenSteps: number;
  costedSteps: number;
  pricedSteps: number;
  unpricedSteps: number;
  cost: bigint;
}

/** Sums of live plans per (day or session) and status. */
export interface PlanTotals {
  /** The UTC day (`by: 'day'`) or the session id (`by: 'session'`). */
  key: string;
  status: string;
  plans: number;
  inputTokens: number;
  outputTokens: number;
}

/** Costs of steps (of live plans) per session. */
export interface SessionCost {
  sessionId: string;
  costedSteps: number;
  pricedSteps: number;
  unpricedSteps: number;
  cost: bigint;
}

/** The parts of the tokens beyond in and out, summed in `step` and `session-tokens` rows. */
export const USAGE_PARTS = ['cacheReadTokens', 'cacheWriteTokens', 'reasoningTokens'] as const;

const when = (condition: string) => `SUM(CASE WHEN ${condition} THEN 1 ELSE 0 END)`;

/** The rollup rows of `kinds` for whole days. */
export function rollupQuery(
  ds: DataSource,
  kind: RollupKind | RollupKind[],
  days: NonNullable<RangeSplit['days']>,
): SelectQueryBuilder<AnalyticsRollupRow> {
  const qb = ds
    .getRepository<AnalyticsRollupRow>(ENTITY.rollup)
    .createQueryBuilder('r')
    .where(
      Array.isArray(kind) ? 'r.kind IN (:...kinds)' : 'r.kind = :kind',
      Array.isArray(kind) ? { kinds: kind } : { kind },
    );
  if (days.from) qb.andWhere('r.day >= :fromDay', { fromDay: days.from });
  if (days.to) qb.andWhere('r.day < :toDay', { toDay: days.to });
  return qb;
}

/** Adds `rows` times `sign` into `into` by `key`, every number and bigint field. */
function addInto<T extends object>(into: Map<string, T>, rows: T[], key: (r: T) => string, sign: 1 | -1): void {
  for (const r of rows) {
    const k = key(r);
    let have = into.get(k) as Record<string, unknown> | undefined;
    if (!have) {
      have = { ...r } as Record<string, unknown>;
      for (const [f, v] of Object.entries(have)) {
        if (typeof v === 'number') have[f] = 0;
        else if (typeof v === 'bigint') have[f] = 0n;
      }
      into.set(k, have as T);
    }
    for (const [f, v] of Object.entries(r)) {
      if (typeof v === 'number') have[f] = (have[f] as number) + sign * v;
      else if (typeof v === 'bigint') have[f] = (have[f] as bigint) + BigInt(sign) * v;
    }
  }
}

/**
 * Sums from both sources, in parallel (splitRange): `rollup` for the whole days, `scan` for each
 * part of a day added or subtracted. Keys whose sums end at zero are left to the callers (as the
 * rows of retired plans leave them).
 */
export async function combined<T extends object>(
  range: DateRange,
  read: { rollup: (days: NonNullable<RangeSplit['days']>) => Promise<T[]>; scan: (r: DateRange) => Promise<T[]> },
  key: (r: T) => string,
): Promise<T[]> {
  const split = splitRange(range);
  const signed = (rows: Promise<T[]>, sign: 1 | -1) => rows.then((r) => ({ rows: r, sign }));
  const parts = await Promise.all([
    ...(split.days ? [signed(read.rollup(split.days), 1)] : []),
    ...split.edges.map((edge) => signed(read.scan(edge), 1)),
    ...split.minus.map((rest) => signed(read.scan(rest), -1)),
  ]);
  const out = new Map<string, T>();
  for (const { rows, sign } of parts) addInto(out, rows, key, sign);
  return [...out.values()];
}

const nullable = (v: unknown): string | null => (v === null || v === undefined ? null : String(v));

function stepRow(ds: DataSource, r: Record<string, unknown>): StepTotals {
  return {
    agentId: String(r.agentId),
    model: nullable(r.model),
    status: String(r.status),
    steps: toNum(r.steps),
    inputTokens: toNum(r.inputTokens),
    outputTokens: toNum(r.outputTokens),
    cacheReadTokens: toNum(r.cacheReadTokens),
    cacheWriteTokens: toNum(r.cacheWriteTokens),
    reasoningTokens: toNum(r.reasoningTokens),
    tokenSteps: toNum(r.tokenSteps),
    costedSteps: toNum(r.costedSteps),
    pricedSteps: toNum(r.pricedSteps),
    unpricedSteps: toNum(r.unpricedSteps),
    cost: sqlDialectOf(ds).summedMoney(r.cost),
  };
}

/** Steps per agent, model and status, of the live plans created in `range`. */
export function stepTotals(ds: DataSource, range: DateRange): Promise<StepTotals[]> {
  const d = sqlDialectOf(ds);
  const rollup = async (days: NonNullable<RangeSplit['days']>) => {
    const qb = rollupQuery(ds, 'step', days)
      .select('r.agentId', 'agentId')
      .addSelect('r.model', 'model')
      .addSelect('r.status', 'status')
      .addSelect(d.sumInt('r.items'), 'steps');
    for (const c of [
      'inputTokens',
      'outputTokens',
      ...USAGE_PARTS,
      'tokenSteps',
      'costedSteps',
      'pricedSteps',
      'unpricedSteps',
    ])
      qb.addSelect(d.sumInt(`r.${c}`), c);
    qb.addSelect(d.sumMoney('r.cost'), 'cost');
    groupByText(ds, qb, ['r.agentId', 'r.model']).addGroupBy('r.status');
    return (await qb.getRawMany<Record<string, unknown>>()).map((r) => stepRow(ds, r));
  };
  const scan = async (edge: DateRange) => {
    const qb = ds
      .getRepository<PlanStepRow>(ENTITY.step)
      .createQueryBuilder('s')
      .innerJoin(ENTITY.plan, 'p', 'p.id = s.planId AND p.deletedAt IS NULL')
      .select('s.agentId', 'agentId')
      .addSelect('s.model', 'model')
      .addSelect('s.status', 'status')
      .addSelect('COUNT(*)', 'steps')
      .addSelect(d.sumInt('s.inputTokens'), 'inputTokens')
      .addSelect(d.sumInt('s.outputTokens'), 'outputTokens')
      .addSelect(d.sumInt('s.cacheReadTokens'), 'cacheReadTokens')
      .addSelect(d.sumInt('s.cacheWriteTokens'), 'cacheWriteTokens')
      .addSelect(d.sumInt('s.reasoningTokens'), 'reasoningTokens')
      .addSelect(when('(s.inputTokens > 0 OR s.outputTokens > 0)'), 'tokenSteps')
      .addSelect(when('s.costSource IS NOT NULL'), 'costedSteps')
      .addSelect(when('s.costSource IS NOT NULL AND s.cost IS NOT NULL'), 'pricedSteps')
      .addSelect(when(`s.costSource = 'unpriced'`), 'unpricedSteps')
      .addSelect(d.sumMoney('CASE WHEN s.costSource IS NOT NULL THEN s.cost END'), 'cost');
    groupByText(ds, qb, ['s.agentId', 's.model']).addGroupBy('s.status');
    return (await whereCreatedIn(ds, qb, edge).getRawMany<Record<string, unknown>>()).map((r) => stepRow(ds, r));
  };
  return combined(range, { rollup, scan }, (r) => JSON.stringify([r.agentId, r.model, r.status]));
}

function planRow(r: Record<string, unknown>, by: 'day' | 'session'): PlanTotals {
  return {
    key: by === 'day' ? toDay(r.key) : String(r.key),
    status: String(r.status),
    plans: toNum(r.plans),
    inputTokens: toNum(r.inputTokens),
    outputTokens: toNum(r.outputTokens),
  };
}

/** Live plans per UTC day of creation (or per session) and status, created in `range`. */
export function planTotals(ds: DataSource, range: DateRange, by: 'day' | 'session'): Promise<PlanTotals[]> {
  const d = sqlDialectOf(ds);
  const rollup = async (days: NonNullable<RangeSplit['days']>) => {
    const column = by === 'day' ? 'r.day' : 'r.sessionId';
    const qb = rollupQuery(ds, 'plan', days)
      .select(column, 'key')
      .addSelect('r.status', 'status')
      .addSelect(d.sumInt('r.items'), 'plans')
      .addSelect(d.sumInt('r.inputTokens'), 'inputTokens')
      .addSelect(d.sumInt('r.outputTokens'), 'outputTokens');
    groupByText(ds, qb, [column]).addGroupBy('r.status');
    return (await qb.getRawMany<Record<string, unknown>>()).map((r) => planRow(r, by));
  };
  const scan = async (edge: DateRange) => {
    const column = by === 'day' ? d.utcDay('p.createdAt') : 'p.sessionId';
    const qb = ds
      .getRepository<ExecutionPlanRow>(ENTITY.plan)
      .createQueryBuilder('p')
      .select(column, 'key')
      .addSelect('p.status', 'status')
      .addSelect('COUNT(*)', 'plans')
      .addSelect(d.sumInt('p.totalInputTokens'), 'inputTokens')
      .addSelect(d.sumInt('p.totalOutputTokens'), 'outputTokens');
    if (by === 'day') qb.groupBy(column);
    else groupByText(ds, qb, [column]);
    qb.addGroupBy('p.status');
    return (await whereCreatedIn(ds, qb, edge).getRawMany<Record<string, unknown>>()).map((r) => planRow(r, by));
  };
  return combined(range, { rollup, scan }, (r) => JSON.stringify([r.key, r.status]));
}

function costRow(ds: DataSource, r: Record<string, unknown>): SessionCost {
  return {
    sessionId: String(r.sessionId),
    costedSteps: toNum(r.costedSteps),
    pricedSteps: toNum(r.pricedSteps),
    unpricedSteps: toNum(r.unpricedSteps),
    cost: sqlDialectOf(ds).summedMoney(r.cost),
  };
}

/** Costs of the steps of live plans created in `range`, per session. */
export function sessionCosts(ds: DataSource, range: DateRange): Promise<SessionCost[]> {
  const d = sqlDialectOf(ds);
  const rollup = async (days: NonNullable<RangeSplit['days']>) => {
    const qb = rollupQuery(ds, 'session-cost', days).select('r.sessionId', 'sessionId');
    for (const c of ['costedSteps', 'pricedSteps', 'unpricedSteps']) qb.addSelect(d.sumInt(`r.${c}`), c);
    qb.addSelect(d.sumMoney('r.cost'), 'cost');
    groupByText(ds, qb, ['r.sessionId']);
    return (await qb.getRawMany<Record<string, unknown>>()).map((r) => costRow(ds, r));
  };
  const scan = async (edge: DateRange) => {
    const qb = ds
      .getRepository<PlanStepRow>(ENTITY.step)
      .createQueryBuilder('s')
      .innerJoin(ENTITY.plan, 'p', 'p.id = s.planId AND p.deletedAt IS NULL')
      .select('p.sessionId', 'sessionId')
      .addSelect('COUNT(*)', 'costedSteps')
      .addSelect(when('s.cost IS NOT NULL'), 'pricedSteps')
      .addSelect(when(`s.costSource = 'unpriced'`), 'unpricedSteps')
      .addSelect(d.sumMoney('s.cost'), 'cost')
      .where('s.costSource IS NOT NULL');
    groupByText(ds, qb, ['p.sessionId']);
    return (await whereCreatedIn(ds, qb, edge).getRawMany<Record<string, unknown>>()).map((r) => costRow(ds, r));
  };
  return combined(range, { rollup, scan }, (r) => r.sessionId);
}
