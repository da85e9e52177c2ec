import { defineEntity, deletedAt, ext, label, text, ts, uuid } from './define-entity';

/** The approve / edit / reject audit trail of human decisions. `id` is the decision event's eventId. */
export interface PlanDecisionRow {
  id: string;
  planId: string;
  sessionId: string;
  decision: 'approve' | 'edit' | 'reject';
  /** JSON of the edited step list (edit only). */
  modifiedSteps: string | null;
  feedback: string | null;
  decidedBy: string | null;
  decidedAt: Date;
  deletedAt: Date | null;
}

export const PlanDecisionEntity = defineEntity<PlanDecisionRow>('PlanDecision', 'plan_decisions', {
  id: uuid('id', { primary: true }),
  planId: ext('plan_id'),
  sessionId: ext('session_id'),
  decision: label('decision', 10),
  modifiedSteps: text('modified_steps'),
  feedback: text('feedback'),
  decidedBy: label('decided_by', 200, true),
  decidedAt: ts('decided_at'),
  deletedAt,
});
