/**
 * The bytes of one EVENTS_QUEUE job's data, `{"v":1,"events":[<event>,...]}` (EventBatchJobData),
 * written straight from the events' JSON texts into one Buffer of the exact size. Handing ioredis a
 * Buffer instead of a joined string saves a join copy, a rope flattening and two UTF-8 length scans
 * per job (bench:publish profile: over 10% of the publisher's CPU). The publisher encodes its
 * batches with it, and `dlq replay` the events it takes out of dead letters (as stored bytes).
 */
const HEAD = Buffer.from('{"v":1,"events":[', 'latin1');
const TAIL = Buffer.from(']}', 'latin1');
const COUNTS = Buffer.from('],"replayCounts":[', 'latin1');
const COMMA = 0x2c;

/**
 * Job data around events given as JSON texts (strings, or UTF-8 bytes). With `replayCounts` (one
 * per event: `dlq replay`), the job carries them after the events, as EventBatchJobData says.
 */
export function encodeBatch(events: ReadonlyArray<string | Buffer>, replayCounts?: readonly number[]): Buffer {
  if (replayCounts && replayCounts.length !== events.length)
    throw new RangeError(`encodeBatch: ${events.length} events but ${replayCounts.length} replay counts`);
  const counts = replayCounts ? Buffer.from(replayCounts.map((n) => JSON.stringify(n)).join(','), 'latin1') : undefined;
  const sizes = new Array<number>(events.length);
  let size = HEAD.length + TAIL.length + Math.max(events.length - 1, 0) + (counts ? COUNTS.length + counts.length : 0);
  for (let i = 0; i < events.length; i++) {
    const event = events[i];
    size += sizes[i] = typeof event === 'string' ? Buffer.byteLength(event, 'utf8') : event.length;
  }
  const buffer = Buffer.allocUnsafe(size);
  let offset = HEAD.copy(buffer, 0);
  for (let i = 0; i < events.length; i++) {
    if (i > 0) buffer[offset++] = COMMA;
    const event = events[i];
    offset += typeof event === 'string' ? buffer.write(event, offset, sizes[i], 'utf8') : event.copy(buffer, offset);
  }
  if (counts) {
    offset += COUNTS.copy(buffer, offset);
    offset += counts.copy(buffer, offset);
  }
  TAIL.copy(buffer, offset);
  return buffer;
}

/** Job data around an events array already encoded (a journal record's bytes). */
export function encodeRecord(eventsArray: Buffer): Buffer {
  return Buffer.concat([HEAD.subarray(0, HEAD.length - 1), eventsArray, TAIL.subarray(1)]);
}
