import { Bool, IntInRange, LongText, NestedList, Optional, Required } from '../field.decorators';
import { WithinLimit } from '../limits';
import type { PlanCreatedPayload } from '../types';
import { StepSpecDto } from './step-spec.dto';

export class PlanCreatedPayloadDto implements PlanCreatedPayload {
  @Required() @LongText({ nonEmpty: true }) query!: string;
  /** May be empty: a planner can decide a query needs no steps, and that plan is still worth recording. */
  @Required() @NestedList(() => StepSpecDto) @WithinLimit('maxSteps') steps!: StepSpecDto[];
  @Optional() @Bool() requiresApproval?: boolean;
  @Optional() @IntInRange(0, 100) complexity?: number;
}
