import type { DataSource } from 'typeorm';
import { displayMoney } from '../pricing';
import { ENTITY, ExecutionPlanRow, PlanStepRow, SessionRow } from '../store/entities';
import { sqlDialectOf } from '../store/sql/dialects';
import { ACTIVE_STATUSES, FINISHED_STATUSES } from './query-args';
import { NotFoundError } from './query-errors';
import { isFork, loadForkView } from './fork-view.query';
import { getNextSeq } from './next-seq.query';
import { buildPlanListQuery } from './plan-list.query';
import { PlanSummary, toPlanSummary } from './plan-rows';
import { toNum } from './row-normalize';

/** Seed 001's `active_plan.steps[]`: enough to redraw a plan's progress after a restart. */
export interface ActivePlanStep {
  stepId: string;
  index: number;
  title: string | null;
  agentId: string;
  status: PlanStepRow['status'];
}

export interface ActivePlan extends PlanSummary {
  steps: ActivePlanStep[];
  /** The `seq` to publish next for this plan (one past the highest stored): a restored executor continues from it. */
  nextSeq: number;
}

export interface SessionActivePlan {
  sessionId: string;
  /** The newest plan still planning or executing; null when the session has none. */
  activePlan: ActivePlan | null;
  /** Other plans of the session still in progress, newest first (normally none). */
  otherActivePlanIds: string[];
}

export interface SessionHistory {
  sessionId: string;
  /** Finished plans (completed, failed, cancelled), newest first. */
  plans: PlanSummary[];
  /** What every live plan of the session cost (not only those listed), USD as an exact decimal string. */
  cost: string;
  /** Steps of those plans at no known price: `cost` leaves them out. */
  unpricedSteps: number;
}

/**
 * The plan an application restores when it restarts (a chat session's `load_from_session`).
 * Everything comes from the database, so it survives any restart of the worker or the reader. A
 * session with no plan stored (a new conversation, or one whose first plan is still on its way)
 * has no active plan: the same answer, not "not found".
 */
export async function getActivePlan(ds: DataSource, sessionId: string): Promise<SessionActivePlan> {
  // active plans of one session are few: 50 bounds a runaway executor without hiding the newest
  const rows = await buildPlanListQuery(ds, { sessionId, statuses: ACTIVE_STATUSES, limit: 50 }).getMany();
  if (rows.length === 0) return { sessionId, activePlan: null, otherActivePlanIds: [] };
  const [newest, ...others] = rows;
  const [steps, nextSeq] = await Promise.all([
    isFork(newest)
      ? loadForkView(ds, newest, 'no-output').then((v) => v.steps)
      : ds.getRepository<PlanStepRow>(ENTITY.step).find({ where: { planId: newest.id }, order: { stepIndex: 'ASC' } }),
    getNextSeq(ds, newest.id),
  ]);
  return {
    sessionId,
    activePlan: {
      ...toPlanSummary(newest),
      steps: steps.map((s) => ({
        stepId: s.stepKey,
        index: toNum(s.stepIndex),
        title: s.title ?? null,
        agentId: s.agentId,
        status: s.status,
      })),
      nextSeq,
    },
    otherActivePlanIds: others.map((p) => p.id),
  };
}

/** Seed 001's `plan_history`: the session's finished plans, newest first. @defaultValue limit 10 */
export async function getPlanHistory(ds: DataSource, sessionId: string, limit = 10): Promise<SessionHistory> {
  await requireSession(ds, sessionId);
  const d = sqlDialectOf(ds);
  const [rows, totals] = await Promise.all([
    buildPlanListQuery(ds, { sessionId, statuses: FINISHED_STATUSES, limit }).getMany(),
    ds
      .getRepository<ExecutionPlanRow>(ENTITY.plan)
      .createQueryBuilder('p')
      .select(d.sumMoney('p.totalCost'), 'cost')
      .addSelect(d.sumInt('p.unpricedSteps'), 'unpriced')
      .where('p.sessionId = :sessionId', { sessionId })
      .getRawOne<Record<string, unknown>>(),
  ]);
  return {
    sessionId,
    plans: rows.map(toPlanSummary),
    cost: displayMoney(d.summedMoney(totals?.cost)),
    unpricedSteps: toNum(totals?.unpriced ?? 0),
  };
}

/**
 * A session exists when its row does (sessions are never soft-deleted; a session whose plans all
 * were retired simply has none left to show).
 */
async function requireSession(ds: DataSource, sessionId: string): Promise<void> {
  const found = await ds.getRepository<SessionRow>(ENTITY.session).exists({ where: { id: sessionId } });
  if (!found) throw new NotFoundError('session', sessionId);
}
