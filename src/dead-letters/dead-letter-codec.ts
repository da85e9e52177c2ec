/**
 * How a dead letter is stored: the record's bytes (the job's data), laid out with its event last,
 * and the fields kept beside it in its job hash. The Lua scripts name the same fields in
 * lua/includes/fields.lua; a test holds the two equal. Entries this writer would not store
 * (older versions, by hand) are read by dead-letter-compat.ts.
 */
import type { DeadLetter } from './dead-letter';

/**
 * What listings and stats read of an entry, computed once when it is written (add-summaries.lua)
 * and kept in its job hash beside BullMQ's fields: the summary (the record without the event, the
 * stack and the violations) and the kind, type and lastFailedAt the stats count by. Nothing
 * changes a dead letter's data after it is written, so these never go stale.
 */
export const SUMMARY_FIELD = 'pl:summary';
export const KIND_FIELD = 'pl:kind';
export const TYPE_FIELD = 'pl:type';
export const AT_FIELD = 'pl:at';

/**
 * The writer's layout of a record (encodeDeadLetter): the event is its last field, so the record's
 * bytes end in `,"event":<event JSON>}`, and the entry's REPLAY_FIELD says
 * `<event bytes> <replay count> <event id>`. A claim cuts the event out of the record with one
 * `string.sub` (no JSON decoded in Redis or here), after checking that the bytes around the cut
 * are that frame.
 */
export const REPLAY_FIELD = 'pl:replay';
export const EVENT_FRAME = ',"event":';

/**
 * A replay's claim on an entry: a field of the entry's own job hash, `<expiry ms>:<token>`. No key
 * of its own to create, expire and delete, and it goes with the entry.
 */
export const CLAIM_FIELD = 'pl:claim';

/** A dead letter without its bulky parts (the event, the stack, the violations): what listings read. */
export type DeadLetterSummary = Omit<DeadLetter, 'event' | 'error'> & { error: { message: string; code?: string } };

/**
 * What a replay needs of a claimed entry: the event as the JSON bytes it is stored as, its id and
 * its replay count. Nothing is parsed or encoded again on the way back to the events queue.
 */
export interface ClaimedLetter {
  id: string;
  eventId: string | null;
  /** The event's JSON text, UTF-8. */
  eventJson: Buffer;
  replayCount: number;
}

/** A record as the writer stores it: its bytes (the event last) and its REPLAY_FIELD ('' without an event). */
export function encodeDeadLetter(letter: DeadLetter): { bytes: Buffer; replayField: string } {
  const { event, ...rest } = letter;
  const head = JSON.stringify(rest);
  const eventJson = event === undefined ? undefined : JSON.stringify(event);
  const count = letter.replayCount;
  // anything unusual is stored as a plain record, which a replay parses
  if (eventJson === undefined || head === '{}' || !Number.isSafeInteger(count) || count < 0)
    return { bytes: Buffer.from(JSON.stringify(letter), 'utf8'), replayField: '' };
  const bytes = Buffer.from(`${head.slice(0, -1)}${EVENT_FRAME}${eventJson}}`, 'utf8');
  return { bytes, replayField: `${Buffer.byteLength(eventJson, 'utf8')} ${count} ${letter.eventId ?? ''}` };
}

/**
 * A claim's answer for an entry laid out by encodeDeadLetter: its REPLAY_FIELD value and the event's
 * bytes, which the claim has checked against the record. (An entry without that layout comes back
 * whole: dead-letter-compat.ts reads it.)
 */
export function decodeClaimed(id: string, replayField: Buffer, eventJson: Buffer): ClaimedLetter {
  // `<event bytes> <replay count> <event id>`
  const text = replayField.toString('utf8');
  const a = text.indexOf(' ');
  const b = text.indexOf(' ', a + 1);
  const count = b > a ? Number(text.slice(a + 1, b)) : NaN;
  const eventId = b > a ? text.slice(b + 1) : '';
  return {
    id,
    eventId: eventId === '' ? null : eventId,
    eventJson,
    replayCount: Number.isSafeInteger(count) ? count : 0,
  };
}

/**
 * The record without its event, stack and violations. Field by field: a rest-spread costs more
 * per entry, which a listing of 100k entries feels (BENCHMARKS.md, "Dead letters").
 */
export function toSummary(dl: DeadLetter): DeadLetterSummary {
  const { error } = dl;
  return {
    id: dl.id,
    kind: dl.kind,
    eventId: dl.eventId,
    type: dl.type,
    planId: dl.planId,
    sessionId: dl.sessionId,
    error:
      error.code !== undefined && error.code !== null
        ? { message: error.message, code: error.code }
        : { message: error.message },
    attempts: dl.attempts,
    firstFailedAt: dl.firstFailedAt,
    lastFailedAt: dl.lastFailedAt,
    source: dl.source,
    workerVersion: dl.workerVersion,
    replayCount: dl.replayCount,
  };
}
