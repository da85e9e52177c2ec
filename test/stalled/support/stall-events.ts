import type { PlanEvent } from '../../../src/contracts';
import { parsedEvent } from '../../support/parsed-event';

/** An event of `planId` (session `s_<planId>` unless given), stored now, validated as the worker would. */
export function ev(planId: string, seq: number, type: string, payload: object, sessionId = `s_${planId}`): PlanEvent {
  return parsedEvent({ planId, sessionId, seq, type, payload, occurredAt: new Date() });
}
