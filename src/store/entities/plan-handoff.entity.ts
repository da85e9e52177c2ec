import { deletedAt, defineEntity, ext, str, text, ts, uuid } from './define-entity';

/** `plan_handoffs`, as the product's schema names it: one agent handing work to another. */
export interface PlanHandoffRow {
  id: string;
  planId: string;
  stepId: string | null;
  /** The executor's stepId, kept so an edit can re-point the handoff (`step_id` is null while no such step exists). */
  stepKey: string | null;
  handoffKey: string;
  fromAgentId: string;
  toAgentId: string;
  reason: string;
  explanation: string | null;
  timestamp: Date;
  deletedAt: Date | null;
}

export const PlanHandoffEntity = defineEntity<PlanHandoffRow>('PlanHandoff', 'plan_handoffs', {
  id: uuid('id', { primary: true }),
  planId: ext('plan_id'),
  stepId: uuid('step_id', { nullable: true }),
  stepKey: ext('step_key', { nullable: true }),
  handoffKey: ext('handoff_key'),
  fromAgentId: str('from_agent_id', 100),
  toAgentId: str('to_agent_id', 100),
  reason: str('reason', 50),
  explanation: text('explanation'),
  timestamp: ts('timestamp'),
  deletedAt,
});
