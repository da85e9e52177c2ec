import { argsDigest, type ApprovalRequestedPayload, type PlanEventOf } from '../../src/contracts';
import { requestRow } from '../../src/store/approvals/approval-apply';
import type { ApprovalRow } from '../../src/store/entities';
import { parsedEvent } from './parsed-event';

/** The arguments of the tool call the tests' approvals are for, unless a test gives its own. */
export const APPROVAL_ARGS = { to: 'ops@example.com', subject: 'deploy' };
export const APPROVAL_DIGEST = argsDigest(APPROVAL_ARGS);

const HOUR_MS = 3_600_000;

/**
 * An `approval.requested` payload: step `s1`, tool `send_mail`, APPROVAL_DIGEST, expiring
 * `expiresInMs` (an hour) after `now`; any field overridden.
 */
export function approvalRequested(
  approvalId: string,
  overrides: Partial<Omit<ApprovalRequestedPayload, 'approvalId'>> & { expiresInMs?: number; now?: Date } = {},
): ApprovalRequestedPayload {
  const { expiresInMs = HOUR_MS, now = new Date(), ...fields } = overrides;
  return {
    approvalId,
    stepId: 's1',
    tool: 'send_mail',
    argsDigest: APPROVAL_DIGEST,
    expiresAt: new Date(now.getTime() + expiresInMs).toISOString(),
    ...fields,
  };
}

/**
 * The `approvals` row the worker stores for approvalRequested(approvalId) (plan `plan-<approvalId>`,
 * session `sess-<approvalId>`, request seq 1), undecided; any column overridden.
 */
export function approvalRow(approvalId: string, overrides: Partial<ApprovalRow> = {}): ApprovalRow {
  const request = parsedEvent({
    planId: `plan-${approvalId}`,
    sessionId: `sess-${approvalId}`,
    seq: 1,
    type: 'approval.requested',
    payload: approvalRequested(approvalId),
    occurredAt: new Date(),
  }) as PlanEventOf<'approval.requested'>;
  return { ...requestRow(request), ...overrides };
}
