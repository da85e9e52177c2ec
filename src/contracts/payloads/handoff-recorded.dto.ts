import { ExternalId, LongText, Optional, Required, Text } from '../field.decorators';
import type { HandoffRecordedPayload } from '../types';

export class HandoffRecordedPayloadDto implements HandoffRecordedPayload {
  @Required() @ExternalId() handoffId!: string;
  @Optional() @ExternalId() stepId?: string;
  @Required() @Text(1, 100) fromAgentId!: string;
  @Required() @Text(1, 100) toAgentId!: string;
  /** `plan_handoffs.reason` is NVARCHAR(50) in the product's schema: a short code; the prose goes in `explanation`. */
  @Required() @Text(1, 50) reason!: string;
  @Optional() @LongText() explanation?: string;
}
