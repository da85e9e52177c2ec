import { formatMoney, moneyFromColumn } from '../../pricing';
import { ENTITY, type AnalyticsRollupRow, type RollupKind } from '../entities';
import type { ExecutionPlanRow, PlanHandoffRow, PlanStepRow } from '../entities';
import { derivedId } from '../projection/derived-id';
import type { RowStore } from '../sql/sql-dialect';
import { DAY_MS } from '../../shared/time-units';

/** What a plan row adds to the rollups. */
export type RollupPlan = Pick<
  ExecutionPlanRow,
  'id' | 'sessionId' | 'status' | 'totalInputTokens' | 'totalOutputTokens' | 'createdAt' | 'deletedAt'
>;

/** What a step row adds to the rollups. */
export type RollupStep = Pick<
  PlanStepRow,
  | 'agentId'
  | 'model'
  | 'status'
  | 'inputTokens'
  | 'outputTokens'
  | 'cacheReadTokens'
  | 'cacheWriteTokens'
  | 'reasoningTokens'
  | 'cost'
  | 'costSource'
  | 'deletedAt'
>;

/** What a handoff row adds to the rollups (every handoff of a live plan counts, as the handoffs report reads them). */
export type RollupHandoff = Pick<PlanHandoffRow, 'fromAgentId' | 'toAgentId' | 'reason'>;

/** The counters of a rollup row, in the order of ROLLUP_COUNTS. */
export const ROLLUP_COUNTS = [
  'items',
  'inputTokens',
  'outputTokens',
  'cacheReadTokens',
  'cacheWriteTokens',
  'reasoningTokens',
  'tokenSteps',
  'costedSteps',
  'pricedSteps',
  'unpricedSteps',
] as const;
export type RollupCount = (typeof ROLLUP_COUNTS)[number];

/** A rollup row's key and sums, the cost in pico-dollars. */
export interface RollupSums extends Pick<
  AnalyticsRollupRow,
  'day' | 'kind' | 'sessionId' | 'agentId' | 'model' | 'status'
> {
  counts: Record<RollupCount, number>;
  cost: bigint;
}

/** The `day` of the `session-total` rows: one row per session, whatever the days of its plans. */
export const ALL_DAYS = '0000-00-00';

/** UTC day of an instant, `YYYY-MM-DD` (the dialects' utcDay). */
export function utcDayOf(at: Date): string {
  const day = Math.floor(at.getTime() / DAY_MS);
  let text = dayTexts.get(day);
  if (text === undefined) {
    text = at.toISOString().slice(0, 10);
    if (dayTexts.size >= 10_000) dayTexts.clear();
    dayTexts.set(day, text);
  }
  return text;
}

/** The text of each UTC day number seen lately (toISOString costs more than the lookup). */
const dayTexts = new Map<number, string>();

/** What a plan row adds to its `plan` and `session-total` rows: `items` plans and their tokens. */
function addPlanCounts(c: Record<RollupCount, number>, items: number, input: number, output: number): void {
  c.items += items;
  c.inputTokens += input;
  c.outputTokens += output;
}

/** What a costed step adds to its `step` row and to its plan's `session-cost` row: `units` null when unpriced. */
function addCost(target: RollupSums, sign: 1 | -1, units: bigint | null, unpriced: boolean): void {
  target.counts.costedSteps += sign;
  if (units !== null) {
    target.counts.pricedSteps += sign;
    target.cost += BigInt(sign) * units;
  }
  if (unpriced) target.counts.unpricedSteps += sign;
}

/** Every counter of ROLLUP_COUNTS is zero (spelled out for the worker's path; a test checks it names each). */
export function allZero(c: Record<RollupCount, number>): boolean {
  return (
    c.items === 0 &&
    c.inputTokens === 0 &&
    c.outputTokens === 0 &&
    c.cacheReadTokens === 0 &&
    c.cacheWriteTokens === 0 &&
    c.reasoningTokens === 0 &&
    c.tokenSteps === 0 &&
    c.costedSteps === 0 &&
    c.pricedSteps === 0 &&
    c.unpricedSteps === 0
  );
}

function zeroCounts(): Record<RollupCount, number> {
  return {
    items: 0,
    inputTokens: 0,
    outputTokens: 0,
    cacheReadTokens: 0,
    cacheWriteTokens: 0,
    reasoningTokens: 0,
    tokenSteps: 0,
    costedSteps: 0,
    pricedSteps: 0,
    unpricedSteps: 0,
  };
}

/** The id of a rollup row: derived from its kind, day and key, so keys are compared byte for byte. */
export function rollupId(r: Pick<RollupSums, 'day' | 'kind' | 'sessionId' | 'agentId' | 'model' | 'status'>): string {
  return derivedId(r.day, 'rollup', JSON.stringify([r.kind, r.sessionId, r.agentId, r.model, r.status]));
}

/**
 * A rollup key as one string (RollupDelta.row: the day, the kind, `|`, then the nullable parts),
 * distinct for distinct keys: each nullable part is `-` (null) or its length, `:` and the text, so
 * no text can read as another split of the parts.
 */
function part(value: string | null): string {
  return value === null ? '-' : `${value.length}:${value}`;
}

/**
 * Ids of the rollup keys written lately (by the key text of RollupDelta.row), shared by every transaction of the
 * process: the same days, agents, models and sessions come back batch after batch, and each id is
 * a SHA-1. Emptied whole when full.
 */
const recentIds = new Map<string, string>();
const RECENT_IDS = 50_000;

/** The id of `key`, whose text is `text` and whose id is not among the recent ones, kept among them. */
function newId(text: string, key: Omit<RollupSums, 'counts' | 'cost'>): string {
  if (recentIds.size >= RECENT_IDS) recentIds.clear();
  const id = rollupId(key);
  recentIds.set(text, id);
  return id;
}

/**
 * One level of RollupDelta's index: a part of the key (day, kind, agent, model, status, then the
 * session), then the next level (the row at the last). The session comes last: the kinds keyed by
 * session have the other nullable parts null, so their many sessions share one path of levels.
 */
type KeyLevel = Map<string | null, KeyLevel | RollupSums>;

/** The next level of `map` under `part`, created empty. */
function level(map: KeyLevel, part: string | null): KeyLevel {
  let next = map.get(part) as KeyLevel | undefined;
  if (!next) map.set(part, (next = new Map()));
  return next;
}

/**
 * Deltas of rollup rows collected over one transaction (`add` with a sign: +1 for rows as they are
 * now, -1 for rows as they were), written by `write` as one upsert that adds them to the stored
 * sums. Whatever order the plans' changes come in, the sums end as those of the rows stored.
 */
export class RollupDelta {
  /** Every row of the delta, in the order they were first looked up. */
  private readonly rows: Array<RollupSums & { id: string }> = [];
  /**
   * The rows by key: day and kind, then each nullable part in turn, the session last (KeyLevel;
   * null a key like any other), so a lookup builds no key text; the text (see part) is built once
   * per new row, for its id (recentIds).
   */
  private readonly index: KeyLevel = new Map();

  /** @param kinds - only rows of these kinds are written (absent: all). */
  constructor(private readonly kinds?: readonly RollupKind[]) {}

  get size(): number {
    return this.rows.length;
  }

  /** A plan and the steps of it given (its own rows), counted with `sign`; nothing for a soft-deleted plan. */
  addPlan(plan: RollupPlan, steps: Iterable<RollupStep>, sign: 1 | -1): void {
    if (plan.deletedAt) return;
    const day = utcDayOf(plan.createdAt);
    const row = this.row(day, 'plan', plan.sessionId, null, null, plan.status);
    const all = this.row(ALL_DAYS, 'session-total', plan.sessionId, null, null, null);
    const input = sign * Number(plan.totalInputTokens);
    const output = sign * Number(plan.totalOutputTokens);
    addPlanCounts(row.counts, sign, input, output);
    addPlanCounts(all.counts, sign, input, output);
    this.addStepsOn(day, plan.sessionId, steps, sign);
  }

  /**
   * A live plan row as it was (`before`) and as it is (`now`), its day, session and retirement the
   * same: the sums `addPlan(before, [], -1)` then `addPlan(now, [], 1)` add, without looking up a
   * row they leave as it is (the `plan` row of an unchanged status when the tokens did not move,
   * the `session-total` row when only the status did).
   */
  movePlan(before: RollupPlan, now: RollupPlan): void {
    if (now.deletedAt) return;
    const day = utcDayOf(now.createdAt);
    const input = Number(now.totalInputTokens) - Number(before.totalInputTokens);
    const output = Number(now.totalOutputTokens) - Number(before.totalOutputTokens);
    if (before.status !== now.status) {
      const was = this.row(day, 'plan', before.sessionId, null, null, before.status).counts;
      addPlanCounts(was, -1, -Number(before.totalInputTokens), -Number(before.totalOutputTokens));
      const is = this.row(day, 'plan', now.sessionId, null, null, now.status).counts;
      addPlanCounts(is, 1, Number(now.totalInputTokens), Number(now.totalOutputTokens));
    } else if (input !== 0 || output !== 0)
      addPlanCounts(this.row(day, 'plan', now.sessionId, null, null, now.status).counts, 0, input, output);
    if (input !== 0 || output !== 0)
      addPlanCounts(this.row(ALL_DAYS, 'session-total', now.sessionId, null, null, null).counts, 0, input, output);
  }

  /** Steps of a live plan, counted with `sign` (soft-deleted steps count nothing). */
  addSteps(
    plan: Pick<RollupPlan, 'sessionId' | 'createdAt' | 'deletedAt'>,
    steps: Iterable<RollupStep>,
    sign: 1 | -1,
  ): void {
    if (plan.deletedAt || (Array.isArray(steps) && steps.length === 0)) return;
    this.addStepsOn(utcDayOf(plan.createdAt), plan.sessionId, steps, sign);
  }

  /** Steps of a live plan of `sessionId` created on `day`, counted with `sign`. */
  private addStepsOn(day: string, sessionId: string, steps: Iterable<RollupStep>, sign: 1 | -1): void {
    // the plan's session rows, looked up once for all its steps
    let session: RollupSums | undefined;
    let tokens: RollupSums | undefined;
    for (const s of steps) {
      if (s.deletedAt) continue;
      const row = this.row(day, 'step', null, s.agentId, s.model ?? null, s.status);
      const c = row.counts;
      const input = Number(s.inputTokens);
      const output = Number(s.outputTokens);
      c.items += sign;
      c.inputTokens += sign * input;
      c.outputTokens += sign * output;
      const cacheRead = Number(s.cacheReadTokens ?? 0);
      const cacheWrite = Number(s.cacheWriteTokens ?? 0);
      const reasoning = Number(s.reasoningTokens ?? 0);
      c.cacheReadTokens += sign * cacheRead;
      c.cacheWriteTokens += sign * cacheWrite;
      c.reasoningTokens += sign * reasoning;
      if (input > 0 || output > 0) c.tokenSteps += sign;
      // a step's cache read, cache write and reasoning tokens on its plan's session (the tokens report per session)
      if (cacheRead !== 0 || cacheWrite !== 0 || reasoning !== 0) {
        tokens ??= this.row(day, 'session-tokens', sessionId, null, null, null);
        tokens.counts.cacheReadTokens += sign * cacheRead;
        tokens.counts.cacheWriteTokens += sign * cacheWrite;
        tokens.counts.reasoningTokens += sign * reasoning;
      }
      if (s.costSource === null || s.costSource === undefined) continue;
      const units = s.cost === null || s.cost === undefined ? null : moneyFromColumn(s.cost)!;
      session ??= this.row(day, 'session-cost', sessionId, null, null, null);
      const unpriced = s.costSource === 'unpriced';
      addCost(row, sign, units, unpriced);
      addCost(session, sign, units, unpriced);
    }
  }

  /** Handoffs of a live plan, counted with `sign` in its day's `handoff` rows. */
  addHandoffs(
    plan: Pick<RollupPlan, 'createdAt' | 'deletedAt'>,
    handoffs: Iterable<RollupHandoff>,
    sign: 1 | -1,
  ): void {
    if (plan.deletedAt) return;
    const day = utcDayOf(plan.createdAt);
    for (const h of handoffs) this.row(day, 'handoff', h.reason, h.fromAgentId, h.toAgentId, null).counts.items += sign;
  }

  /** The row of a key, created with zero sums; positional: no key object or text per call unless the row is new. */
  // eslint-disable-next-line max-params -- the six columns of a rollup key, called per step on the worker's path
  private row(
    day: string,
    kind: RollupKind,
    sessionId: string | null,
    agentId: string | null,
    model: string | null,
    status: string | null,
  ): RollupSums {
    const bySession = level(level(level(level(level(this.index, day), kind), agentId), model), status);
    let row = bySession.get(sessionId) as (RollupSums & { id: string }) | undefined;
    if (!row) {
      const text = `${day}${kind}|${part(sessionId)}${part(agentId)}${part(model)}${part(status)}`;
      // a key object only for an id not computed lately
      const id = recentIds.get(text) ?? newId(text, { day, kind, sessionId, agentId, model, status });
      // spelled out: an object spread per new row costs a runtime call
      row = { day, kind, sessionId, agentId, model, status, id, counts: zeroCounts(), cost: 0n };
      bySession.set(sessionId, row);
      this.rows.push(row);
    }
    return row;
  }

  /** The rows whose sums moved, by id (sorted: writers of one key take its lock in one order). */
  changed(): AnalyticsRollupRow[] {
    const out: AnalyticsRollupRow[] = [];
    for (const r of this.rows) {
      const c = r.counts;
      if (r.cost === 0n && allZero(c)) continue;
      if (this.kinds && !this.kinds.includes(r.kind)) continue;
      // spelled out: an object spread per row costs a runtime call on the worker's path
      out.push({
        id: r.id,
        day: r.day,
        kind: r.kind,
        sessionId: r.sessionId,
        agentId: r.agentId,
        model: r.model,
        status: r.status,
        items: c.items,
        inputTokens: c.inputTokens,
        outputTokens: c.outputTokens,
        cacheReadTokens: c.cacheReadTokens,
        cacheWriteTokens: c.cacheWriteTokens,
        reasoningTokens: c.reasoningTokens,
        tokenSteps: c.tokenSteps,
        costedSteps: c.costedSteps,
        pricedSteps: c.pricedSteps,
        unpricedSteps: c.unpricedSteps,
        cost: formatMoney(r.cost),
      });
    }
    return out.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  /** Adds the deltas to the stored rollups (one upsert, chunked to the database's limits), and forgets them. */
  async write(rows: RowStore): Promise<void> {
    const changed = this.changed();
    this.rows.length = 0;
    this.index.clear();
    if (changed.length === 0) return;
    const keep = Object.fromEntries([...ROLLUP_COUNTS, 'cost'].map((k) => [k, 'add' as const]));
    await rows.upsert(ENTITY.rollup, changed, { key: 'id', update: [], keep, concurrentInserts: true });
  }
}
