import { fnv1a32 } from '../shared/fnv1a';

/**
 * An event's transaction lane (micro-batcher): FNV-1a of its session id. A plan belongs to one
 * session, so a plan's events share a lane, and so do the plans of a session: every transaction
 * that writes a session's plans also writes rows of the session itself (its `sessions` row, its
 * rollup rows), which would otherwise be locked by one lane while another waits for them. (An
 * event naming another session than its plan's still applies in order: it waits for the plan's
 * head lock like any other writer.)
 */
export function eventLane(event: { sessionId: string }): number {
  return fnv1a32(event.sessionId);
}
