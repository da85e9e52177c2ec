import type { DataSource } from 'typeorm';
import { displayMoney, moneyFromColumn, priceStep } from '../pricing';
import { ENTITY, type ExecutionPlanRow, type PlanStepRow } from '../store/entities';
import { listPriceOverrides, toPriceOverride } from '../store/price-overrides';
import { sqlDialectOf } from '../store/sql/dialects';
import { idsIn } from '../store/sql/id-lists';
import { whereCreatedIn } from './query-clauses';
import type { CostDimension, DateRange } from './query-args';

/**
 * A cost line's steps whose cost is the provider's (or instrumentation's) reported figure, beside
 * what the prices give for the same tokens: the reported cost is what the line's cost holds for
 * them; `pricedCost` is what the overrides or the price table would have charged.
 */
export interface ReportedVsPriced {
  /** Steps whose cost is a reported one. */
  steps: number;
  /** Their reported costs, USD as an exact decimal string. */
  reportedCost: string;
  /** What the prices give for those of them they price, USD. */
  pricedCost: string;
  /** Reported steps the prices cannot price (no known model or price): left out of `pricedCost`. */
  unpricedSteps: number;
  /** Whether any step's reported cost differs from its priced one (or has none). */
  differs: boolean;
}

/** Sums in pico-dollars, by the line's key. */
export interface ReportedSums {
  steps: number;
  reported: bigint;
  priced: bigint;
  unpriced: number;
  differs: boolean;
}

export const noReported = (): ReportedSums => ({ steps: 0, reported: 0n, priced: 0n, unpriced: 0, differs: false });

export function addReported(into: ReportedSums, s: ReportedSums): void {
  into.steps += s.steps;
  into.reported += s.reported;
  into.priced += s.priced;
  into.unpriced += s.unpriced;
  into.differs ||= s.differs;
}

export function reportedView(s: ReportedSums | undefined): ReportedVsPriced | null {
  if (!s || s.steps === 0) return null;
  return {
    steps: s.steps,
    reportedCost: displayMoney(s.reported),
    pricedCost: displayMoney(s.priced),
    unpricedSteps: s.unpriced,
    differs: s.differs,
  };
}

type ReportedStep = Pick<
  PlanStepRow,
  | 'planId'
  | 'agentId'
  | 'model'
  | 'provider'
  | 'inputTokens'
  | 'outputTokens'
  | 'cacheReadTokens'
  | 'cacheWriteTokens'
  | 'reasoningTokens'
  | 'cost'
  | 'startedAt'
  | 'completedAt'
>;

const STEP_FIELDS: (keyof ReportedStep)[] = [
  'planId',
  'agentId',
  'model',
  'provider',
  'inputTokens',
  'outputTokens',
  'cacheReadTokens',
  'cacheWriteTokens',
  'reasoningTokens',
  'cost',
  'startedAt',
  'completedAt',
];

/** The session of each plan of `planIds` (in chunks of the database's id limit). */
async function sessionsOf(ds: DataSource, planIds: string[]): Promise<Map<string, string>> {
  const d = sqlDialectOf(ds);
  const out = new Map<string, string>();
  for (let i = 0; i < planIds.length; i += d.maxIdsPerStatement) {
    const plans = await ds
      .getRepository<ExecutionPlanRow>(ENTITY.plan)
      .createQueryBuilder('p')
      .select(['p.id', 'p.sessionId'])
      .where(...idsIn(d, 'p.id', planIds.slice(i, i + d.maxIdsPerStatement)))
      .getMany();
    for (const p of plans) out.set(p.id, p.sessionId);
  }
  return out;
}

/**
 * The steps whose cost is a reported one, as IX_plan_steps_cost_source finds them: on PostgreSQL by
 * the stored generated column `reported_plan_id` (the plan id of such a step, NULL for every other:
 * migrations/1795227220000-hot-plan-step-updates.ts), elsewhere by `cost_source` itself.
 */
function reportedSteps(ds: DataSource): string {
  return sqlDialectOf(ds).name === 'postgres' ? 's.reported_plan_id IS NOT NULL' : `s.costSource = 'reported'`;
}

/**
 * The steps with a reported cost of the live plans created in `range`, priced again by the
 * overrides or the price table at the step's time (its completion, as the worker priced it), and
 * summed by the cost report's key. Reads the steps themselves (the rollups keep the cost as stored,
 * which for these steps is the reported one), through the entities, so every database reads the
 * same money and times.
 */
export async function reportedVsPriced(
  ds: DataSource,
  range: DateRange,
  by: CostDimension,
): Promise<Map<string, ReportedSums>> {
  const qb = ds
    .getRepository<PlanStepRow>(ENTITY.step)
    .createQueryBuilder('s')
    .innerJoin(ENTITY.plan, 'p', 'p.id = s.planId AND p.deletedAt IS NULL')
    .select(STEP_FIELDS.map((f) => `s.${f}`))
    .addSelect('s.id')
    .where(reportedSteps(ds));
  const steps = (await whereCreatedIn(ds, qb, range).getMany()) as ReportedStep[];
  const out = new Map<string, ReportedSums>();
  if (steps.length === 0) return out;
  const overrides = (await listPriceOverrides(ds)).map(toPriceOverride);
  const sessions = by === 'session' ? await sessionsOf(ds, [...new Set(steps.map((s) => s.planId))]) : undefined;
  for (const s of steps) {
    const key =
      by === 'model' ? s.model : by === 'agent' ? s.agentId : by === 'plan' ? s.planId : sessions!.get(s.planId)!;
    const k = JSON.stringify(key ?? null);
    let sums = out.get(k);
    if (!sums) out.set(k, (sums = noReported()));
    addReported(sums, priceAgain(s, overrides));
  }
  return out;
}

/** One reported step's sums: its reported cost, and what the prices give for its tokens at its time. */
function priceAgain(s: ReportedStep, overrides: Parameters<typeof priceStep>[2]): ReportedSums {
  const reported = moneyFromColumn(s.cost) ?? 0n;
  const at = s.completedAt ?? s.startedAt;
  const priced =
    at === null
      ? null
      : priceStep(
          {
            model: s.model,
            provider: s.provider,
            inputTokens: s.inputTokens,
            outputTokens: s.outputTokens,
            cacheReadTokens: s.cacheReadTokens,
            cacheWriteTokens: s.cacheWriteTokens,
            reasoningTokens: s.reasoningTokens,
            reportedCost: null,
          },
          at,
          overrides,
        ).cost;
  return {
    steps: 1,
    reported,
    priced: priced ?? 0n,
    unpriced: priced === null ? 1 : 0,
    differs: priced !== reported,
  };
}
