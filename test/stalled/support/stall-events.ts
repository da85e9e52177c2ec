import { randomUUID } from 'node:crypto';
import { parsePlanEvent, type PlanEvent } from '../../../src/contracts';

/** An event of `planId` (session `s_<planId>`), stored now, validated as the worker would. */
export function ev(planId: string, seq: number, type: string, payload: object): PlanEvent {
  const parsed = parsePlanEvent({
    specVersion: 1,
    eventId: randomUUID(),
    type,
    planId,
    sessionId: `s_${planId}`,
    seq,
    occurredAt: new Date().toISOString(),
    payload,
  });
  if (!parsed.ok) throw parsed.error;
  return parsed.event;
}
