import { ExternalId, Optional, Required, Text } from '../field.decorators';
import type { StepStartedPayload } from '../types';

export class StepStartedPayloadDto implements StepStartedPayload {
  @Required() @ExternalId() stepId!: string;
  /** Set when the executor reassigned the step to another agent than the plan said. */
  @Optional() @Text(1, 100) agentId?: string;
}
