import { ExternalId, LongText, Optional, Required } from '../field.decorators';
import type { StepSkippedPayload } from '../types';

export class StepSkippedPayloadDto implements StepSkippedPayload {
  @Required() @ExternalId() stepId!: string;
  @Optional() @LongText() reason?: string;
}
