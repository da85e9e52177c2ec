import { ENTITY } from './entities';

/**
 * Every table that belongs to a plan, children first (the order to delete in), with the property
 * that holds the plan id. Retention soft-deletes, restores and purges all of them; the event store
 * rebuilds the projection tables (all but the event log and the head).
 */
export const PLAN_TABLES = [
  { table: 'plan_handoffs', entity: ENTITY.handoff, planKey: 'planId' }, // references plan_steps (NO ACTION)
  { table: 'plan_decisions', entity: ENTITY.decision, planKey: 'planId' },
  { table: 'workflow_checkpoints', entity: ENTITY.checkpoint, planKey: 'workflowId' },
  { table: 'workflow_dags', entity: ENTITY.dag, planKey: 'workflowId' },
  { table: 'plan_steps', entity: ENTITY.step, planKey: 'planId' },
  { table: 'plan_events', entity: ENTITY.event, planKey: 'planId' },
  { table: 'execution_plans', entity: ENTITY.plan, planKey: 'id' },
  { table: 'plan_heads', entity: ENTITY.head, planKey: 'planId' },
] as const;

/** The tables the event store rebuilds from a plan's events, children first. */
export const PROJECTION_TABLES = PLAN_TABLES.filter((t) => t.table !== 'plan_events' && t.table !== 'plan_heads');

/**
 * `plan_agents` holds one row per plan and agent of its steps, no more: a row whose plan has no
 * step given to its agent is deleted (deleteWhereIn's `unless`).
 */
export const STEPS_OF_AGENT = { entity: ENTITY.step, on: ['planId', 'agentId'] } as const;
