import type { CostSource } from '../../pricing';
import { count, defineEntity, deletedAt, ext, int, label, money, str, text, ts, uuid } from './define-entity';

export type StepStatus = 'pending' | 'in_progress' | 'completed' | 'failed' | 'skipped';

/**
 * `plan_steps`, as the product's schema names it, plus the executor's step key, DAG edges, model and
 * where its output is: the step.completed event that carried it (`outputEventId`), read from the
 * log by whoever shows it (src/queries/step-output.query.ts). The output is stored once, in the log.
 */
export interface PlanStepRow {
  id: string;
  planId: string;
  stepKey: string;
  stepIndex: number;
  agentId: string;
  task: string;
  title: string | null;
  expectedOutput: string | null;
  /** JSON array of step keys. */
  dependsOn: string | null;
  status: StepStatus;
  result: string | null;
  error: string | null;
  /**
   * Null on every row written since outputs are stored once (migration OutputsStoredOnce); a row
   * stored before it whose output the migration could not match with an event of the log keeps it here.
   */
  outputContent: string | null;
  /** The event (`plan_events.event_id`) whose payload holds the step's output; null when it stored none. */
  outputEventId: string | null;
  model: string | null;
  inputTokens: number;
  outputTokens: number;
  /** The model's provider, as the step's event said. */
  provider: string | null;
  /** Parts of inputTokens: read from and written to the provider's prompt cache. */
  cacheReadTokens: number;
  cacheWriteTokens: number;
  /** Part of outputTokens. */
  reasoningTokens: number;
  /** The provider's own cost (USD, 12 decimals), as the step's event said. */
  reportedCost: string | null;
  /** What the step cost (USD, 12 decimals), fixed when stored; null when unpriced or nothing to price. */
  cost: string | null;
  /** Where the cost comes from; null while the step has nothing to price. */
  costSource: CostSource | null;
  /** The price used: `genai-prices@<version>:<provider>/<model>` or `override:<id>`. */
  priceRef: string | null;
  startedAt: Date | null;
  completedAt: Date | null;
  createdAt: Date;
  deletedAt: Date | null;
}

export const PlanStepEntity = defineEntity<PlanStepRow>('PlanStep', 'plan_steps', {
  id: uuid('id', { primary: true }),
  planId: ext('plan_id'),
  stepKey: ext('step_key'),
  stepIndex: int('step_index'),
  agentId: str('agent_id', 100),
  task: text('task', false),
  title: label('title', 500, true),
  expectedOutput: label('expected_output', 50, true),
  dependsOn: text('depends_on'),
  status: label('status', 20),
  result: text('result'),
  error: text('error'),
  outputContent: text('output_content'),
  outputEventId: uuid('output_event_id', { nullable: true }),
  model: str('model', 100, true),
  inputTokens: int('input_tokens'),
  outputTokens: int('output_tokens'),
  provider: str('provider', 100, true),
  cacheReadTokens: count('cache_read_tokens'),
  cacheWriteTokens: count('cache_write_tokens'),
  reasoningTokens: count('reasoning_tokens'),
  reportedCost: money('reported_cost'),
  cost: money('cost'),
  costSource: label('cost_source', 20, true),
  priceRef: label('price_ref', 200, true),
  startedAt: ts('started_at', true),
  completedAt: ts('completed_at', true),
  createdAt: ts('created_at'),
  deletedAt,
});
