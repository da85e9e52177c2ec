import type { PlanEvent } from '../../contracts';
import { VOIDED_SEQ, type VoidedSeqPayload } from '../projection/voided-seq';

/** A stored event as a trigger reads it: its envelope, and its payload as plain JSON. */
export type TriggeringEvent = Pick<PlanEvent, 'eventId' | 'planId' | 'sessionId' | 'seq' | 'occurredAt'> & {
  type: string;
  payload: unknown;
};

/** One line of the trigger table: which stored event makes which webhook, with what `data`. */
export interface WebhookTrigger {
  /** The webhook's type (the body's `type`, what a subscription filters on). */
  type: string;
  /** The stored event type that fires it, or a finding of the stall check (STALL_CHECK_FINDINGS). */
  from: string;
  /** Only events for which this holds. @defaultValue every event of type `from` */
  when?: (event: TriggeringEvent) => boolean;
  /** The body's `data`, besides the envelope fields every webhook carries (`planData`). */
  data: (event: TriggeringEvent) => Record<string, unknown>;
  doc: string;
}

/**
 * What the stall check finds and writes webhooks for, in the transaction that marks it: no stored
 * event, so the TriggeringEvent it writes them from has an id derived from the finding
 * (findingEvent in webhook-outbox.ts), the same however often the check runs.
 */
export const STALL_CHECK_FINDINGS = Object.freeze({ planStalled: 'plan.stalled', approvalExpired: 'approval.expired' });

/** The longest text a webhook carries in one field (an error, a summary); longer text is cut, the plan keeps it. */
export const WEBHOOK_TEXT_MAX = 2_000;

const payloadOf = (e: TriggeringEvent) => (e.payload ?? {}) as Record<string, unknown>;
const cut = (v: unknown) => (typeof v === 'string' && v.length > WEBHOOK_TEXT_MAX ? v.slice(0, WEBHOOK_TEXT_MAX) : v);
/** What `approval.requested` and `approval.expired` say of the request. */
const request = (p: Record<string, unknown>) => ({
  approvalId: p.approvalId,
  stepId: p.stepId,
  tool: p.tool,
  argsDigest: p.argsDigest,
  expiresAt: p.expiresAt,
  assignee: p.assignee,
});
const finalized = (e: TriggeringEvent) => {
  const p = payloadOf(e);
  return { status: p.status, summary: cut(p.summary), failureReason: cut(p.failureReason) };
};

/**
 * Every webhook the ledger sends, one line each: the outbox (webhook-outbox.ts beside it) writes a delivery
 * for each stored event a line matches, in the transaction that stores it. A new trigger is a new
 * line here (and a section of docs/webhooks.md).
 */
export const WEBHOOK_TRIGGERS: readonly WebhookTrigger[] = Object.freeze([
  {
    type: 'plan.finalized',
    from: 'plan.finalized',
    data: finalized,
    doc: 'a plan ended (completed, failed or cancelled)',
  },
  {
    type: 'plan.failed',
    from: 'plan.finalized',
    when: (e) => payloadOf(e).status === 'failed',
    data: finalized,
    doc: 'a plan ended with status failed (sent besides plan.finalized)',
  },
  {
    type: 'step.failed',
    from: 'step.failed',
    data: (e) => {
      const p = payloadOf(e);
      return { stepId: p.stepId, error: cut(p.error), model: p.model };
    },
    doc: 'a step failed',
  },
  {
    type: 'dead_letter.created',
    from: VOIDED_SEQ,
    data: (e) => {
      const p = payloadOf(e) as Partial<VoidedSeqPayload>;
      return { deadLetterId: p.deadLetterId, kind: p.kind, refusedEventId: p.eventId ?? null };
    },
    doc: "an event of a plan was dead-lettered (recorded with the plan's voided seq: the dead letter's plan, session and seq were readable)",
  },
  {
    type: 'approval.requested',
    from: 'approval.requested',
    data: (e) => ({ ...request(payloadOf(e)), reason: cut(payloadOf(e).reason) }),
    doc: 'an executor asked a human to approve a step or a tool call',
  },
  {
    type: 'approval.decided',
    from: 'approval.decided',
    data: (e) => {
      const p = payloadOf(e);
      return {
        approvalId: p.approvalId,
        decision: p.decision,
        decidedBy: p.decidedBy,
        feedback: cut(p.feedback),
        editedArgsDigest: p.editedArgsDigest,
      };
    },
    doc: 'a human decided an approval (approve, edit or reject)',
  },
  {
    type: 'plan.stalled',
    from: STALL_CHECK_FINDINGS.planStalled,
    data: (e) => {
      const p = payloadOf(e);
      return { stalledSince: p.stalledSince, stallDueAt: p.stallDueAt, deadlineMs: p.deadlineMs, lastSeq: p.lastSeq };
    },
    doc: 'the stall check found a running plan with no event within its deadline',
  },
  {
    type: 'approval.expired',
    from: STALL_CHECK_FINDINGS.approvalExpired,
    data: (e) => request(payloadOf(e)),
    doc: 'the stall check found an approval past its expiresAt, undecided and unconsumed',
  },
]);

/** Every webhook type, for subscription filters. */
export function webhookTypes(): string[] {
  return [...new Set(WEBHOOK_TRIGGERS.map((t) => t.type))];
}

/** The stored event types some trigger reads. */
export function triggeringEventTypes(): ReadonlySet<string> {
  return new Set(WEBHOOK_TRIGGERS.map((t) => t.from));
}

/** The webhook body (Standard Webhooks' `type`, `timestamp`, `data`) a trigger makes of an event. */
export function webhookBody(trigger: WebhookTrigger, e: TriggeringEvent): string {
  const data: Record<string, unknown> = {
    planId: e.planId,
    sessionId: e.sessionId,
    eventId: e.eventId,
    seq: e.seq,
    occurredAt: e.occurredAt,
  };
  for (const [k, v] of Object.entries(trigger.data(e))) if (v !== undefined) data[k] = v;
  return JSON.stringify({ type: trigger.type, timestamp: e.occurredAt, data });
}
