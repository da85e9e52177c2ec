import { DecimalAmount, ExternalId, IntInRange, LongText, Optional, Required, Text } from '../field.decorators';
import type { StepFailedPayload } from '../types';

/** Tokens are optional: a step can fail before any model call was made. */
export class StepFailedPayloadDto implements StepFailedPayload {
  @Required() @ExternalId() stepId!: string;
  @Required() @LongText() error!: string;
  @Optional() @IntInRange(0, 2_147_483_647) inputTokens?: number;
  @Optional() @IntInRange(0, 2_147_483_647) outputTokens?: number;
  @Optional() @Text(1, 100) model?: string;
  /** The model's provider (`openai`, `anthropic`, ...): picks the price table's provider. */
  @Optional() @Text(1, 100) provider?: string;
  @Optional() @IntInRange(0, 2_147_483_647) cacheReadTokens?: number;
  @Optional() @IntInRange(0, 2_147_483_647) cacheWriteTokens?: number;
  @Optional() @IntInRange(0, 2_147_483_647) reasoningTokens?: number;
  /** The provider's own cost in USD: it wins over any price. */
  @Optional() @DecimalAmount() reportedCost?: string;
}
