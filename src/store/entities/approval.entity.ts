import { defineEntity, ext, int, label, str, text, ts, uuid } from './define-entity';

/**
 * `approvals`: one row per `approval.requested` (docs/approvals.md), written by the worker in the
 * transaction that stores the event, and changed only under its plan's head lock: by the
 * `approval.decided` that decides it (the first one; later ones change nothing) and by the one
 * consume the ledger answers with the decision (`consumedAt`, `consumedBy`).
 */
export interface ApprovalRow {
  approvalId: string;
  planId: string;
  sessionId: string;
  stepId: string;
  /** Null: the approval is for the whole step. */
  tool: string | null;
  argsDigest: string;
  expiresAt: Date;
  assignee: string | null;
  reason: string | null;
  /** The request's occurredAt: what the inbox orders by and counts the age from. */
  requestedAt: Date;
  /** The seq of the request: the decision the ledger stores for it carries the same seq. */
  requestSeq: number;
  requestEventId: string;
  /** `approve`, `edit` or `reject`; null while undecided. */
  decision: string | null;
  decidedBy: string | null;
  feedback: string | null;
  editedArgsDigest: string | null;
  decidedAt: Date | null;
  consumedAt: Date | null;
  /** The name of the key that consumed it. */
  consumedBy: string | null;
  /** When the stall check found it expired undecided and wrote its `approval.expired` webhook; null before. */
  expiredAt: Date | null;
}

export const ApprovalEntity = defineEntity<ApprovalRow>('Approval', 'approvals', {
  approvalId: ext('approval_id', { primary: true }),
  planId: ext('plan_id'),
  sessionId: ext('session_id'),
  stepId: ext('step_id'),
  tool: str('tool', 200, true),
  argsDigest: label('args_digest', 64),
  expiresAt: ts('expires_at'),
  assignee: str('assignee', 200, true),
  reason: text('reason'),
  requestedAt: ts('requested_at'),
  requestSeq: int('request_seq'),
  requestEventId: uuid('request_event_id'),
  decision: label('decision', 10, true),
  decidedBy: str('decided_by', 200, true),
  feedback: text('feedback'),
  editedArgsDigest: label('edited_args_digest', 64, true),
  decidedAt: ts('decided_at', true),
  consumedAt: ts('consumed_at', true),
  consumedBy: str('consumed_by', 200, true),
  expiredAt: ts('expired_at', true),
});
