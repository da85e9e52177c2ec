/**
 * Plain TypeScript shapes of the events `parsePlanEvent` returns and publishers accept. The DTO
 * classes under `payloads/` implement these interfaces, so the two cannot drift apart.
 */
import type { DECISION_KINDS, FINAL_STATUSES, FORK_KINDS, PlanEventTypeName } from './event-types';

/** One step of a plan, as the planner wrote it. */
export interface StepSpec {
  /** External id of the step, unique within its plan; what `dependsOn` and step events refer to. */
  stepId: string;
  /** Position in the plan (0-based by convention), unique within the list. */
  index: number;
  agentId: string;
  task: string;
  title?: string;
  expectedOutput?: string;
  /** stepIds of the same list this step waits for; together they form a DAG. */
  dependsOn?: string[];
}

export interface PlanCreatedPayload {
  query: string;
  steps: StepSpec[];
  requiresApproval?: boolean;
  complexity?: number;
  /** Set on a fork or replay of a stored plan (see ForkOrigin). */
  forkOf?: ForkOrigin;
  /** The OpenTelemetry trace the plan was mapped from (POST /v1/traces): where the plan came from. */
  traceId?: string;
}

/**
 * Where a forked or replayed plan came from: the parent plan, and the first layer the new plan runs
 * itself (the parent's steps of earlier layers are inherited, read through the fork, never copied).
 * `checkpointId`: the parent's checkpoint the fork starts from, if it was forked from one.
 */
export interface ForkOrigin {
  planId: string;
  kind: (typeof FORK_KINDS)[number];
  layer: number;
  checkpointId?: string;
}

export type DecisionKind = (typeof DECISION_KINDS)[number];

export interface PlanDecisionPayload {
  decision: DecisionKind;
  /** Required for `edit` and forbidden otherwise: the full new step list, replacing the old one. */
  steps?: StepSpec[];
  feedback?: string;
  decidedBy?: string;
}

export interface StepStartedPayload {
  stepId: string;
  agentId?: string;
}

/**
 * What a model call used and cost, beyond input and output tokens (all optional; an older worker
 * refuses them as unknown fields: upgrade workers before publishers). `inputTokens` counts every
 * input token, cache reads and writes included; `outputTokens` every output token, reasoning
 * included. `reportedCost` is the provider's own figure in USD and wins over any price.
 */
export interface StepUsageFields {
  provider?: string;
  cacheReadTokens?: number;
  cacheWriteTokens?: number;
  reasoningTokens?: number;
  reportedCost?: string;
}

export interface StepCompletedPayload extends StepUsageFields {
  stepId: string;
  result?: string;
  outputContent?: string;
  inputTokens: number;
  outputTokens: number;
  model?: string;
}

export interface StepFailedPayload extends StepUsageFields {
  stepId: string;
  error: string;
  inputTokens?: number;
  outputTokens?: number;
  model?: string;
}

export interface StepSkippedPayload {
  stepId: string;
  reason?: string;
}

export interface HandoffRecordedPayload {
  handoffId: string;
  stepId?: string;
  fromAgentId: string;
  toAgentId: string;
  reason: string;
  explanation?: string;
}

export interface CheckpointSavedPayload {
  checkpointId: string;
  /** Index of the DAG layer this checkpoint closes; resume starts at the next layer. */
  layer: number;
  state: Record<string, unknown>;
}

export type FinalStatus = (typeof FINAL_STATUSES)[number];

export interface PlanFinalizedPayload {
  status: FinalStatus;
  summary?: string;
  failureReason?: string;
}

export interface PayloadByType {
  'plan.created': PlanCreatedPayload;
  'plan.decision': PlanDecisionPayload;
  'step.started': StepStartedPayload;
  'step.completed': StepCompletedPayload;
  'step.failed': StepFailedPayload;
  'step.skipped': StepSkippedPayload;
  'handoff.recorded': HandoffRecordedPayload;
  'checkpoint.saved': CheckpointSavedPayload;
  'plan.finalized': PlanFinalizedPayload;
}

export interface PlanEventEnvelope<T extends PlanEventTypeName = PlanEventTypeName> {
  specVersion: 1;
  eventId: string;
  type: T;
  planId: string;
  sessionId: string;
  seq: number;
  occurredAt: string;
  payload: PayloadByType[T];
}

/** Discriminated union on `type`: checking `event.type` narrows `event.payload`. */
export type PlanEvent = { [K in PlanEventTypeName]: PlanEventEnvelope<K> }[PlanEventTypeName];

export type PlanEventOf<T extends PlanEventTypeName> = PlanEventEnvelope<T>;

type Stamp = 'specVersion' | 'eventId' | 'seq' | 'occurredAt';

/** What a publisher accepts: the stamps are optional and filled in by the publisher. */
export type PlanEventInput = {
  [K in PlanEventTypeName]: Omit<PlanEventEnvelope<K>, Stamp> & Partial<Pick<PlanEventEnvelope<K>, Stamp>>;
}[PlanEventTypeName];
