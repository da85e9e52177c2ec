import { defineEntity, deletedAt, ext, int, label, text, ts, uuid } from './define-entity';

/** The append-only raw event log. `eventId` is the idempotency key and the primary key. */
export interface PlanEventRow {
  eventId: string;
  planId: string;
  sessionId: string;
  type: string;
  seq: number;
  specVersion: number;
  occurredAt: Date;
  recordedAt: Date;
  /** JSON of the event's payload. */
  payload: string;
  deletedAt: Date | null;
}

export const PlanEventEntity = defineEntity<PlanEventRow>('PlanEvent', 'plan_events', {
  eventId: uuid('event_id', { primary: true }),
  planId: ext('plan_id'),
  sessionId: ext('session_id'),
  type: label('type', 40),
  seq: int('seq'),
  specVersion: int('spec_version'),
  occurredAt: ts('occurred_at'),
  recordedAt: ts('recorded_at'),
  payload: text('payload', false),
  deletedAt,
});
