/**
 * The job data the worker substitutes for data BullMQ cannot parse (`NaN`, `Infinity`, truncated
 * JSON written by another producer or a bug): the raw text and the parser's reason, which the
 * processor dead-letters at once. Without it `Job.fromJSON` throws on every fetch, the job stays
 * active until the stall limit, and nothing records why.
 */
export interface UnreadableJobData {
  unreadable: { text: string; reason: string };
}

export function isUnreadableJobData(data: unknown): data is UnreadableJobData {
  const u = (data as Partial<UnreadableJobData> | null)?.unreadable;
  return typeof u === 'object' && u !== null && typeof u.text === 'string' && typeof u.reason === 'string';
}
