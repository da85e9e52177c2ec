import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { costColumn, formatMoney, moneyFromColumn, priceStep } from '../pricing';
import { ENTITY, PlanStepRow, PriceRepriceRow } from './entities';
import { lockHeadsStatement } from './ledger/log-statements';
import { listPriceOverrides, toPriceOverride } from './price-overrides';
import { sqlDialectOf } from './sql/dialects';
import { chunk } from './sql/batch-limits';

export interface RepriceRequest {
  /** Steps finished at or after this instant... */
  from: Date;
  /** ...and before this one. */
  to: Date;
  /** Only steps of this model (exact name). */
  model?: string;
  /** Write the new costs and an audit row; otherwise only say what would change. */
  apply: boolean;
}

/** Old and new totals of the selected steps of one model. */
export interface RepriceLine {
  model: string | null;
  steps: number;
  changedSteps: number;
  oldCost: string;
  newCost: string;
  oldUnpriced: number;
  newUnpriced: number;
}

export interface RepriceOutcome {
  applied: boolean;
  /** The audit row written (price_reprices), when applied and something changed. */
  auditId: string | null;
  steps: number;
  changedSteps: number;
  plans: number;
  oldCost: string;
  newCost: string;
  byModel: RepriceLine[];
}

/**
 * Prices again, at the prices in force now (overrides included) for each step's time, the
 * finished steps of live plans whose completion falls in [from, to) (and of one model): a dry run
 * says per model what would change; an applied run changes those steps only, the totals of their
 * plans (under each plan's head lock, which also tells the workers' row caches), and writes one
 * audit row. Steps with a reported cost keep it.
 */
export async function repriceSteps(ds: DataSource, req: RepriceRequest, now = new Date()): Promise<RepriceOutcome> {
  const d = sqlDialectOf(ds);
  const overrides = (await listPriceOverrides(ds)).map(toPriceOverride);
  const qb = ds
    .getRepository<PlanStepRow>(ENTITY.step)
    .createQueryBuilder('s')
    .innerJoin(ENTITY.plan, 'p', 'p.id = s.planId AND p.deletedAt IS NULL')
    .where("s.status IN ('completed', 'failed')")
    .andWhere('s.completedAt >= :from', { from: d.instant(req.from) })
    .andWhere('s.completedAt < :to', { to: d.instant(req.to) });
  if (req.model !== undefined) qb.andWhere(d.sameText('s.model', ':model'), { model: req.model });
  const steps = await qb.getMany();
  const lines = new Map<string | null, RepriceLine & { old: bigint; new: bigint }>();
  const changed: PlanStepRow[] = [];
  for (const s of steps) {
    const priced = priceStep(s, new Date(s.completedAt!), overrides);
    const cost = costColumn(priced);
    const line = lines.get(s.model) ?? {
      model: s.model,
      steps: 0,
      changedSteps: 0,
      oldCost: '',
      newCost: '',
      oldUnpriced: 0,
      newUnpriced: 0,
      old: 0n,
      new: 0n,
    };
    lines.set(s.model, line);
    line.steps++;
    line.old += moneyFromColumn(s.cost) ?? 0n;
    line.new += priced.cost ?? 0n;
    if (s.costSource === 'unpriced') line.oldUnpriced++;
    if (priced.source === 'unpriced') line.newUnpriced++;
    if (cost !== s.cost || priced.source !== s.costSource || priced.priceRef !== s.priceRef) {
      line.changedSteps++;
      changed.push({ ...s, cost, costSource: priced.source, priceRef: priced.priceRef });
    }
  }
  const byModel = [...lines.values()]
    .sort((a, b) => (a.model ?? '').localeCompare(b.model ?? ''))
    .map(({ old, new: next, ...line }) => ({ ...line, oldCost: formatMoney(old), newCost: formatMoney(next) }));
  const oldTotal = [...lines.values()].reduce((t, l) => t + l.old, 0n);
  const newTotal = [...lines.values()].reduce((t, l) => t + l.new, 0n);
  const planIds = [...new Set(changed.map((s) => s.planId))].sort();
  const outcome: RepriceOutcome = {
    applied: false,
    auditId: null,
    steps: steps.length,
    changedSteps: changed.length,
    plans: planIds.length,
    oldCost: formatMoney(oldTotal),
    newCost: formatMoney(newTotal),
    byModel,
  };
  if (!req.apply || changed.length === 0) return outcome;
  const auditId = randomUUID();
  for (const part of chunk(planIds, 100)) {
    const ids = new Set(part);
    await d.transaction(ds, async (m) => {
      await lockHeadsStatement(m, part).execute();
      for (const s of changed.filter((c) => ids.has(c.planId)))
        await m
          .getRepository<PlanStepRow>(ENTITY.step)
          .update({ id: s.id }, { cost: s.cost, costSource: s.costSource, priceRef: s.priceRef });
      const all = await m.getRepository<PlanStepRow>(ENTITY.step).find({ where: part.map((planId) => ({ planId })) });
      for (const planId of part) {
        const own = all.filter((s) => s.planId === planId);
        const total = own.reduce((t, s) => t + (moneyFromColumn(s.cost) ?? 0n), 0n);
        const unpriced = own.filter((s) => s.costSource === 'unpriced').length;
        await m
          .getRepository(ENTITY.plan)
          .update({ id: planId }, { totalCost: formatMoney(total), unpricedSteps: unpriced });
      }
    });
  }
  const audit: PriceRepriceRow = {
    id: auditId,
    ranAt: now,
    fromAt: req.from,
    toAt: req.to,
    model: req.model ?? null,
    steps: changed.length,
    plans: planIds.length,
    oldTotal: outcome.oldCost,
    newTotal: outcome.newCost,
    diff: JSON.stringify(byModel),
  };
  await ds.getRepository<PriceRepriceRow>(ENTITY.priceReprice).insert(audit);
  return { ...outcome, applied: true, auditId };
}
