import { deletedAt, defineEntity, ext, int, str, text, ts, uuid } from './define-entity';

export type StepStatus = 'pending' | 'in_progress' | 'completed' | 'failed' | 'skipped';

/**
 * `plan_steps`, as the product's schema names it, plus the executor's step key, DAG edges, model and output content
 * (read back by later tasks).
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
  outputContent: string | null;
  model: string | null;
  inputTokens: number;
  outputTokens: number;
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
  title: str('title', 500, true),
  expectedOutput: str('expected_output', 50, true),
  dependsOn: text('depends_on'),
  status: str('status', 20),
  result: text('result'),
  error: text('error'),
  outputContent: text('output_content'),
  model: str('model', 100, true),
  inputTokens: int('input_tokens'),
  outputTokens: int('output_tokens'),
  startedAt: ts('started_at', true),
  completedAt: ts('completed_at', true),
  createdAt: ts('created_at'),
  deletedAt,
});
