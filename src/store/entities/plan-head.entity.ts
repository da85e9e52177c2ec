import { deletedAt, defineEntity, ext, int, ts } from './define-entity';

/**
 * One row per plan that has events, created by its first event. Writers lock it before touching
 * the plan's rows, which serialises concurrent workers on the same plan. It also holds the plan's
 * watermark: which of its stored events are applied to its rows (docs/store.md#incremental-behind-a-watermark).
 */
export interface PlanHeadRow {
  planId: string;
  sessionId: string;
  /** Transactions that wrote this plan. */
  version: number;
  /** Events stored for the plan (applied or not). */
  eventCount: number;
  /** Highest seq stored. */
  lastSeq: number;
  /** Every stored event with a seq up to appliedSeq is applied to the rows, none above; null until plan.created is. */
  appliedSeq: number | null;
  /** Stored events not applied yet: past a gap in seq, or waiting for plan.created. */
  pendingEvents: number;
  /** Since when the plan has waited on the missing seq `appliedSeq + 1`; null when nothing waits. */
  gapSince: Date | null;
  updatedAt: Date;
  /** When `plans restore` last brought the plan back: retention counts its age from here too. Null if never. */
  restoredAt: Date | null;
  /** The plan's own deadlineMs (plan.created); null: STALL_AFTER (docs/store.md#stalled-plans). */
  deadlineMs: number | null;
  /** When the running plan is stalled unless an event comes first; null while it is not running. */
  stallDueAt: Date | null;
  /**
   * When the stall check next looks at the running plan: at or before `stallDueAt`, null with it.
   * Set when the plan starts running and by the check itself, not by each event, so the event's
   * head update leaves every indexed column as it was (IX_plan_heads_stall_check).
   */
  stallCheckAt: Date | null;
  /** When the stall check found the plan stalled; null again with its next event. */
  stalledAt: Date | null;
  deletedAt: Date | null;
}

export const PlanHeadEntity = defineEntity<PlanHeadRow>('PlanHead', 'plan_heads', {
  planId: ext('plan_id', { primary: true }),
  sessionId: ext('session_id'),
  version: int('version'),
  eventCount: int('event_count'),
  lastSeq: int('last_seq'),
  appliedSeq: int('applied_seq', true),
  pendingEvents: int('pending_events'),
  gapSince: ts('gap_since', true),
  updatedAt: ts('updated_at'),
  restoredAt: ts('restored_at', true),
  deadlineMs: int('deadline_ms', true),
  stallDueAt: ts('stall_due_at', true),
  stallCheckAt: ts('stall_check_at', true),
  stalledAt: ts('stalled_at', true),
  deletedAt,
});
