import { ExternalId, ExternalIdList, IntInRange, LongText, Optional, Required, Text } from '../field.decorators';
import { WithinLimit } from '../limits';
import type { StepSpec } from '../types';

/** One step of a step list. Cross-step rules (unique ids, known dependencies, no cycle) live in step-graph.check.ts. */
export class StepSpecDto implements StepSpec {
  @Required() @ExternalId() stepId!: string;
  @Required() @IntInRange(0, 100_000) index!: number;
  /** `plan_steps.agent_id` is NVARCHAR(100). */
  @Required() @Text(1, 100) agentId!: string;
  @Required() @LongText({ nonEmpty: true }) task!: string;
  @Optional() @Text(0, 500) title?: string;
  /** `plan_steps.expected_output` is NVARCHAR(50) in the product's schema: a short label, not a description. */
  @Optional() @Text(0, 50) expectedOutput?: string;
  @Optional() @ExternalIdList() @WithinLimit('maxDependsOn') dependsOn?: string[];
}
