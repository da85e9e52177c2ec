import { DecimalAmount, ExternalId, IntInRange, LongText, Optional, Required, Text } from '../field.decorators';
import type { StepCompletedPayload } from '../types';

/** Tokens are required here (billing sums them) and bounded by SQL INT. */
export class StepCompletedPayloadDto implements StepCompletedPayload {
  @Required() @ExternalId() stepId!: string;
  @Optional() @LongText() result?: string;
  /** The step's full output, read back by later tasks. */
  @Optional() @LongText() outputContent?: string;
  @Required() @IntInRange(0, 2_147_483_647) inputTokens!: number;
  @Required() @IntInRange(0, 2_147_483_647) outputTokens!: number;
  @Optional() @Text(1, 100) model?: string;
  /** The model's provider (`openai`, `anthropic`, ...): picks the price table's provider. */
  @Optional() @Text(1, 100) provider?: string;
  @Optional() @IntInRange(0, 2_147_483_647) cacheReadTokens?: number;
  @Optional() @IntInRange(0, 2_147_483_647) cacheWriteTokens?: number;
  @Optional() @IntInRange(0, 2_147_483_647) reasoningTokens?: number;
  /** The provider's own cost in USD: it wins over any price. */
  @Optional() @DecimalAmount() reportedCost?: string;
}
