import { bigint, bool, count, defineEntity, deletedAt, ext, int, label, moneyTotal, text, ts } from './define-entity';

export type PlanStatus = 'planning' | 'executing' | 'completed' | 'failed' | 'cancelled';
export type ApprovalStatus = 'pending' | 'approved' | 'edited' | 'rejected';
export type ForkKind = 'fork' | 'replay';

/** `execution_plans`, as the product's schema names it, plus approval state and soft delete. */
export interface ExecutionPlanRow {
  id: string;
  sessionId: string;
  query: string;
  status: PlanStatus;
  summary: string | null;
  failureReason: string | null;
  totalSteps: number;
  completedSteps: number;
  failedSteps: number;
  skippedSteps: number;
  totalInputTokens: number;
  totalOutputTokens: number;
  /** Sum of the steps' costs (USD, 12 decimals); unpriced steps are counted in unpricedSteps, not here. */
  totalCost: string;
  /** Steps that used tokens at a price nobody knows: the total leaves them out. */
  unpricedSteps: number;
  requiresApproval: boolean;
  approvalStatus: ApprovalStatus | null;
  complexity: number | null;
  /** The plan this one was forked or replayed from; null for a plan an executor created. */
  parentPlanId: string | null;
  /** `fork` or `replay` when parentPlanId is set. */
  forkKind: ForkKind | null;
  /** The first layer a fork runs itself; the layers before it are inherited from the parent. */
  forkLayer: number | null;
  /** The parent's checkpoint the fork started from, if it was forked from one. */
  forkCheckpoint: string | null;
  createdAt: Date;
  updatedAt: Date;
  completedAt: Date | null;
  deletedAt: Date | null;
}

/** Whether a plan row is a fork or replay (its steps are partly its ancestors'). */
export function isFork(plan: Pick<ExecutionPlanRow, 'parentPlanId'>): boolean {
  return plan.parentPlanId !== null && plan.parentPlanId !== undefined;
}

export const ExecutionPlanEntity = defineEntity<ExecutionPlanRow>('ExecutionPlan', 'execution_plans', {
  id: ext('id', { primary: true }),
  sessionId: ext('session_id'),
  query: text('query', false),
  status: label('status', 20),
  summary: text('summary'),
  failureReason: text('failure_reason'),
  totalSteps: int('total_steps'),
  completedSteps: int('completed_steps'),
  failedSteps: int('failed_steps'),
  skippedSteps: int('skipped_steps'),
  totalInputTokens: bigint('total_input_tokens'),
  totalOutputTokens: bigint('total_output_tokens'),
  totalCost: moneyTotal('total_cost'),
  unpricedSteps: count('unpriced_steps'),
  requiresApproval: bool('requires_approval'),
  approvalStatus: label('approval_status', 20, true),
  complexity: int('complexity', true),
  parentPlanId: ext('parent_plan_id', { nullable: true }),
  forkKind: label('fork_kind', 10, true),
  forkLayer: int('fork_layer', true),
  forkCheckpoint: ext('fork_checkpoint', { nullable: true }),
  createdAt: ts('created_at'),
  updatedAt: ts('updated_at'),
  completedAt: ts('completed_at', true),
  deletedAt,
});
