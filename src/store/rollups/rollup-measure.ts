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
 * retention, erasure, restore, reprice); the worker's incremental path knows its deltas instead,
 * but for the stored handoffs its writes replace (`only: 'handoffs'`: the plans' handoffs alone,
 * measured before the worker's rows of plans whose steps an edit replaced are written; the
 * handoffs its events record again are measured by id, measureHandoffs).
 */
export async function measurePlans(
  m: EntityManager,
  planIds: readonly string[],
  delta: RollupDelta,
  sign: 1 | -1,
  only?: 'handoffs',
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
    if (only !== 'handoffs') {
      const byPlan = await rowsByPlan<RollupStep>(m, ENTITY.step, Object.keys(STEP_COLUMNS), plans);
      for (const p of plans) delta.addPlan(p, byPlan.get(p.id) ?? [], sign);
    }
    await addStoredHandoffs(m, plans, delta, sign);
  }
}

const HANDOFF_COLUMNS = ['planId', 'fromAgentId', 'toAgentId', 'reason'];

/** These columns of the rows of `entity` (steps, handoffs) that belong to `plans`, by plan id. */
async function rowsByPlan<T>(
  m: EntityManager,
  entity: string,
  columns: string[],
  plans: ReadonlyArray<{ id: string }>,
): Promise<Map<string, T[]>> {
  const rows = (await m
    .getRepository<PlanStepRow | PlanHandoffRow>(entity)
    .createQueryBuilder('r')
    .select(columns.map((c) => `r.${c}`))
    .where(
      ...idsIn(
        sqlDialectOf(m.connection),
        'r.planId',
        plans.map((p) => p.id),
      ),
    )
    .getMany()) as unknown as Array<T & { planId: string }>;
  const byPlan = new Map<string, T[]>();
  for (const r of rows) {
    const list = byPlan.get(r.planId);
    if (list) list.push(r);
    else byPlan.set(r.planId, [r]);
  }
  return byPlan;
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
  const byPlan = await rowsByPlan<RollupHandoff>(m, ENTITY.handoff, HANDOFF_COLUMNS, live);
  for (const p of live) delta.addHandoffs(p, byPlan.get(p.id) ?? [], sign);
}

/**
 * Adds to `delta` what the stored handoff rows among these ids add to the `handoff` rollups, with
 * `sign`, each on the plan given for its id (its creation and retirement); ids not stored, and
 * soft-deleted rows, add nothing. The worker's measure of the handoffs its events record again.
 */
export async function measureHandoffs(
  m: EntityManager,
  handoffs: ReadonlyMap<string, Pick<RollupPlan, 'createdAt' | 'deletedAt'>>,
  delta: RollupDelta,
  sign: 1 | -1,
): Promise<void> {
  if (handoffs.size === 0) return;
  const ids = [...handoffs.keys()].sort();
  const byId = new Map<string, Pick<RollupPlan, 'createdAt' | 'deletedAt'>>();
  for (const [id, plan] of handoffs) byId.set(id.toLowerCase(), plan);
  const stored = await sqlDialectOf(m.connection).rows(m).findIn<PlanHandoffRow>(ENTITY.handoff, 'id', ids);
  // as measurePlans reads them: soft-deleted rows count nothing
  for (const h of stored) if (!h.deletedAt) delta.addHandoffs(byId.get(h.id.toLowerCase())!, [h], sign);
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
