import type { DataSource } from 'typeorm';
import type { StepSpec } from '../contracts';
import { ENTITY, ExecutionPlanRow, PlanStepRow } from '../store/entities';
import { isFork, loadForkView } from './fork-view.query';
import { NotFoundError } from './query-errors';
import { compareText, parseJson, toNum } from './row-normalize';

/** Version of the template format, for whoever stores templates and reads them back later. */
export const PLAN_TEMPLATE_VERSION = 1;

/**
 * A plan as a reusable template (to replay a successful plan): what was asked, which
 * agents did what, in which order. No runtime state (statuses, results, tokens, timestamps), and
 * `steps` is shaped like a `plan.created` payload's, so replaying is publishing
 * `{ type: 'plan.created', payload: { query, steps, requiresApproval, complexity } }` with new ids.
 */
export interface PlanTemplate {
  templateVersion: typeof PLAN_TEMPLATE_VERSION;
  sourcePlanId: string;
  query: string;
  requiresApproval: boolean;
  complexity: number | null;
  /** Distinct agent ids, sorted. */
  agents: string[];
  steps: StepSpec[];
}

export async function exportPlanTemplate(ds: DataSource, planId: string): Promise<PlanTemplate> {
  const plan = await ds.getRepository<ExecutionPlanRow>(ENTITY.plan).findOne({ where: { id: planId } });
  if (!plan) throw new NotFoundError('plan', planId);
  // a fork's template is its whole step list, its ancestors' steps included
  const rows = isFork(plan)
    ? (await loadForkView(ds, plan, 'spec')).steps
    : await ds.getRepository<PlanStepRow>(ENTITY.step).find({
        where: { planId },
        select: {
          stepKey: true,
          stepIndex: true,
          agentId: true,
          task: true,
          title: true,
          expectedOutput: true,
          dependsOn: true,
        },
        order: { stepIndex: 'ASC' },
      });
  const steps = rows.map((s): StepSpec => {
    const spec: StepSpec = { stepId: s.stepKey, index: toNum(s.stepIndex), agentId: s.agentId, task: s.task };
    if (s.title) spec.title = s.title;
    if (s.expectedOutput) spec.expectedOutput = s.expectedOutput;
    const dependsOn = parseJson<string[]>(s.dependsOn, []);
    if (dependsOn.length > 0) spec.dependsOn = dependsOn;
    return spec;
  });
  return {
    templateVersion: PLAN_TEMPLATE_VERSION,
    sourcePlanId: plan.id,
    query: plan.query,
    requiresApproval: Boolean(plan.requiresApproval),
    complexity: plan.complexity === null || plan.complexity === undefined ? null : toNum(plan.complexity),
    agents: [...new Set(steps.map((s) => s.agentId))].sort(compareText),
    steps,
  };
}
