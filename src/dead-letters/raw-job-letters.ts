/**
 * Dead letters that hold a whole EVENTS_QUEUE job as its raw text. The worker writes one when it
 * does not read a job: data over `maxJobBytes` (not parsed, to bound its memory) or data that is
 * not JSON. Kind `invalid`, the text as the event, and a message that ends in "its raw text is kept
 * as the event". Sent back as it is, such a letter could only fail again (a job over the limit is
 * over it again), so a replay splits it into the job's events, which go back in jobs under the
 * limit; the worker then stores the valid ones and dead-letters, one by one, those still invalid.
 * A raw text that is not a job's JSON is kept as it is, with the reason.
 */
import type { ClaimedLetter, DeadLetterSummary } from './dead-letter-codec';

/** The worker's message for a job it did not read (src/worker/events-worker.ts writes it). */
const RAW_JOB_MESSAGE = /^job data is .*its raw text is kept as the event$/s;

const QUOTE = 0x22;

/** An event of a raw job, ready to send, and where it was in the job's `events`. */
export interface SplitEvent {
  /** Its `id` is the raw letter's: the letter goes once all of its events are queued. */
  letter: ClaimedLetter;
  index: number;
  event: unknown;
}

export type RawJobSplit = { events: SplitEvent[] } | { kept: string };

/** Whether a claimed entry's event is a JSON string, which every raw-job letter's is (cheap: one byte). */
export function hasTextEvent(letter: ClaimedLetter): boolean {
  return letter.eventJson[0] === QUOTE;
}

/** Whether a dead letter is the worker's record of a job it did not read. */
export function isRawJobLetter(summary: Pick<DeadLetterSummary, 'kind' | 'error'>): boolean {
  return summary.kind === 'invalid' && RAW_JOB_MESSAGE.test(summary.error.message);
}

function replayCountAt(counts: unknown, index: number): number {
  const n = Array.isArray(counts) ? counts[index] : undefined;
  return typeof n === 'number' && Number.isSafeInteger(n) && n >= 0 ? n : 0;
}

/**
 * The events of the job whose raw text `letter` holds, or why it stays as it is. An event's replay
 * count is the job's own for it (a replayed job carries them) or the letter's, whichever is higher.
 */
export function splitRawJob(letter: ClaimedLetter): RawJobSplit {
  let job: unknown;
  try {
    const text: unknown = JSON.parse(letter.eventJson.toString('utf8'));
    if (typeof text !== 'string') return { kept: 'its event is not the raw text of a job; kept as it is' };
    job = JSON.parse(text);
  } catch (err) {
    return {
      kept: `its raw text is not JSON (${(err as Error).message}), so it cannot be split into events; kept as it is`,
    };
  }
  const batch = job as { v?: unknown; events?: unknown; replayCounts?: unknown } | null;
  if (!batch || typeof batch !== 'object' || batch.v !== 1 || !Array.isArray(batch.events)) {
    return {
      kept: 'its raw text is JSON but not a batch of events ({"v":1,"events":[...]}), so it cannot be split; kept as it is',
    };
  }
  const events = batch.events.map((event: unknown, index) => {
    const eventId = (event as { eventId?: unknown } | null)?.eventId;
    const replayCount = Math.max(letter.replayCount, replayCountAt(batch.replayCounts, index));
    const eventJson = Buffer.from(JSON.stringify(event) ?? 'null', 'utf8');
    return {
      index,
      event,
      letter: { id: letter.id, eventId: typeof eventId === 'string' ? eventId : null, eventJson, replayCount },
    };
  });
  return { events };
}
