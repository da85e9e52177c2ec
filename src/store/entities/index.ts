import type { EntitySchema } from 'typeorm';
import type { ColumnTypes } from '../sql/column-kinds';
import { comparesAsIdentifier } from './define-entity';
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
import { PlanAgentEntity } from './plan-agent.entity';
import { AnalyticsRollupEntity } from './analytics-rollup.entity';
import { WebhookDeliveryEntity, WebhookSubscriptionEntity } from './webhook.entity';
import { ApprovalEntity } from './approval.entity';

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
export * from './plan-agent.entity';
export * from './analytics-rollup.entity';
export * from './webhook.entity';
export * from './approval.entity';

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
  planAgent: 'PlanAgent',
  rollup: 'AnalyticsRollup',
  webhookSubscription: 'WebhookSubscription',
  webhookDelivery: 'WebhookDelivery',
  approval: 'Approval',
} as const;

const ENTITIES = [
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
  PlanAgentEntity,
  AnalyticsRollupEntity,
  WebhookSubscriptionEntity,
  WebhookDeliveryEntity,
  ApprovalEntity,
] as const;

export function buildEntitySchemas(types: ColumnTypes): EntitySchema[] {
  return ENTITIES.map((factory) => (factory as (t: ColumnTypes) => EntitySchema)(types));
}

/** A column of the schema, by table and column name. */
export interface TableColumn {
  table: string;
  column: string;
}

/**
 * Every column that holds an id, a key or a name compared byte for byte (comparesAsIdentifier):
 * the columns the schema lint requires in the binary collation, wherever they are declared.
 */
export function identifierColumns(): TableColumn[] {
  return ENTITIES.flatMap((e) =>
    e.columns.filter(comparesAsIdentifier).map((c) => ({ table: e.tableName, column: c.column })),
  );
}

/** Every money column (DECIMAL(24,12); SQLite text): what SQL Server reads must convert to text. */
export function moneyColumns(): TableColumn[] {
  return ENTITIES.flatMap((e) =>
    e.columns.filter((c) => c.kind === 'money').map((c) => ({ table: e.tableName, column: c.column })),
  );
}
