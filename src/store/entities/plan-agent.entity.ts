import { defineEntity, ext, str, ts, uuid } from './define-entity';

/**
 * `plan_agents`: one row per plan and agent one of its steps is given to, with the plan's creation
 * time, so the plans of an agent are read newest first a page at a time (`plans list --agent`).
 * Written with the plan's steps, never updated, and exact: a plan's row of an agent none of its
 * steps is given to any more is deleted in the same transaction (PlanWrites, STEPS_OF_AGENT). The
 * id is derived from the plan and the agent (derived-id.ts).
 */
export interface PlanAgentRow {
  id: string;
  planId: string;
  agentId: string;
  /** The plan's `created_at`. */
  createdAt: Date;
}

export const PlanAgentEntity = defineEntity<PlanAgentRow>('PlanAgent', 'plan_agents', {
  id: uuid('id', { primary: true }),
  planId: ext('plan_id'),
  agentId: str('agent_id', 100),
  createdAt: ts('created_at'),
});
