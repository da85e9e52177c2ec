/**
 * Public API of the plan-event contract. Executors depend on this module alone: it imports neither
 * TypeORM nor BullMQ.
 */
export {
  CONTRACT_VERSION,
  DECISION_KINDS,
  FINAL_STATUSES,
  FORK_KINDS,
  PLAN_EVENT_TYPES,
  PlanEventType,
  SPEC_VERSION,
  isPlanEventType,
} from './event-types';
export type { PlanEventTypeName } from './event-types';
export { argsDigest, canonicalJson, isArgsDigest } from './args-digest';
export type { ApprovalView, ConsumeOutcome, ConsumeRefusal } from './approval-view';
export type {
  ApprovalDecidedPayload,
  ApprovalRequestedPayload,
  CheckpointSavedPayload,
  DecisionKind,
  FinalStatus,
  HandoffRecordedPayload,
  PayloadByType,
  PlanCreatedPayload,
  ForkOrigin,
  PlanDecisionPayload,
  PlanEvent,
  PlanEventEnvelope,
  PlanEventInput,
  PlanEventOf,
  PlanFinalizedPayload,
  StepCompletedPayload,
  StepUsageFields,
  StepFailedPayload,
  StepSkippedPayload,
  StepSpec,
  StepStartedPayload,
} from './types';
export { InvalidEventError } from './invalid-event.error';
export type { Violation } from './invalid-event.error';
export { DEFAULT_LIMITS } from './limits';
export type { ContractLimits } from './limits';
export { EXTERNAL_ID_PATTERN, isExternalId } from './field-formats';
export { parsePlanEvent } from './parse-plan-event';
export type { ParsePlanEventOptions, ParseResult } from './parse-plan-event';
/**
 * For a worker: exactly `parsePlanEvent`'s result (deep-equal event, identical violations) for every
 * JSON input, with every stamp (specVersion, eventId, seq, occurredAt) required, at a fraction of its
 * cost on a valid event. The raw-input guard and the contract's rules without class-validator
 * decide what they accept; anything they refuse goes to `parsePlanEvent`, which decides and words it.
 */
export { checkStoredEvent } from './check-stored-event';
