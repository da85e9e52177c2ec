import type { EntitySchema } from 'typeorm';
import type { ColumnTypes } from '../sql/column-kinds';
import { SessionEntity } from './session.entity';
import { ExecutionPlanEntity } from './execution-plan.entity';
import { PlanStepEntity } from './plan-step.entity';
import { PlanHandoffEntity } from './plan-handoff.entity';
import { PlanDecisionEntity } from './plan-decision.entity';
import { WorkflowDagEntity } from './workflow-dag.entity';
import { WorkflowCheckpointEntity } from './workflow-checkpoint.entity';
import { PlanHeadEntity } from './plan-head.entity';
import { PlanEventEntity } from './plan-event.entity';
import { PriceOverrideEntity, PriceRepriceEntity } from './price-override.entity';

export * from './session.entity';
export * from './execution-plan.entity';
export * from './plan-step.entity';
export * from './plan-handoff.entity';
export * from './plan-decision.entity';
export * from './workflow-dag.entity';
export * from './workflow-checkpoint.entity';
export * from './plan-head.entity';
export * from './plan-event.entity';
export * from './price-override.entity';

/** Entity names, for `dataSource.getRepository(ENTITY.plan)`. */
export const ENTITY = {
  session: 'Session',
  plan: 'ExecutionPlan',
  step: 'PlanStep',
  handoff: 'PlanHandoff',
  decision: 'PlanDecision',
  dag: 'WorkflowDag',
  checkpoint: 'WorkflowCheckpoint',
  head: 'PlanHead',
  event: 'PlanEvent',
  priceOverride: 'PriceOverride',
  priceReprice: 'PriceReprice',
} as const;

export function buildEntitySchemas(types: ColumnTypes): EntitySchema[] {
  return [
    SessionEntity,
    ExecutionPlanEntity,
    PlanStepEntity,
    PlanHandoffEntity,
    PlanDecisionEntity,
    WorkflowDagEntity,
    WorkflowCheckpointEntity,
    PlanHeadEntity,
    PlanEventEntity,
    PriceOverrideEntity,
    PriceRepriceEntity,
  ].map((factory) => factory(types));
}
