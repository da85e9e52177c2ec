import { deletedAt, defineEntity, ext, int, ts } from './define-entity';

/**
 * One row per plan that has events, created by its first event. Writers lock it before rebuilding
 * the plan's rows, which serialises concurrent workers on the same plan.
 */
export interface PlanHeadRow {
  planId: string;
  sessionId: string;
  version: number;
  eventCount: number;
  lastSeq: number;
  updatedAt: Date;
  deletedAt: Date | null;
}

export const PlanHeadEntity = defineEntity<PlanHeadRow>('PlanHead', 'plan_heads', {
  planId: ext('plan_id', { primary: true }),
  sessionId: ext('session_id'),
  version: int('version'),
  eventCount: int('event_count'),
  lastSeq: int('last_seq'),
  updatedAt: ts('updated_at'),
  deletedAt,
});
