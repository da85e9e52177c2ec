import { argsDigest, type ApprovalRequestedPayload } from '../../src/contracts';
import type { ApprovalRow } from '../../src/store/entities';

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
 * An `approvals` row as the worker stores an undecided request of approvalRequested's defaults
 * (request seq 1); any column overridden.
 */
export function approvalRow(approvalId: string, overrides: Partial<ApprovalRow> = {}): ApprovalRow {
  const requested = approvalRequested(approvalId);
  return {
    approvalId,
    planId: `plan-${approvalId}`,
    sessionId: `sess-${approvalId}`,
    stepId: requested.stepId,
    tool: requested.tool ?? null,
    argsDigest: requested.argsDigest,
    expiresAt: new Date(requested.expiresAt),
    assignee: null,
    reason: null,
    requestedAt: new Date(),
    requestSeq: 1,
    requestEventId: '0193a3c0-0000-7000-8000-000000000001',
    decision: null,
    decidedBy: null,
    feedback: null,
    editedArgsDigest: null,
    decidedAt: null,
    consumedAt: null,
    consumedBy: null,
    expiredAt: null,
    ...overrides,
  };
}
