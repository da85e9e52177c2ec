import type { PlanEvent } from '../../contracts';
import { isExternalId, isUuid } from '../../contracts/field-formats';
import { derivedId } from './derived-id';

/**
 * The log type of a voided seq: the event an executor published under a plan's seq was refused
 * for good (dead-lettered: invalid, conflict, unprocessable, retries exhausted), so no event will
 * come under that seq. The worker appends one to `plan_events` when it dead-letters an event whose
 * plan, session and seq it can read; the plan's watermark then moves past the seq at once instead
 * of waiting `WORKER_GAP_TIMEOUT_MS` for it. It changes no row of the plan. Not part of the wire
 * contract: the contract refuses this type from executors, so only the worker writes it.
 */
export const VOIDED_SEQ = 'seq.voided';

/** What a voided seq records of the refusal, in its payload. */
export interface VoidedSeqPayload {
  /** The refused event's id (lower-case), or null when it had none that is a UUID. */
  eventId: string | null;
  /** The dead letter's kind: invalid, conflict, unprocessable, retries-exhausted. */
  kind: string;
  /** The dead letter holding the refused event (`dlq show <id>`). */
  deadLetterId: string;
}

/** The seq a refused event held, as far as it can be read: its plan, session and seq must each be valid. */
export interface RefusedSeq {
  planId: string;
  sessionId: string;
  seq: number;
  eventId: string | null;
}

const SEQ_MAX = 2_147_483_647;

/** Whether a logged (or in-flight) event is a voided seq. Takes any `type`: the contract's union has no such member. */
export function isVoidedSeq(event: { type: unknown }): boolean {
  return event.type === VOIDED_SEQ;
}

/**
 * The plan, session and seq of a refused event, when each is valid by the contract's rules; else
 * undefined (nothing can be voided: an unreadable seq holds no plan back).
 */
export function refusedSeqOf(raw: unknown): RefusedSeq | undefined {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return undefined;
  const { planId, sessionId, seq, eventId } = raw as Record<string, unknown>;
  if (!isExternalId(planId) || !isExternalId(sessionId)) return undefined;
  if (typeof seq !== 'number' || !Number.isInteger(seq) || seq < 0 || seq > SEQ_MAX) return undefined;
  return { planId, sessionId, seq, eventId: isUuid(eventId) ? eventId.toLowerCase() : null };
}

/**
 * The id of the voided seq a refusal records, derived from the refused event's id alone, so that
 * whoever knows an event's id can ask whether it was refused (`eventStatuses`), a redelivered job
 * records the same one, and two refusals of one event are one fact. An event without a valid id is
 * voided under its plan and seq instead. (Should two plans each have a refused event under one
 * reused id, the second plan's voided seq conflicts with the first's and is not recorded: that
 * plan waits for the gap timeout.)
 */
export function voidedSeqId(ref: Pick<RefusedSeq, 'planId' | 'seq' | 'eventId'>): string {
  return ref.eventId === null ? derivedId(ref.planId, 'void', `seq ${ref.seq}`) : voidedSeqIdOf(ref.eventId);
}

/** The id of the voided seq a refusal of event `eventId` (a lower-case UUID) records. */
export function voidedSeqIdOf(eventId: string): string {
  return derivedId('', 'void', eventId);
}

/** The log entry voiding `ref`'s seq, as the store takes events. */
export function voidedSeqEvent(ref: RefusedSeq, kind: string, deadLetterId: string, at: Date): PlanEvent {
  const payload: VoidedSeqPayload = { eventId: ref.eventId, kind, deadLetterId };
  const entry = {
    specVersion: 1,
    eventId: voidedSeqId(ref),
    type: VOIDED_SEQ,
    planId: ref.planId,
    sessionId: ref.sessionId,
    seq: ref.seq,
    occurredAt: at.toISOString(),
    payload,
  };
  // the store's event type is the contract's union; this internal entry is told apart by isVoidedSeq
  return entry as unknown as PlanEvent;
}
