/**
 * Where a plan came from, told by its defining `plan.created` event: events mapped from OTLP spans
 * carry version 8 UUIDs derived from the trace (span-mapping.ts), while the publisher and the
 * Python client stamp version 7 and other senders any version they like (v4, v7).
 */
export interface PlanSource {
  /** `opentelemetry`: mapped from the spans of a trace (POST /v1/traces); `events`: sent as events. */
  kind: 'opentelemetry' | 'events';
  /** The trace's id, when the plan id is the one derived from it (`otlp-<traceId>...`). */
  traceId: string | null;
}

const DERIVED_PLAN_ID = /^otlp-([0-9a-f]{32})(?:-[0-9a-f]{16})?$/;

export function planSourceOf(planId: string, createdEventId: string | undefined): PlanSource {
  const fromTrace = createdEventId !== undefined && createdEventId.length === 36 && createdEventId[14] === '8';
  if (!fromTrace) return { kind: 'events', traceId: null };
  return { kind: 'opentelemetry', traceId: DERIVED_PLAN_ID.exec(planId)?.[1] ?? null };
}
