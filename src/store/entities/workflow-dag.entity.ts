import { deletedAt, defineEntity, ext, text, ts } from './define-entity';

/** Seed 002, option C: the DAG stored once per workflow (workflow id = plan id), with an expiry. */
export interface WorkflowDagRow {
  workflowId: string;
  /** JSON: `{ steps: [{ stepId, index, agentId, dependsOn }], layers: string[][] }`. */
  dag: string;
  /** JSON: the `layers` of `dag` alone (a fork reads them without the document); null for older rows. */
  layers: string | null;
  intent: string | null;
  createdAt: Date;
  expiresAt: Date | null;
  deletedAt: Date | null;
}

export const WorkflowDagEntity = defineEntity<WorkflowDagRow>('WorkflowDag', 'workflow_dags', {
  workflowId: ext('workflow_id', { primary: true }),
  dag: text('dag', false),
  layers: text('layers'),
  intent: text('intent'),
  createdAt: ts('created_at'),
  expiresAt: ts('expires_at', true),
  deletedAt,
});
