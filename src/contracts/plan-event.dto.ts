/**
 * The envelope DTO and one concrete event DTO per type. The parser picks the class from `type`
 * before transforming, so the payload is validated against the right DTO and its violations carry
 * `payload.` paths, all in a single class-validator pass.
 */
import 'reflect-metadata';
import { PLAN_EVENT_TYPES, PlanEventTypeName, SPEC_VERSION, isPlanEventType } from './event-types';
import {
  Exactly,
  ExternalId,
  IntInRange,
  NestedObject,
  OneOf,
  PlainObject,
  Required,
  Uuid,
  UtcTimestamp,
} from './field.decorators';
import { CheckpointSavedPayloadDto } from './payloads/checkpoint-saved.dto';
import { HandoffRecordedPayloadDto } from './payloads/handoff-recorded.dto';
import { PlanCreatedPayloadDto } from './payloads/plan-created.dto';
import { PlanDecisionPayloadDto } from './payloads/plan-decision.dto';
import { PlanFinalizedPayloadDto } from './payloads/plan-finalized.dto';
import { StepCompletedPayloadDto } from './payloads/step-completed.dto';
import { StepFailedPayloadDto } from './payloads/step-failed.dto';
import { StepSkippedPayloadDto } from './payloads/step-skipped.dto';
import { StepStartedPayloadDto } from './payloads/step-started.dto';

/** Fields every event carries; see the glossary in event-types.ts. */
export abstract class PlanEventDto {
  @Required() @Exactly(SPEC_VERSION, ', the only spec version this parser supports') specVersion!: 1;
  @Required() @Uuid() eventId!: string;
  @Required() @OneOf(PLAN_EVENT_TYPES) type!: PlanEventTypeName;
  @Required() @ExternalId() planId!: string;
  @Required() @ExternalId() sessionId!: string;
  /** Stamped by the publisher; bounded by SQL INT. */
  @Required() @IntInRange(0, 2_147_483_647) seq!: number;
  @Required() @UtcTimestamp() occurredAt!: string;
  abstract payload: object;
}

/** Used when `type` is missing or unknown: the type violation is the story; the payload only has to be an object. */
export class UntypedPlanEventDto extends PlanEventDto {
  @Required() @PlainObject() payload!: object;
}

export class PlanCreatedEventDto extends PlanEventDto {
  @Required() @NestedObject(() => PlanCreatedPayloadDto) payload!: PlanCreatedPayloadDto;
}

export class PlanDecisionEventDto extends PlanEventDto {
  @Required() @NestedObject(() => PlanDecisionPayloadDto) payload!: PlanDecisionPayloadDto;
}

export class StepStartedEventDto extends PlanEventDto {
  @Required() @NestedObject(() => StepStartedPayloadDto) payload!: StepStartedPayloadDto;
}

export class StepCompletedEventDto extends PlanEventDto {
  @Required() @NestedObject(() => StepCompletedPayloadDto) payload!: StepCompletedPayloadDto;
}

export class StepFailedEventDto extends PlanEventDto {
  @Required() @NestedObject(() => StepFailedPayloadDto) payload!: StepFailedPayloadDto;
}

export class StepSkippedEventDto extends PlanEventDto {
  @Required() @NestedObject(() => StepSkippedPayloadDto) payload!: StepSkippedPayloadDto;
}

export class HandoffRecordedEventDto extends PlanEventDto {
  @Required() @NestedObject(() => HandoffRecordedPayloadDto) payload!: HandoffRecordedPayloadDto;
}

export class CheckpointSavedEventDto extends PlanEventDto {
  @Required() @NestedObject(() => CheckpointSavedPayloadDto) payload!: CheckpointSavedPayloadDto;
}

export class PlanFinalizedEventDto extends PlanEventDto {
  @Required() @NestedObject(() => PlanFinalizedPayloadDto) payload!: PlanFinalizedPayloadDto;
}

type EventDtoClass = new () => PlanEventDto;

const EVENT_DTO_BY_TYPE: Readonly<Record<PlanEventTypeName, EventDtoClass>> = Object.freeze({
  'plan.created': PlanCreatedEventDto,
  'plan.decision': PlanDecisionEventDto,
  'step.started': StepStartedEventDto,
  'step.completed': StepCompletedEventDto,
  'step.failed': StepFailedEventDto,
  'step.skipped': StepSkippedEventDto,
  'handoff.recorded': HandoffRecordedEventDto,
  'checkpoint.saved': CheckpointSavedEventDto,
  'plan.finalized': PlanFinalizedEventDto,
});

export function eventDtoFor(type: unknown): EventDtoClass {
  return isPlanEventType(type) ? EVENT_DTO_BY_TYPE[type] : UntypedPlanEventDto;
}
