import type { DataSource } from 'typeorm';
import { ENTITY, ExecutionPlanRow, PlanStepRow } from '../store/entities';
import { isFork, loadForkView } from './fork-view.query';
import { NotFoundError } from './query-errors';
import { outputOf } from './stored-output';
import { toIso, toNum } from './row-normalize';

export interface StepOutput {
  planId: string;
  stepId: string;
  index: number;
  agentId: string;
  title: string | null;
  status: PlanStepRow['status'];
  model: string | null;
  completedAt: string | null;
  /** The stored output (the payload of the step.completed that carried it); null when the step stored none. */
  outputContent: string | null;
}

/**
 * The output an earlier step stored, readable from any machine or worktree. `stepRef`
 * is the executor's stepId, or the step's index: an exact stepId match wins, so a plan whose
 * stepIds are numbers still reads by stepId.
 */
export async function getStepOutput(ds: DataSource, planId: string, stepRef: string): Promise<StepOutput> {
  const plan = await ds.getRepository<ExecutionPlanRow>(ENTITY.plan).findOne({ where: { id: planId } });
  if (!plan) throw new NotFoundError('plan', planId);
  const steps = ds.getRepository<PlanStepRow>(ENTITY.step);
  let step = await steps.findOne({ where: { planId, stepKey: stepRef } });
  if (!step && /^\d{1,9}$/.test(stepRef)) step = await steps.findOne({ where: { planId, stepIndex: Number(stepRef) } });
  if (!step && isFork(plan)) {
    // a step the fork inherits (or has not run yet) is its ancestor's: the view without outputs,
    // then the output of the one step asked for
    const view = (await loadForkView(ds, plan, 'no-output')).steps;
    const found =
      view.find((s) => s.stepKey === stepRef) ??
      (/^\d{1,9}$/.test(stepRef) ? view.find((s) => toNum(s.stepIndex) === Number(stepRef)) : undefined);
    if (found?.inheritedFrom) {
      const row = await steps.findOne({
        where: { id: found.id },
        select: { id: true, outputEventId: true, outputContent: true },
      });
      step = { ...found, outputEventId: row?.outputEventId ?? null, outputContent: row?.outputContent ?? null };
    } else step = found ?? null;
  }
  if (!step) throw new NotFoundError('step', stepRef, ` in plan "${planId}" (give a stepId or a step index)`);
  return {
    planId,
    stepId: step.stepKey,
    index: toNum(step.stepIndex),
    agentId: step.agentId,
    title: step.title ?? null,
    status: step.status,
    model: step.model ?? null,
    completedAt: toIso(step.completedAt),
    outputContent: await outputOf(ds, step),
  };
}
