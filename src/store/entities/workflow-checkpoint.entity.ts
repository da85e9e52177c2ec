import { deletedAt, defineEntity, ext, int, text, ts, uuid } from './define-entity';

/** Seed 002: per-layer workflow state, so a workflow resumes from its last completed layer. */
export interface WorkflowCheckpointRow {
  id: string;
  workflowId: string;
  checkpointKey: string;
  layer: number;
  /** JSON object. */
  state: string;
  createdAt: Date;
  deletedAt: Date | null;
}

export const WorkflowCheckpointEntity = defineEntity<WorkflowCheckpointRow>(
  'WorkflowCheckpoint',
  'workflow_checkpoints',
  {
    id: uuid('id', { primary: true }),
    workflowId: ext('workflow_id'),
    checkpointKey: ext('checkpoint_key'),
    layer: int('layer'),
    state: text('state', false),
    createdAt: ts('created_at'),
    deletedAt,
  },
);
