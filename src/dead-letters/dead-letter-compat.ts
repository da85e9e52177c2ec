/**
 * Readers for entries the current writer would not store as they are: written by an older
 * version (no summary fields, no REPLAY_FIELD, the event anywhere in the record), by hand, or by a
 * writer that died between its two steps. Every field is checked where it is read and a gap is
 * filled from the job itself, so a listing never crashes on one. (Inside Redis, read-entries.lua
 * and count-stats.lua summarise an entry without summary fields as it is read.)
 */
import type { Job } from 'bullmq';
import { DEAD_LETTER_KINDS, DeadLetter, DeadLetterKind } from './dead-letter';
import type { ClaimedLetter } from './dead-letter-codec';

/** JSON text as a value; `{}` for text that is not JSON. */
export function parseData(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return {};
  }
}

function str(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

/** A job's parsed data as a record whose every field is checked where it is read. */
function asRecord(rawData: unknown): Partial<DeadLetter> {
  return (rawData && typeof rawData === 'object' ? rawData : {}) as Partial<DeadLetter>;
}

function replayCountOf(data: Partial<DeadLetter>): number {
  return typeof data.replayCount === 'number' ? data.replayCount : 0;
}

/** An entry as read-entries.lua returns it (its data: the record, or its summary) as a DeadLetter. */
export function decodeEntry(id: string, name: string, timestamp: string, data: string): DeadLetter {
  return toDeadLetterFrom(id, name, Number(timestamp), parseData(data));
}

/** The job's data as a DeadLetter (see toDeadLetterFrom). */
export function toDeadLetter(job: Job): DeadLetter {
  return toDeadLetterFrom(String(job.id), job.name, job.timestamp, job.data);
}

/**
 * A job's data as a DeadLetter. Writers store a complete record; this only fills gaps (an entry
 * written by hand or by an older version) from the job itself. Field by field, fields of no
 * DeadLetter left out: a spread of the record costs more per entry, which a 100k listing feels.
 */
export function toDeadLetterFrom(id: string, name: string, timestamp: number, rawData: unknown): DeadLetter {
  const data = asRecord(rawData);
  // only for a record without times (an ISO string per entry is a cost a 100k listing feels)
  const addedAt = (): string => new Date(timestamp || 0).toISOString();
  const kind = (DEAD_LETTER_KINDS as readonly string[]).includes(String(data.kind ?? name))
    ? ((data.kind ?? name) as DeadLetterKind)
    : 'unprocessable';
  const error = data.error && typeof data.error === 'object' ? data.error : { message: '(no error recorded)' };
  return {
    // the job id is what removal uses; writers set both to the same value
    id,
    kind,
    event: data.event,
    eventId: str(data.eventId),
    type: str(data.type),
    planId: str(data.planId),
    sessionId: str(data.sessionId),
    error: { ...error, message: str(error.message) ?? '(no message)' },
    attempts: typeof data.attempts === 'number' ? data.attempts : 0,
    firstFailedAt: str(data.firstFailedAt) ?? addedAt(),
    lastFailedAt: str(data.lastFailedAt) ?? addedAt(),
    source: data.source && typeof data.source === 'object' ? data.source : { queue: '?', jobId: '?' },
    workerVersion: str(data.workerVersion) ?? '?',
    replayCount: replayCountOf(data),
  };
}

/**
 * What a replay sends of an entry stored without the writer's layout (or whose bytes no longer
 * match it): the whole record parsed, its event encoded. JSON.stringify(undefined) is undefined:
 * an entry without an event replays as null, as an array element would encode it.
 */
export function claimedFromRecord(id: string, payload: Buffer): ClaimedLetter {
  const record = asRecord(parseData(payload.toString('utf8')));
  return {
    id,
    eventId: str(record.eventId),
    eventJson: Buffer.from(JSON.stringify(record.event) ?? 'null', 'utf8'),
    replayCount: replayCountOf(record),
  };
}
