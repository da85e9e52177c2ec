import { DECISION_KINDS } from '../event-types';
import { LongText, NestedList, OneOf, Optional, Required, Text } from '../field.decorators';
import { WithinLimit } from '../limits';
import type { DecisionKind, PlanDecisionPayload } from '../types';
import { StepSpecDto } from './step-spec.dto';

/** Whether `steps` must be present depends on `decision`; payload-rules.check.ts enforces that. */
export class PlanDecisionPayloadDto implements PlanDecisionPayload {
  @Required() @OneOf(DECISION_KINDS) decision!: DecisionKind;
  @Optional() @NestedList(() => StepSpecDto) @WithinLimit('maxSteps') steps?: StepSpecDto[];
  @Optional() @LongText() feedback?: string;
  @Optional() @Text(0, 200) decidedBy?: string;
}
