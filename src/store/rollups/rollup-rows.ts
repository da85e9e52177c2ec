import { formatMoney, moneyFromColumn } from '../../pricing';
import { ENTITY, type AnalyticsRollupRow, type RollupKind } from '../entities';
import type { ExecutionPlanRow, PlanHandoffRow, PlanStepRow } from '../entities';
import { derivedId } from '../projection/derived-id';
import type { RowStore } from '../sql/sql-dialect';

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
  return at.toISOString().slice(0, 10);
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
 * Deltas of rollup rows collected over one transaction (`add` with a sign: +1 for rows as they are
 * now, -1 for rows as they were), written by `write` as one upsert that adds them to the stored
 * sums. Whatever order the plans' changes come in, the sums end as those of the rows stored.
 */
export class RollupDelta {
  /** By the key as JSON text (the id, a SHA-1, is derived once per key and transaction). */
  private readonly rows = new Map<string, RollupSums & { id: string }>();

  /** @param kinds - only rows of these kinds are written (absent: all). */
  constructor(private readonly kinds?: readonly RollupKind[]) {}

  get size(): number {
    return this.rows.size;
  }

  /** A plan and the steps of it given (its own rows), counted with `sign`; nothing for a soft-deleted plan. */
  addPlan(plan: RollupPlan, steps: Iterable<RollupStep>, sign: 1 | -1): void {
    if (plan.deletedAt) return;
    const day = utcDayOf(plan.createdAt);
    const row = this.row({
      day,
      kind: 'plan',
      sessionId: plan.sessionId,
      agentId: null,
      model: null,
      status: plan.status,
    });
    const all = this.row({
      day: ALL_DAYS,
      kind: 'session-total',
      sessionId: plan.sessionId,
      agentId: null,
      model: null,
      status: null,
    });
    for (const target of [row, all]) {
      target.counts.items += sign;
      target.counts.inputTokens += sign * Number(plan.totalInputTokens);
      target.counts.outputTokens += sign * Number(plan.totalOutputTokens);
    }
    this.addSteps(plan, steps, sign);
  }

  /** Steps of a live plan, counted with `sign` (soft-deleted steps count nothing). */
  addSteps(
    plan: Pick<RollupPlan, 'sessionId' | 'createdAt' | 'deletedAt'>,
    steps: Iterable<RollupStep>,
    sign: 1 | -1,
  ): void {
    if (plan.deletedAt) return;
    const day = utcDayOf(plan.createdAt);
    for (const s of steps) {
      if (s.deletedAt) continue;
      const row = this.row({
        day,
        kind: 'step',
        sessionId: null,
        agentId: s.agentId,
        model: s.model ?? null,
        status: s.status,
      });
      const c = row.counts;
      const input = Number(s.inputTokens);
      const output = Number(s.outputTokens);
      c.items += sign;
      c.inputTokens += sign * input;
      c.outputTokens += sign * output;
      const parts = [Number(s.cacheReadTokens ?? 0), Number(s.cacheWriteTokens ?? 0), Number(s.reasoningTokens ?? 0)];
      c.cacheReadTokens += sign * parts[0];
      c.cacheWriteTokens += sign * parts[1];
      c.reasoningTokens += sign * parts[2];
      if (input > 0 || output > 0) c.tokenSteps += sign;
      if (parts.some((n) => n !== 0)) this.addSessionParts(day, plan.sessionId, parts, sign);
      if (s.costSource === null || s.costSource === undefined) continue;
      const units = s.cost === null || s.cost === undefined ? null : moneyFromColumn(s.cost)!;
      const session = this.row({
        day,
        kind: 'session-cost',
        sessionId: plan.sessionId,
        agentId: null,
        model: null,
        status: null,
      });
      for (const target of [row, session]) {
        target.counts.costedSteps += sign;
        if (units !== null) {
          target.counts.pricedSteps += sign;
          target.cost += BigInt(sign) * units;
        }
        if (s.costSource === 'unpriced') target.counts.unpricedSteps += sign;
      }
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
    for (const h of handoffs) {
      this.row({
        day,
        kind: 'handoff',
        sessionId: h.reason,
        agentId: h.fromAgentId,
        model: h.toAgentId,
        status: null,
      }).counts.items += sign;
    }
  }

  /** A step's cache read, cache write and reasoning tokens on its plan's session (the tokens report per session). */
  private addSessionParts(day: string, sessionId: string, parts: number[], sign: 1 | -1): void {
    const c = this.row({ day, kind: 'session-tokens', sessionId, agentId: null, model: null, status: null }).counts;
    c.cacheReadTokens += sign * parts[0];
    c.cacheWriteTokens += sign * parts[1];
    c.reasoningTokens += sign * parts[2];
  }

  private row(key: Omit<RollupSums, 'counts' | 'cost'> & { kind: RollupKind }): RollupSums {
    const text = JSON.stringify([key.day, key.kind, key.sessionId, key.agentId, key.model, key.status]);
    let row = this.rows.get(text);
    if (!row) {
      row = { ...key, id: rollupId(key), counts: zeroCounts(), cost: 0n };
      this.rows.set(text, row);
    }
    return row;
  }

  /** The rows whose sums moved, by id (sorted: writers of one key take its lock in one order). */
  changed(): AnalyticsRollupRow[] {
    const out: AnalyticsRollupRow[] = [];
    for (const r of this.rows.values()) {
      if (r.cost === 0n && ROLLUP_COUNTS.every((k) => r.counts[k] === 0)) continue;
      if (this.kinds && !this.kinds.includes(r.kind)) continue;
      out.push({
        id: r.id,
        day: r.day,
        kind: r.kind,
        sessionId: r.sessionId,
        agentId: r.agentId,
        model: r.model,
        status: r.status,
        ...r.counts,
        cost: formatMoney(r.cost),
      });
    }
    return out.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  /** Adds the deltas to the stored rollups (one upsert, chunked to the database's limits), and forgets them. */
  async write(rows: RowStore): Promise<void> {
    const changed = this.changed();
    this.rows.clear();
    if (changed.length === 0) return;
    const keep = Object.fromEntries([...ROLLUP_COUNTS, 'cost'].map((k) => [k, 'add' as const]));
    await rows.upsert(ENTITY.rollup, changed, { key: 'id', update: [], keep, concurrentInserts: true });
  }
}
