import type {
  ApprovalDecidedPayload,
  ApprovalRequestedPayload,
  CheckpointSavedPayload,
  HandoffRecordedPayload,
  PayloadByType,
  PlanCreatedPayload,
  PlanDecisionPayload,
  PlanEventTypeName,
  PlanFinalizedPayload,
  StepCompletedPayload,
  StepFailedPayload,
  StepSkippedPayload,
  StepStartedPayload,
} from '../contracts';
import type { EventStamps, PlanRef, PublishResult } from './publisher.types';

/**
 * One typed method per event type, so an executor writes
 * `publisher.stepCompleted(plan, { stepId, inputTokens, outputTokens })` and the compiler checks the
 * payload. Each returns what `publish()` returns; stamps left out are filled in by the publisher.
 */
export abstract class TypedHelpers {
  protected abstract publishTyped<T extends PlanEventTypeName>(
    type: T,
    plan: PlanRef,
    payload: PayloadByType[T],
    stamps?: EventStamps,
  ): PublishResult;

  planCreated(plan: PlanRef, payload: PlanCreatedPayload, stamps?: EventStamps): PublishResult {
    return this.publishTyped('plan.created', plan, payload, stamps);
  }

  planDecision(plan: PlanRef, payload: PlanDecisionPayload, stamps?: EventStamps): PublishResult {
    return this.publishTyped('plan.decision', plan, payload, stamps);
  }

  stepStarted(plan: PlanRef, payload: StepStartedPayload, stamps?: EventStamps): PublishResult {
    return this.publishTyped('step.started', plan, payload, stamps);
  }

  stepCompleted(plan: PlanRef, payload: StepCompletedPayload, stamps?: EventStamps): PublishResult {
    return this.publishTyped('step.completed', plan, payload, stamps);
  }

  stepFailed(plan: PlanRef, payload: StepFailedPayload, stamps?: EventStamps): PublishResult {
    return this.publishTyped('step.failed', plan, payload, stamps);
  }

  stepSkipped(plan: PlanRef, payload: StepSkippedPayload, stamps?: EventStamps): PublishResult {
    return this.publishTyped('step.skipped', plan, payload, stamps);
  }

  handoffRecorded(plan: PlanRef, payload: HandoffRecordedPayload, stamps?: EventStamps): PublishResult {
    return this.publishTyped('handoff.recorded', plan, payload, stamps);
  }

  checkpointSaved(plan: PlanRef, payload: CheckpointSavedPayload, stamps?: EventStamps): PublishResult {
    return this.publishTyped('checkpoint.saved', plan, payload, stamps);
  }

  planFinalized(plan: PlanRef, payload: PlanFinalizedPayload, stamps?: EventStamps): PublishResult {
    return this.publishTyped('plan.finalized', plan, payload, stamps);
  }

  /** Usually through `requestApproval` (approval-client.ts), which computes the argsDigest. */
  approvalRequested(plan: PlanRef, payload: ApprovalRequestedPayload, stamps?: EventStamps): PublishResult {
    return this.publishTyped('approval.requested', plan, payload, stamps);
  }

  /** A reviewer's tool: pass the request's `seq` in `stamps`, so the decision takes no seq of the executor's. */
  approvalDecided(plan: PlanRef, payload: ApprovalDecidedPayload, stamps?: EventStamps): PublishResult {
    return this.publishTyped('approval.decided', plan, payload, stamps);
  }
}
