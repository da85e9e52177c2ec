import type { EntityManager } from 'typeorm';
import { ENTITY, type ExecutionPlanRow, type PlanHandoffRow, type PlanStepRow } from '../entities';
import { sqlDialectOf } from '../sql/dialects';
import { idsIn } from '../sql/id-lists';
import { type RollupHandoff, type RollupPlan, type RollupStep, RollupDelta } from './rollup-rows';

const PLAN_COLUMNS = {
  id: true,
  sessionId: true,
  status: true,
  totalInputTokens: true,
  totalOutputTokens: true,
  createdAt: true,
  deletedAt: true,
} as const;

const STEP_COLUMNS = {
  planId: true,
  agentId: true,
  model: true,
  status: true,
  inputTokens: true,
  outputTokens: true,
  cacheReadTokens: true,
  cacheWriteTokens: true,
  reasoningTokens: true,
  cost: true,
  costSource: true,
  deletedAt: true,
} as const;

/**
 * Adds to `delta` what these plans' stored rows add to the rollups, with `sign`: -1 before a
 * writer changes them, +1 after. Reads the summed columns of the live plans and of their live
 * steps, in chunks of the database's id limit. For writers that change whole plans (a rebuild,
 * retention, erasure, restore, reprice); the worker's incremental path knows its deltas instead.
 */
export async function measurePlans(
  m: EntityManager,
  planIds: readonly string[],
  delta: RollupDelta,
  sign: 1 | -1,
): Promise<void> {
  const d = sqlDialectOf(m.connection);
  const chunk = d.maxIdsPerStatement;
  for (let i = 0; i < planIds.length; i += chunk) {
    const ids = planIds.slice(i, i + chunk);
    const plans = (await m
      .getRepository<ExecutionPlanRow>(ENTITY.plan)
      .createQueryBuilder('p')
      .select(Object.keys(PLAN_COLUMNS).map((c) => `p.${c}`))
      .where(...idsIn(d, 'p.id', ids))
      .getMany()) as RollupPlan[];
    if (plans.length === 0) continue;
    const steps = (await m
      .getRepository<PlanStepRow>(ENTITY.step)
      .createQueryBuilder('s')
      .select(Object.keys(STEP_COLUMNS).map((c) => `s.${c}`))
      .where(
        ...idsIn(
          d,
          's.planId',
          plans.map((p) => p.id),
        ),
      )
      .getMany()) as Array<RollupStep & { planId: string }>;
    const byPlan = new Map<string, RollupStep[]>();
    for (const s of steps) {
      const list = byPlan.get(s.planId);
      if (list) list.push(s);
      else byPlan.set(s.planId, [s]);
    }
    for (const p of plans) delta.addPlan(p, byPlan.get(p.id) ?? [], sign);
    await addStoredHandoffs(m, plans, delta, sign);
  }
}

/**
 * Adds to `delta` what the stored handoffs of these plans (as given: their ids, creation and
 * retirement) add to the `handoff` rollups, with `sign`. Soft-deleted plans add nothing.
 */
async function addStoredHandoffs(
  m: EntityManager,
  plans: ReadonlyArray<Pick<RollupPlan, 'id' | 'createdAt' | 'deletedAt'>>,
  delta: RollupDelta,
  sign: 1 | -1,
): Promise<void> {
  const live = plans.filter((p) => !p.deletedAt);
  if (live.length === 0) return;
  const d = sqlDialectOf(m.connection);
  const handoffs = (await m
    .getRepository<PlanHandoffRow>(ENTITY.handoff)
    .createQueryBuilder('h')
    .select(['h.planId', 'h.fromAgentId', 'h.toAgentId', 'h.reason'])
    .where(
      ...idsIn(
        d,
        'h.planId',
        live.map((p) => p.id),
      ),
    )
    .getMany()) as Array<RollupHandoff & { planId: string }>;
  const byPlan = new Map<string, RollupHandoff[]>();
  for (const h of handoffs) {
    const list = byPlan.get(h.planId);
    if (list) list.push(h);
    else byPlan.set(h.planId, [h]);
  }
  for (const p of live) delta.addHandoffs(p, byPlan.get(p.id) ?? [], sign);
}

/**
 * Adds to `delta` what the stored handoffs of these plans add to the rollups, with `sign`: the
 * applier's measure of the plans whose handoffs its events changed (-1 before its rows are
 * written, +1 after). Reads the plans' creation and retirement, then their handoffs.
 */
export async function measureHandoffs(
  m: EntityManager,
  planIds: readonly string[],
  delta: RollupDelta,
  sign: 1 | -1,
): Promise<void> {
  const d = sqlDialectOf(m.connection);
  const chunk = d.maxIdsPerStatement;
  for (let i = 0; i < planIds.length; i += chunk) {
    const plans = (await m
      .getRepository<ExecutionPlanRow>(ENTITY.plan)
      .createQueryBuilder('p')
      .select(['p.id', 'p.createdAt', 'p.deletedAt'])
      .where(...idsIn(d, 'p.id', planIds.slice(i, i + chunk)))
      .getMany()) as RollupPlan[];
    await addStoredHandoffs(m, plans, delta, sign);
  }
}

/**
 * Runs `work` (which changes the rows of `planIds`, in the transaction of `m`) and adds to the
 * rollups what it changed: the plans' sums before, subtracted, and after, added.
 */
export async function keepingRollups<T>(
  m: EntityManager,
  planIds: readonly string[],
  work: () => Promise<T>,
): Promise<T> {
  const delta = new RollupDelta();
  await measurePlans(m, planIds, delta, -1);
  const out = await work();
  await measurePlans(m, planIds, delta, 1);
  await delta.write(sqlDialectOf(m.connection).rows(m));
  return out;
}
