/**
 * Where a plan came from, as its defining `plan.created` event says: a plan mapped from the spans
 * of an OpenTelemetry trace (POST /v1/traces) carries the trace's id (`traceId`); a plan sent as
 * events carries none.
 */
export interface PlanSource {
  /** `opentelemetry`: mapped from the spans of a trace (POST /v1/traces); `events`: sent as events. */
  kind: 'opentelemetry' | 'events';
  /** The trace the plan was mapped from. */
  traceId: string | null;
}

/** The source stored in a plan.created payload (parsed JSON; undefined when the event is gone). */
export function planSourceOf(createdPayload: unknown): PlanSource {
  const traceId = (createdPayload as { traceId?: unknown } | null | undefined)?.traceId;
  return typeof traceId === 'string' && traceId !== ''
    ? { kind: 'opentelemetry', traceId }
    : { kind: 'events', traceId: null };
}
