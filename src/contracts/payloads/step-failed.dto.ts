import { ExternalId, IntInRange, LongText, Optional, Required, Text } from '../field.decorators';
import type { StepFailedPayload } from '../types';

/** Tokens are optional: a step can fail before any model call was made. */
export class StepFailedPayloadDto implements StepFailedPayload {
  @Required() @ExternalId() stepId!: string;
  @Required() @LongText() error!: string;
  @Optional() @IntInRange(0, 2_147_483_647) inputTokens?: number;
  @Optional() @IntInRange(0, 2_147_483_647) outputTokens?: number;
  @Optional() @Text(1, 100) model?: string;
}
