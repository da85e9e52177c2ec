/**
 * The plan-event wire format: names and versions. Executors depend on this module alone, so it
 * imports neither TypeORM nor BullMQ.
 *
 * Glossary
 * - event: one JSON object describing one thing that happened to one plan. The wire format is a
 *   public API: a change that rejects events that used to be valid is a new `SPEC_VERSION`.
 * - envelope: the fields every event carries, whatever its type: `specVersion`, `eventId`, `type`,
 *   `planId`, `sessionId`, `seq`, `occurredAt`. The type-specific part is `payload`.
 * - specVersion: the version of this contract the event was written against; a parser accepts only
 *   the versions it knows, so an old worker never half-applies a newer event.
 * - eventId: a UUID chosen once per event by the publisher. It is the idempotency key: a redelivered
 *   or replayed event carries the same eventId and changes nothing the second time. Normalised to
 *   lower case because SQL Server hands uniqueidentifiers back in upper case.
 * - type: which lifecycle fact the payload describes (`PlanEventType`).
 * - planId / sessionId: the executor's own identifiers ("external ids": short, printable, safe as
 *   keys and in logs), not database keys.
 * - seq: per-plan sequence number stamped by the publisher (0, 1, 2, ... in publish order). Workers
 *   may receive events out of order; seq lets them decide which write is the latest.
 * - occurredAt: when the fact happened at the executor, ISO-8601 in UTC; normalised to
 *   `Date#toISOString()` so stored timestamps compare as strings.
 * - step list: the steps of a plan (`plan.created`) or of an edited plan (`plan.decision` edit). Its
 *   `dependsOn` edges form a DAG inside the list.
 * - violation: one reason an event is invalid, with the path of the offending field. An invalid
 *   event is a permanent failure: retrying it can never succeed.
 */

/** The only contract version this code reads and writes. */
export const SPEC_VERSION = 1;

/**
 * The contract's minor version: additive changes within `SPEC_VERSION` (new event types, new
 * optional fields). 1: `approval.requested` and `approval.decided`. A worker older than a
 * publisher's minor version refuses the newer event types as unknown: upgrade workers first.
 */
export const CONTRACT_MINOR_VERSION = 1;

/** `SPEC_VERSION.CONTRACT_MINOR_VERSION`, as documents and clients state it. */
export const CONTRACT_VERSION = `${SPEC_VERSION}.${CONTRACT_MINOR_VERSION}`;

export const PlanEventType = Object.freeze({
  PlanCreated: 'plan.created',
  PlanDecision: 'plan.decision',
  StepStarted: 'step.started',
  StepCompleted: 'step.completed',
  StepFailed: 'step.failed',
  StepSkipped: 'step.skipped',
  HandoffRecorded: 'handoff.recorded',
  CheckpointSaved: 'checkpoint.saved',
  PlanFinalized: 'plan.finalized',
  ApprovalRequested: 'approval.requested',
  ApprovalDecided: 'approval.decided',
} as const);

export type PlanEventTypeName = (typeof PlanEventType)[keyof typeof PlanEventType];

export const PLAN_EVENT_TYPES: readonly PlanEventTypeName[] = Object.freeze(Object.values(PlanEventType));

export function isPlanEventType(value: unknown): value is PlanEventTypeName {
  return typeof value === 'string' && (PLAN_EVENT_TYPES as readonly string[]).includes(value);
}

/** What a reviewer decided about a plan that required approval. */
export const DECISION_KINDS = Object.freeze(['approve', 'edit', 'reject'] as const);

/** How a plan made from a stored one came about (`plan.created`'s `forkOf.kind`). */
export const FORK_KINDS = Object.freeze(['fork', 'replay'] as const);

/** How a plan ended; mirrors the terminal values of `execution_plans.status`. */
export const FINAL_STATUSES = Object.freeze(['completed', 'failed', 'cancelled'] as const);
