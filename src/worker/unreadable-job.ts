/**
 * The job data the worker substitutes for data it will not parse, kept as raw text with the reason,
 * which the processor dead-letters at once (one letter for the job, nothing dropped):
 * - data BullMQ cannot parse (`NaN`, `Infinity`, truncated JSON written by another producer or a
 *   bug): without this `Job.fromJSON` throws on every fetch, the job stays active until the stall
 *   limit, and nothing records why;
 * - data over `maxJobBytes` (contracts/limits.ts): parsing it is what costs a worker its memory.
 */
export interface UnreadableJobData {
  unreadable: { text: string; message: string };
}

export function isUnreadableJobData(data: unknown): data is UnreadableJobData {
  const u = (data as Partial<UnreadableJobData> | null)?.unreadable;
  return typeof u === 'object' && u !== null && typeof u.text === 'string' && typeof u.message === 'string';
}
