import { checkStoredEvent, isArgsDigest } from '../contracts';
import { DECISION_KINDS, SPEC_VERSION } from '../contracts/event-types';
import type { DurabilityMark, PlanEventPublisher } from '../publisher';
import { eventIdV7 } from '../publisher/event-id';
import { QueryArgumentError } from '../queries/query-errors';
import { APPROVER_NAME } from '../shared/api-keys';
import { viewOf, type ApprovalLedger, type ApprovalView } from '../store/approvals/approval-ledger';

/** Longest `feedback` of a decision, in UTF-16 code units. */
export const MAX_FEEDBACK_LENGTH = 4000;

export type DecisionKind = (typeof DECISION_KINDS)[number];

/** A decision as a human gives it: `decidedBy` is the approve key's name (HTTP) or `--by` (CLI). */
export interface DecideInput {
  approvalId: string;
  decision: DecisionKind;
  decidedBy: string;
  feedback?: string;
  /** Required for `edit`, refused otherwise: the digest of the arguments as edited. */
  editedArgsDigest?: string;
}

/** What a decision taken answers (HTTP 202, `approvals decide --json`). */
export interface DecidedApproval {
  approvalId: string;
  planId: string;
  decision: DecisionKind;
  decidedBy: string;
  /** The `approval.decided` event that carries it through the queue to the worker. */
  eventId: string;
}

/** Why a decision is not taken: 404 `not_found`, 409 `already_decided` / `expired`. */
export type DecideRefusal = 'not_found' | 'already_decided' | 'expired';

export type DecideOutcome =
  | { ok: true; decided: DecidedApproval }
  | { ok: false; reason: DecideRefusal; error: string; approval?: ApprovalView }
  /** The publisher did not take the event (journal full, shutting down): nothing was decided, send it again. */
  | { ok: false; reason: 'unavailable'; error: string }
  /** `durable` resolved false: the event may or may not reach the worker; its caller has answered. */
  | { ok: false; reason: 'not_durable' };

export interface DecideDeps {
  approvals: Pick<ApprovalLedger, 'row'>;
  publisher: Pick<PlanEventPublisher, 'publish' | 'durabilityMark'>;
  /**
   * Resolves true once what the publisher took since `since` is durable: for `serve` the ack of
   * POST /v1/events (in Redis or fsynced in its journal), for the CLI in Redis.
   */
  durable(since: DurabilityMark): Promise<boolean>;
  now?: () => Date;
}

/** Field names in errors: the HTTP body's by default, the CLI passes its options'. */
export interface DecideFieldNames {
  decision: string;
  decidedBy: string;
  feedback: string;
  editedArgsDigest: string;
}

const BODY_FIELDS: DecideFieldNames = {
  decision: 'decision',
  decidedBy: 'decidedBy',
  feedback: 'feedback',
  editedArgsDigest: 'editedArgsDigest',
};

/**
 * Checks a decision's fields, each error one line naming the field: decision one of approve, edit,
 * reject; decidedBy a key name; feedback a string of at most 4000 characters; editedArgsDigest 64
 * lower-case hex digits, given for an edit and only for an edit.
 */
export function checkDecideInput(
  raw: { approvalId: string; decision: unknown; decidedBy: unknown; feedback?: unknown; editedArgsDigest?: unknown },
  names: DecideFieldNames = BODY_FIELDS,
): DecideInput {
  if (typeof raw.decision !== 'string' || !(DECISION_KINDS as readonly string[]).includes(raw.decision))
    throw new QueryArgumentError(names.decision, `must be one of ${DECISION_KINDS.join(', ')}`);
  const decision = raw.decision as DecisionKind;
  if (typeof raw.decidedBy !== 'string' || !APPROVER_NAME.test(raw.decidedBy))
    throw new QueryArgumentError(names.decidedBy, 'must be a name of 1-64 characters of A-Z a-z 0-9 . _ @ -');
  const input: DecideInput = { approvalId: raw.approvalId, decision, decidedBy: raw.decidedBy };
  if (raw.feedback !== undefined) {
    if (typeof raw.feedback !== 'string' || raw.feedback.length > MAX_FEEDBACK_LENGTH)
      throw new QueryArgumentError(names.feedback, `must be a text of at most ${MAX_FEEDBACK_LENGTH} characters`);
    input.feedback = raw.feedback;
  }
  if (decision === 'edit') {
    if (!isArgsDigest(raw.editedArgsDigest))
      throw new QueryArgumentError(
        names.editedArgsDigest,
        'an edit needs the SHA-256 of the edited arguments, 64 lower-case hex digits',
      );
    input.editedArgsDigest = raw.editedArgsDigest;
  } else if (raw.editedArgsDigest !== undefined) {
    throw new QueryArgumentError(names.editedArgsDigest, `only an edit carries it (the decision is ${decision})`);
  }
  return input;
}

/**
 * Decides an approval: the one place for HTTP (`POST /v1/approvals/{id}/decide`), the CLI
 * (`approvals decide`) and the console. Refuses an approval whose request is not stored
 * (`not_found`), one decided already or consumed (`already_decided`), one past its expiresAt
 * (`expired`); otherwise publishes an `approval.decided` event carrying the request's seq (so the
 * plan's seq gets no gap) and answers once it is durable. The worker stores it like every event;
 * the first decision it stores decides, so of two decisions sent at once only the first stored
 * counts (`GET /v1/approvals/{id}` shows which).
 */
export async function decideApproval(deps: DecideDeps, input: DecideInput): Promise<DecideOutcome> {
  const checked = checkDecideInput(input);
  const id = checked.approvalId;
  const row = await deps.approvals.row(id);
  const now = deps.now?.() ?? new Date();
  if (!row)
    return {
      ok: false,
      reason: 'not_found',
      error: `no approval ${id} was requested (or its request is not stored yet)`,
    };
  if (row.decision !== null || row.consumedAt !== null)
    return {
      ok: false,
      reason: 'already_decided',
      error: `approval ${id} was decided already (${row.decision ?? 'consumed'} by ${row.decidedBy ?? 'unknown'}): it is decided once`,
      approval: viewOf(row, now),
    };
  const expiresAt = new Date(row.expiresAt);
  if (expiresAt.getTime() <= now.getTime())
    return {
      ok: false,
      reason: 'expired',
      error: `approval ${id} expired at ${expiresAt.toISOString()} before it was decided: the executor must request a new one`,
      approval: viewOf(row, now),
    };
  const payload: Record<string, unknown> = { approvalId: id, decision: checked.decision, decidedBy: checked.decidedBy };
  if (checked.feedback !== undefined) payload.feedback = checked.feedback;
  if (checked.editedArgsDigest !== undefined) payload.editedArgsDigest = checked.editedArgsDigest;
  const parsed = checkStoredEvent({
    specVersion: SPEC_VERSION,
    eventId: eventIdV7(now.getTime()),
    type: 'approval.decided',
    planId: row.planId,
    sessionId: row.sessionId,
    seq: row.requestSeq,
    occurredAt: now.toISOString(),
    payload,
  });
  if (!parsed.ok) {
    // the fields were checked above; what the contract still refuses is in the feedback's text
    const first = parsed.error.violations[0];
    const field = first?.path.replace(/^payload\./, '') || 'body';
    const why = first?.message.startsWith(first.path) ? first.message.slice(first.path.length).trim() : first?.message;
    throw new QueryArgumentError(field, why ?? 'refused by the contract');
  }
  const since = deps.publisher.durabilityMark();
  const published = deps.publisher.publish(parsed.event);
  if (!published.ok)
    return {
      ok: false,
      reason: 'unavailable',
      error:
        published.reason === 'invalid'
          ? `the decision was refused: ${published.violations.map((v) => `${v.path}: ${v.message}`).join('; ')}`
          : `the decision could not be queued (${published.reason === 'closed' ? 'shutting down' : 'the spill journal is full'}); nothing was decided, send it again`,
    };
  if (!(await deps.durable(since))) return { ok: false, reason: 'not_durable' };
  return {
    ok: true,
    decided: {
      approvalId: id,
      planId: row.planId,
      decision: checked.decision,
      decidedBy: checked.decidedBy,
      eventId: published.eventId,
    },
  };
}
