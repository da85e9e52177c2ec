import type { DataSource, SelectQueryBuilder } from 'typeorm';
import { displayMoney } from '../pricing';
import { ENTITY, PlanStepRow } from '../store/entities';
import { sqlDialectOf } from '../store/sql/dialects';
import { groupByText, whereCreatedIn } from './query-clauses';
import { COST_DIMENSIONS, type CostDimension, type DateRange } from './query-args';
import { compareText, toNum } from './row-normalize';
import { sessionCosts, stepTotals } from './rollup-totals.query';
import {
  addReported,
  noReported,
  type ReportedSums,
  type ReportedVsPriced,
  reportedView,
  reportedVsPriced,
} from './reported-costs.query';

export { COST_DIMENSIONS, type CostDimension, type ReportedVsPriced };

/** What a group of steps cost. */
export interface CostLine {
  /** The model, agent, session or plan id; null for steps that named no model. */
  key: string | null;
  /** USD as an exact decimal string, the sum of the priced steps' costs. */
  cost: string;
  /** Steps with a cost (reported, table or override). */
  pricedSteps: number;
  /** Steps that used tokens at no known price: `cost` leaves them out. */
  unpricedSteps: number;
  /**
   * The steps whose cost is a reported one (e.g. `llm.cost.total`), their reported cost beside what
   * the prices give for them, and whether the two differ; null when no step reported a cost.
   */
  reported: ReportedVsPriced | null;
}

export interface CostUsage {
  by: CostDimension;
  lines: CostLine[];
  total: Omit<CostLine, 'key'>;
}

const GROUP_COLUMN: Record<CostDimension, string> = {
  model: 's.model',
  agent: 's.agentId',
  session: 'p.sessionId',
  plan: 'p.id',
};

/** Steps that have a cost or are unpriced, grouped by one dimension, of plans created in the range. */
export function buildCostQuery(ds: DataSource, range: DateRange, by: CostDimension): SelectQueryBuilder<PlanStepRow> {
  const d = sqlDialectOf(ds);
  const column = GROUP_COLUMN[by];
  const qb = ds
    .getRepository<PlanStepRow>(ENTITY.step)
    .createQueryBuilder('s')
    .innerJoin(ENTITY.plan, 'p', 'p.id = s.planId AND p.deletedAt IS NULL')
    .select(column, 'key')
    .addSelect(d.sumMoney('s.cost'), 'cost')
    .addSelect(`SUM(CASE WHEN s.cost IS NOT NULL THEN 1 ELSE 0 END)`, 'priced')
    .addSelect(`SUM(CASE WHEN s.costSource = 'unpriced' THEN 1 ELSE 0 END)`, 'unpriced')
    .where('s.costSource IS NOT NULL');
  return whereCreatedIn(ds, groupByText(ds, qb, [column]), range);
}

interface CostSums {
  key: string | null;
  units: bigint;
  pricedSteps: number;
  unpricedSteps: number;
}

/**
 * Cost per model, agent, session or plan, most expensive first: sums of the costs fixed when each
 * step was stored, exact (decimal arithmetic in the database, bigint here). Unpriced steps are
 * counted per line, never as zero cost. Per model, agent and session from the rollups
 * (rollup-totals.query.ts); per plan from the steps.
 */
export async function costUsage(ds: DataSource, range: DateRange, by: CostDimension): Promise<CostUsage> {
  if (by === 'plan') return costUsageScan(ds, range, by);
  const lines = new Map<string, CostSums & { costed: number }>();
  const add = (
    key: string | null,
    t: { cost: bigint; costedSteps: number; pricedSteps: number; unpricedSteps: number },
  ) => {
    const k = JSON.stringify(key);
    let line = lines.get(k);
    if (!line) lines.set(k, (line = { key, units: 0n, pricedSteps: 0, unpricedSteps: 0, costed: 0 }));
    line.units += t.cost;
    line.costed += t.costedSteps;
    line.pricedSteps += t.pricedSteps;
    line.unpricedSteps += t.unpricedSteps;
  };
  if (by === 'session') for (const t of await sessionCosts(ds, range)) add(t.sessionId, t);
  else for (const t of await stepTotals(ds, range)) add(by === 'model' ? t.model : t.agentId, t);
  return toCostUsage(
    by,
    [...lines.values()].filter((l) => l.costed !== 0),
    await reportedVsPriced(ds, range, by),
  );
}

/** costUsage by a scan of every step in the range: the reference the rollups are tested against. */
export async function costUsageScan(ds: DataSource, range: DateRange, by: CostDimension): Promise<CostUsage> {
  const d = sqlDialectOf(ds);
  const raw = await buildCostQuery(ds, range, by).getRawMany<Record<string, unknown>>();
  return toCostUsage(
    by,
    raw.map((r) => ({
      key: r.key === null || r.key === undefined ? null : String(r.key),
      units: d.summedMoney(r.cost),
      pricedSteps: toNum(r.priced),
      unpricedSteps: toNum(r.unpriced),
    })),
    await reportedVsPriced(ds, range, by),
  );
}

function toCostUsage(by: CostDimension, sums: CostSums[], reported: Map<string, ReportedSums>): CostUsage {
  const rows = sums.map(({ key, units, pricedSteps, unpricedSteps }) => ({ key, units, pricedSteps, unpricedSteps }));
  rows.sort((a, b) => (b.units > a.units ? 1 : b.units < a.units ? -1 : compareText(a.key, b.key)));
  const total = rows.reduce(
    (t, r) => ({
      units: t.units + r.units,
      pricedSteps: t.pricedSteps + r.pricedSteps,
      unpricedSteps: t.unpricedSteps + r.unpricedSteps,
    }),
    { units: 0n, pricedSteps: 0, unpricedSteps: 0 },
  );
  const allReported = noReported();
  for (const r of reported.values()) addReported(allReported, r);
  const line = <T extends { units: bigint }>({ units, ...rest }: T, own: ReportedSums | undefined) => ({
    ...rest,
    cost: displayMoney(units),
    reported: reportedView(own),
  });
  return {
    by,
    lines: rows.map((r) => line(r, reported.get(JSON.stringify(r.key)))),
    total: line(total, allReported),
  };
}
