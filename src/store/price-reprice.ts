import { keepingRollups } from './rollups/rollup-measure';
import { randomUUID } from 'node:crypto';
import { idsIn } from './sql/id-lists';
import type { DataSource, EntityManager, SelectQueryBuilder } from 'typeorm';
import { costColumn, formatMoney, moneyFromColumn, priceStep, type PriceOverride } from '../pricing';
import { ENTITY, PlanStepRow, PriceRepriceRow } from './entities';
import { lockHeadsStatement } from './ledger/log-statements';
import { listPriceOverrides, toPriceOverride } from './price-overrides';
import { sqlDialectOf } from './sql/dialects';
import { chunk } from './sql/batch-limits';
import { isRetryableDbError } from './db-errors';

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

/** Steps per keyset page: what one page reads, locks the plans of and writes in one transaction. */
const PAGE = 200;

/** The columns a reprice reads of a step: what prices it and where it belongs, never its outputs. */
const PRICING = [
  'id',
  'planId',
  'model',
  'provider',
  'inputTokens',
  'outputTokens',
  'cacheReadTokens',
  'cacheWriteTokens',
  'reasoningTokens',
  'reportedCost',
  'cost',
  'costSource',
  'priceRef',
  'completedAt',
] as const;
type PricedStep = Pick<PlanStepRow, (typeof PRICING)[number]>;

/**
 * Prices again, at the prices in force now (overrides included) for each step's time, the
 * finished steps of live plans whose completion falls in [from, to) (and of one model): a dry run
 * says per model what would change; an applied run changes those steps only, the totals of their
 * plans, and writes one audit row. Steps with a reported cost keep it.
 *
 * The steps are read in keyset pages of their pricing columns only, so memory stays flat whatever
 * the range holds. An applied run prices each page under the head locks of its plans: it locks
 * them, reads the page's steps again, prices what it read and writes the costs and the plans'
 * totals in a few set-based statements, in one transaction. A worker that re-runs a step
 * meanwhile either commits first (the reprice prices its new usage) or waits for the lock (and
 * prices its event itself): no cost is computed from usage that was replaced.
 */
export async function repriceSteps(ds: DataSource, req: RepriceRequest, now = new Date()): Promise<RepriceOutcome> {
  const overrides = (await listPriceOverrides(ds)).map(toPriceOverride);
  const tally = new Tally();
  let after: PageKey | null = null;
  for (;;) {
    const page = await pageKeys(ds, req, after);
    if (page.length === 0) break;
    after = page[page.length - 1];
    if (req.apply) tally.add(await applyPage(ds, req, page, overrides));
    else
      for (const s of await pricingRows(
        ds.manager,
        req,
        page.map((k) => k.id),
      ))
        tally.price(s, overrides);
  }
  const outcome = tally.outcome();
  if (!req.apply || outcome.changedSteps === 0) return outcome;
  const audit: PriceRepriceRow = {
    id: randomUUID(),
    ranAt: now,
    fromAt: req.from,
    toAt: req.to,
    model: req.model ?? null,
    steps: outcome.changedSteps,
    plans: outcome.plans,
    oldTotal: outcome.oldCost,
    newTotal: outcome.newCost,
    diff: JSON.stringify(outcome.byModel),
  };
  await ds.getRepository<PriceRepriceRow>(ENTITY.priceReprice).insert(audit);
  return { ...outcome, applied: true, auditId: audit.id };
}

/** The selected steps of live plans, finished in the range (the reprice's one definition of it). */
function selected(m: EntityManager, req: RepriceRequest): SelectQueryBuilder<PlanStepRow> {
  const d = sqlDialectOf(m);
  const qb = m
    .getRepository<PlanStepRow>(ENTITY.step)
    .createQueryBuilder('s')
    .innerJoin(ENTITY.plan, 'p', 'p.id = s.planId AND p.deletedAt IS NULL')
    .where("s.status IN ('completed', 'failed')")
    .andWhere('s.completedAt >= :from', { from: d.instant(req.from) })
    .andWhere('s.completedAt < :to', { to: d.instant(req.to) });
  if (req.model !== undefined) qb.andWhere(d.sameText('s.model', ':model'), { model: req.model });
  return qb;
}

/** Where a page ends: steps go by plan, then id, so a plan's steps are consecutive. */
interface PageKey {
  planId: string;
  id: string;
}

/** The next page of selected steps after `after` (keyset on plan, id). */
function pageKeys(ds: DataSource, req: RepriceRequest, after: PageKey | null): Promise<PageKey[]> {
  const qb = selected(ds.manager, req)
    .select('s.planId', 'planId')
    .addSelect('s.id', 'id')
    .orderBy('s.planId', 'ASC')
    .addOrderBy('s.id', 'ASC')
    .limit(PAGE);
  // `s.planId >= :afterPlan` on its own: the bound an index range on plan_id starts from, so each
  // page reads from where the last ended instead of from the first plan
  if (after !== null)
    qb.andWhere('s.planId >= :afterPlan AND (s.planId > :afterPlan OR (s.planId = :afterPlan AND s.id > :afterId))', {
      afterPlan: after.planId,
      afterId: after.id,
    });
  return qb.getRawMany();
}

/** The pricing columns of these steps, if they are still selected, by plan then id (as the Tally counts plans). */
function pricingRows(m: EntityManager, req: RepriceRequest, ids: string[]): Promise<PricedStep[]> {
  return selected(m, req)
    .select(PRICING.map((c) => `s.${c}`))
    .andWhere(...idsIn(sqlDialectOf(m), 's.id', ids))
    .orderBy('s.planId', 'ASC')
    .addOrderBy('s.id', 'ASC')
    .getMany();
}

/** Times a page's transaction is tried when the database says to try again (a deadlock, SQLite busy). */
const ATTEMPTS = 5;

/** One page of an applied run, retried as a whole on a transient error; what it changed. */
async function applyPage(
  ds: DataSource,
  req: RepriceRequest,
  page: PageKey[],
  overrides: readonly PriceOverride[],
): Promise<Tally> {
  for (let attempt = 1; ; attempt++) {
    const tally = new Tally();
    try {
      await sqlDialectOf(ds).transaction(ds, (m) => repriceLocked(m, req, page, overrides, tally));
      return tally;
    } catch (err) {
      if (!isRetryableDbError(err) || attempt >= ATTEMPTS) throw err;
      await new Promise((resolve) => setTimeout(resolve, 100 * attempt));
    }
  }
}

/** One page of an applied run, in its transaction: lock, read again, price, write. */
async function repriceLocked(
  m: EntityManager,
  req: RepriceRequest,
  page: PageKey[],
  overrides: readonly PriceOverride[],
  tally: Tally,
): Promise<void> {
  // the page's plans' heads, locked in id order before anything of them is read again (the first
  // statement writes: on SQLite the transaction waits for the write lock instead of failing to upgrade)
  const planIds = [...new Set(page.map((k) => k.planId))].sort();
  await lockHeadsStatement(m, sqlDialectOf(m), planIds).execute();
  // the costs change: the rollups move with them (keepingRollups)
  await keepingRollups(m, planIds, () => repriceRows(m, { req, page, overrides, tally }));
}

/** Price the page's steps again and write the changed ones and their plans' totals. */
async function repriceRows(
  m: EntityManager,
  {
    req,
    page,
    overrides,
    tally,
  }: { req: RepriceRequest; page: PageKey[]; overrides: readonly PriceOverride[]; tally: Tally },
): Promise<void> {
  const ids = page.map((k) => k.id);
  const changed = (await pricingRows(m, req, ids)).flatMap((s) => tally.price(s, overrides));
  if (changed.length === 0) return;
  await setByKey(m, ENTITY.step, 'id', changed, ['cost', 'costSource', 'priceRef']);
  const touched = [...new Set(changed.map((s) => s.planId))].sort();
  // every step of the changed plans, two columns each: their totals again
  const costs: Array<Pick<PlanStepRow, 'id' | 'planId' | 'cost' | 'costSource'>> = await m
    .getRepository<PlanStepRow>(ENTITY.step)
    .createQueryBuilder('s')
    .select(['s.id', 's.planId', 's.cost', 's.costSource'])
    .where(...idsIn(sqlDialectOf(m), 's.planId', touched))
    .getMany();
  const totals = touched.map((id) => {
    const own = costs.filter((s) => s.planId === id);
    return {
      id,
      totalCost: formatMoney(own.reduce((t, s) => t + (moneyFromColumn(s.cost) ?? 0n), 0n)),
      unpricedSteps: own.filter((s) => s.costSource === 'unpriced').length,
    };
  });
  await setByKey(m, ENTITY.plan, 'id', totals, ['totalCost', 'unpricedSteps']);
}

/**
 * One UPDATE per chunk of rows: `SET col = CASE key WHEN ... THEN ... END ... WHERE key IN (...)`,
 * the same SQL on every database, within its parameter limit.
 */
async function setByKey<T extends Record<string, unknown>>(
  m: EntityManager,
  entity: string,
  key: string,
  rows: T[],
  columns: readonly string[],
): Promise<void> {
  const meta = m.connection.getMetadata(entity);
  const q = (prop: string) => m.connection.driver.escape(meta.findColumnWithPropertyName(prop)!.databaseName);
  const perRow = 1 + 2 * columns.length;
  for (const part of chunk(rows, Math.floor(sqlDialectOf(m).maxParams / perRow))) {
    const params: Record<string, unknown> = {};
    const sets = columns.map((c, ci) => {
      const arms = part.map((r, ri) => {
        params[`k${ci}_${ri}`] = r[key];
        params[`v${ci}_${ri}`] = r[c];
        return `WHEN :k${ci}_${ri} THEN :v${ci}_${ri}`;
      });
      // ELSE the column: its type is the CASE's, so PostgreSQL reads the parameters as that type
      return [q(c), () => `CASE ${q(key)} ${arms.join(' ')} ELSE ${q(c)} END`] as const;
    });
    part.forEach((r, i) => (params[`id${i}`] = r[key]));
    await m
      .createQueryBuilder()
      .update(entity)
      .set(Object.fromEntries(columns.map((c, i) => [c, sets[i][1]])))
      .where(`${q(key)} IN (${part.map((_, i) => `:id${i}`).join(', ')})`)
      .setParameters(params)
      .callListeners(false)
      .execute();
  }
}

/** Old and new totals, per model and overall, as pages are priced (bounded by the models, not the steps). */
class Tally {
  private readonly lines = new Map<string | null, RepriceLine & { old: bigint; new: bigint }>();
  private steps = 0;
  private changed = 0;
  private plans = 0;
  /** The first and last plans counted: a plan's steps come one after another (pages go by plan). */
  private firstPlan: string | null = null;
  private lastPlan: string | null = null;

  /** Prices a step; the step with its new cost when that differs from the stored one. */
  price(s: PricedStep, overrides: readonly PriceOverride[]): PricedStep[] {
    const priced = priceStep(s, new Date(s.completedAt!), overrides);
    const cost = costColumn(priced);
    const line = this.lines.get(s.model) ?? {
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
    this.lines.set(s.model, line);
    this.steps++;
    line.steps++;
    line.old += moneyFromColumn(s.cost) ?? 0n;
    line.new += priced.cost ?? 0n;
    if (s.costSource === 'unpriced') line.oldUnpriced++;
    if (priced.source === 'unpriced') line.newUnpriced++;
    if (cost === s.cost && priced.source === s.costSource && priced.priceRef === s.priceRef) return [];
    line.changedSteps++;
    this.changed++;
    if (s.planId !== this.lastPlan) {
      this.plans++;
      this.firstPlan ??= s.planId;
      this.lastPlan = s.planId;
    }
    return [{ ...s, cost, costSource: priced.source, priceRef: priced.priceRef }];
  }

  /** Adds the tally of the next page (committed). */
  add(page: Tally): void {
    for (const [model, l] of page.lines) {
      const mine = this.lines.get(model);
      if (!mine) {
        this.lines.set(model, { ...l });
        continue;
      }
      mine.steps += l.steps;
      mine.changedSteps += l.changedSteps;
      mine.oldUnpriced += l.oldUnpriced;
      mine.newUnpriced += l.newUnpriced;
      mine.old += l.old;
      mine.new += l.new;
    }
    this.steps += page.steps;
    this.changed += page.changed;
    // a plan whose steps span two pages is one plan
    this.plans += page.plans - (page.firstPlan !== null && page.firstPlan === this.lastPlan ? 1 : 0);
    this.firstPlan ??= page.firstPlan;
    if (page.lastPlan !== null) this.lastPlan = page.lastPlan;
  }

  outcome(): RepriceOutcome {
    const all = [...this.lines.values()];
    const byModel = all
      .sort((a, b) => (a.model ?? '').localeCompare(b.model ?? ''))
      .map(({ old, new: next, ...line }) => ({ ...line, oldCost: formatMoney(old), newCost: formatMoney(next) }));
    return {
      applied: false,
      auditId: null,
      steps: this.steps,
      changedSteps: this.changed,
      plans: this.plans,
      oldCost: formatMoney(all.reduce((t, l) => t + l.old, 0n)),
      newCost: formatMoney(all.reduce((t, l) => t + l.new, 0n)),
      byModel,
    };
  }
}
