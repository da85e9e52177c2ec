import {
  Bool,
  ExternalId,
  IntInRange,
  LongText,
  NestedList,
  NestedObject,
  Optional,
  Required,
} from '../field.decorators';
import { WithinLimit } from '../limits';
import type { PlanCreatedPayload } from '../types';
import { ForkOriginDto } from './fork-origin.dto';
import { StepSpecDto } from './step-spec.dto';

export class PlanCreatedPayloadDto implements PlanCreatedPayload {
  @Required() @LongText({ nonEmpty: true }) query!: string;
  /** May be empty: a planner can decide a query needs no steps, and that plan is still worth recording. */
  @Required() @NestedList(() => StepSpecDto) @WithinLimit('maxSteps') steps!: StepSpecDto[];
  @Optional() @Bool() requiresApproval?: boolean;
  @Optional() @IntInRange(0, 100) complexity?: number;
  /**
   * A fork or replay of a stored plan: its steps are the parent's (those of layers before `layer`
   * inherited, the others to run), and `steps` lists only the ones the fork adds or changes, whose
   * `dependsOn` may name the parent's steps.
   */
  @Optional() @NestedObject(() => ForkOriginDto) forkOf?: ForkOriginDto;
  /** The OpenTelemetry trace the plan was mapped from (POST /v1/traces): where the plan came from. */
  @Optional() @ExternalId() traceId?: string;
}
