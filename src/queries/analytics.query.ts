import type { DataSource, SelectQueryBuilder } from 'typeorm';
import { ENTITY, ExecutionPlanRow, PlanHandoffRow, PlanStepRow } from '../store/entities';
import type { DateRange } from './query-args';
import { compareText, ratio, round, toDay, toIso, toNum } from './row-normalize';
import { sqlDialectOf } from '../store/sql/dialects';
import { combined, planTotals, rollupQuery, stepTotals } from './rollup-totals.query';
import { groupByText, whereCreatedIn } from './query-clauses';

/**
 * The product's analytics queries (plans per day, agent usage, handoff patterns), on every dialect. Every report
 * selects plans by
 * `created_at` in `[from, to)`, so the reports of one range describe the same plans and add up.
 * Aggregation runs in SQL; division, rounding and ordering run here, so floats and collations
 * cannot make two databases disagree.
 */

export interface RangeEcho {
  from: string | null;
  to: string | null;
}

export interface DailyPlans {
  /** UTC calendar day, `YYYY-MM-DD`. */
  day: string;
  totalPlans: number;
  completed: number;
  failed: number;
  cancelled: number;
  /** planning or executing */
  inProgress: number;
}

export interface AgentUsage {
  agentId: string;
  totalSteps: number;
  completed: number;
  failed: number;
  skipped: number;
  /** completed / (completed + failed): skipped and unfinished steps say nothing about the agent; null if none ran. */
  successRate: number | null;
  /** Tokens per step that ran (completed or failed), 2 decimals; null if none ran. */
  avgInputTokens: number | null;
  avgOutputTokens: number | null;
  inputTokens: number;
  outputTokens: number;
}

export interface HandoffPattern {
  fromAgentId: string;
  toAgentId: string;
  reason: string;
  count: number;
}

export function echoRange(range: DateRange): RangeEcho {
  return { from: range.from ? toIso(range.from) : null, to: range.to ? toIso(range.to) : null };
}

const countWhere = (condition: string) => `SUM(CASE WHEN ${condition} THEN 1 ELSE 0 END)`;

export function buildPlansPerDayQuery(ds: DataSource, range: DateRange): SelectQueryBuilder<ExecutionPlanRow> {
  const day = sqlDialectOf(ds).utcDay('p.createdAt');
  const qb = ds
    .getRepository<ExecutionPlanRow>(ENTITY.plan)
    .createQueryBuilder('p')
    .select(day, 'day')
    .addSelect('COUNT(*)', 'total')
    .addSelect(countWhere(`p.status = 'completed'`), 'completed')
    .addSelect(countWhere(`p.status = 'failed'`), 'failed')
    .addSelect(countWhere(`p.status = 'cancelled'`), 'cancelled')
    .groupBy(day);
  return whereCreatedIn(ds, qb, range);
}

/** Plans per UTC day with completed and failed, newest day first: from the rollups (rollup-totals.query.ts). */
export async function plansPerDay(ds: DataSource, range: DateRange = {}): Promise<DailyPlans[]> {
  const days = new Map<string, { day: string; total: number; completed: number; failed: number; cancelled: number }>();
  for (const t of await planTotals(ds, range, 'day')) {
    let d = days.get(t.key);
    if (!d) days.set(t.key, (d = { day: t.key, total: 0, completed: 0, failed: 0, cancelled: 0 }));
    d.total += t.plans;
    if (t.status === 'completed' || t.status === 'failed' || t.status === 'cancelled') d[t.status] += t.plans;
  }
  return toDailyPlans([...days.values()].filter((d) => d.total !== 0));
}

/** plansPerDay by a scan of every plan in the range: the reference the rollups are tested against. */
export async function plansPerDayScan(ds: DataSource, range: DateRange = {}): Promise<DailyPlans[]> {
  return toDailyPlans(await buildPlansPerDayQuery(ds, range).getRawMany<Record<string, unknown>>());
}

function toDailyPlans(rows: Array<Record<string, unknown>>): DailyPlans[] {
  return rows
    .map((r) => {
      const [totalPlans, completed, failed, cancelled] = [r.total, r.completed, r.failed, r.cancelled].map(toNum);
      return {
        day: toDay(r.day),
        totalPlans,
        completed,
        failed,
        cancelled,
        inProgress: totalPlans - completed - failed - cancelled,
      };
    })
    .sort((a, b) => compareText(b.day, a.day));
}

export function buildAgentUsageQuery(ds: DataSource, range: DateRange): SelectQueryBuilder<PlanStepRow> {
  const qb = ds
    .getRepository<PlanStepRow>(ENTITY.step)
    .createQueryBuilder('s')
    // TypeORM adds `p.deleted_at IS NULL` to the join; said again for readers of the SQL
    .innerJoin(ENTITY.plan, 'p', 'p.id = s.planId AND p.deletedAt IS NULL')
    .select('s.agentId', 'agentId')
    .addSelect('COUNT(*)', 'total')
    .addSelect(countWhere(`s.status = 'completed'`), 'completed')
    .addSelect(countWhere(`s.status = 'failed'`), 'failed')
    .addSelect(countWhere(`s.status = 'skipped'`), 'skipped')
    .addSelect(sqlDialectOf(ds).sumInt('s.inputTokens'), 'inputTokens')
    .addSelect(sqlDialectOf(ds).sumInt('s.outputTokens'), 'outputTokens');
  return whereCreatedIn(ds, groupByText(ds, qb, ['s.agentId']), range);
}

/** Per agent: steps, success rate, average tokens; most used agent first. From the rollups (rollup-totals.query.ts). */
export async function agentUsage(ds: DataSource, range: DateRange = {}): Promise<AgentUsage[]> {
  type Agent = Record<'total' | 'completed' | 'failed' | 'skipped' | 'inputTokens' | 'outputTokens', number>;
  const agents = new Map<string, Agent & { agentId: string }>();
  for (const t of await stepTotals(ds, range)) {
    let a = agents.get(t.agentId);
    if (!a) {
      a = { agentId: t.agentId, total: 0, completed: 0, failed: 0, skipped: 0, inputTokens: 0, outputTokens: 0 };
      agents.set(t.agentId, a);
    }
    a.total += t.steps;
    a.inputTokens += t.inputTokens;
    a.outputTokens += t.outputTokens;
    if (t.status === 'completed' || t.status === 'failed' || t.status === 'skipped') a[t.status] += t.steps;
  }
  return toAgentUsage([...agents.values()].filter((a) => a.total !== 0));
}

/** agentUsage by a scan of every step in the range: the reference the rollups are tested against. */
export async function agentUsageScan(ds: DataSource, range: DateRange = {}): Promise<AgentUsage[]> {
  return toAgentUsage(await buildAgentUsageQuery(ds, range).getRawMany<Record<string, unknown>>());
}

function toAgentUsage(rows: Array<Record<string, unknown>>): AgentUsage[] {
  return rows
    .map((r): AgentUsage => {
      const [totalSteps, completed, failed, skipped, inputTokens, outputTokens] = [
        r.total,
        r.completed,
        r.failed,
        r.skipped,
        r.inputTokens,
        r.outputTokens,
      ].map(toNum);
      const ran = completed + failed;
      return {
        agentId: String(r.agentId),
        totalSteps,
        completed,
        failed,
        skipped,
        successRate: ratio(completed, ran),
        avgInputTokens: ran > 0 ? round(inputTokens / ran) : null,
        avgOutputTokens: ran > 0 ? round(outputTokens / ran) : null,
        inputTokens,
        outputTokens,
      };
    })
    .sort((a, b) => b.totalSteps - a.totalSteps || compareText(a.agentId, b.agentId));
}

export function buildHandoffPatternsQuery(ds: DataSource, range: DateRange): SelectQueryBuilder<PlanHandoffRow> {
  const qb = ds
    .getRepository<PlanHandoffRow>(ENTITY.handoff)
    .createQueryBuilder('h')
    .innerJoin(ENTITY.plan, 'p', 'p.id = h.planId AND p.deletedAt IS NULL')
    .select('h.fromAgentId', 'fromAgentId')
    .addSelect('h.toAgentId', 'toAgentId')
    .addSelect('h.reason', 'reason')
    .addSelect('COUNT(*)', 'count');
  return whereCreatedIn(ds, groupByText(ds, qb, ['h.fromAgentId', 'h.toAgentId', 'h.reason']), range);
}

/** The handoff matrix with reasons: one row per (from, to, reason), most frequent first. */
export async function handoffPatterns(ds: DataSource, range: DateRange = {}): Promise<HandoffPattern[]> {
  const d = sqlDialectOf(ds);
  // whole days from the `handoff` rollups (from-agent in agent_id, to-agent in model, reason in session_id)
  const rollup = async (days: Parameters<typeof rollupQuery>[2]) => {
    const qb = rollupQuery(ds, 'handoff', days)
      .select('r.agentId', 'fromAgentId')
      .addSelect('r.model', 'toAgentId')
      .addSelect('r.sessionId', 'reason')
      .addSelect(d.sumInt('r.items'), 'count');
    groupByText(ds, qb, ['r.agentId', 'r.model', 'r.sessionId']);
    return (await qb.getRawMany<Record<string, unknown>>()).map(handoffPattern);
  };
  const scan = async (part: DateRange) =>
    (await buildHandoffPatternsQuery(ds, part).getRawMany<Record<string, unknown>>()).map(handoffPattern);
  const rows = await combined(range, { rollup, scan }, (r) => JSON.stringify([r.fromAgentId, r.toAgentId, r.reason]));
  return sortPatterns(rows.filter((r) => r.count !== 0));
}

/** The handoff matrix by a scan of the range's handoffs (the reference the rollups answer as). */
export async function handoffPatternsScan(ds: DataSource, range: DateRange = {}): Promise<HandoffPattern[]> {
  return sortPatterns(
    (await buildHandoffPatternsQuery(ds, range).getRawMany<Record<string, unknown>>()).map(handoffPattern),
  );
}

function handoffPattern(r: Record<string, unknown>): HandoffPattern {
  return {
    fromAgentId: String(r.fromAgentId),
    toAgentId: String(r.toAgentId),
    reason: String(r.reason),
    count: toNum(r.count),
  };
}

function sortPatterns(rows: HandoffPattern[]): HandoffPattern[] {
  return rows.sort(
    (a, b) =>
      b.count - a.count ||
      compareText(a.fromAgentId, b.fromAgentId) ||
      compareText(a.toAgentId, b.toAgentId) ||
      compareText(a.reason, b.reason),
  );
}
