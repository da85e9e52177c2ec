import { FINAL_STATUSES } from '../event-types';
import { LongText, OneOf, Optional, Required } from '../field.decorators';
import type { FinalStatus, PlanFinalizedPayload } from '../types';

export class PlanFinalizedPayloadDto implements PlanFinalizedPayload {
  @Required() @OneOf(FINAL_STATUSES) status!: FinalStatus;
  @Optional() @LongText() summary?: string;
  @Optional() @LongText() failureReason?: string;
}
