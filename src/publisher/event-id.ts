import { randomFillSync } from 'node:crypto';

/**
 * Event ids the publisher stamps: RFC 9562 version 7 UUIDs. The first 48 bits are the Unix time in
 * ms, so the ids a process stamps in one period are neighbours in every index on `event_id`: a
 * transaction's inserts land on a few index pages instead of one random page each (SQLite writes
 * every page a transaction touched into its WAL at commit; docs/store.md#time-ordered-event-ids). Within a millisecond,
 * the 12 bits after the version carry a counter that starts at a random value below 2048, so one
 * process's ids also sort in the order it stamped them; past 4096 ids in one ms, the time borrows
 * the next ms (RFC 9562 §6.2, method 1). The last 62 bits are random.
 *
 * eventId needs uniqueness, not secrecy: the random bits come from a pool of `randomFillSync`
 * bytes refilled every 256 ids, as `randomUUID` does.
 */
const POOL_IDS = 256;
/** Bytes of randomness per id: 2 for the counter's start, 8 for the tail (2 bits are the variant). */
const BYTES_PER_ID = 10;
const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

const pool = Buffer.alloc(POOL_IDS * BYTES_PER_ID);
let poolAt = pool.length;
let lastMs = -1;
let counter = 0;

export function eventIdV7(now: number = Date.now()): string {
  if (poolAt >= pool.length) {
    randomFillSync(pool);
    poolAt = 0;
  }
  const r = poolAt;
  poolAt += BYTES_PER_ID;
  if (now > lastMs) {
    lastMs = now;
    counter = ((pool[r] << 8) | pool[r + 1]) & 0x7ff;
  } else if (++counter > 0xfff) {
    // a clock that stepped back, or more than 4096 ids in one ms: stay monotonic
    lastMs++;
    counter = 0;
  }
  const ms = lastMs;
  // 48 bits of time: the high 16 and the low 32, since bitwise operators work on 32 bits
  const hi = Math.floor(ms / 0x100000000);
  const lo = ms >>> 0;
  return (
    HEX[(hi >>> 8) & 0xff] +
    HEX[hi & 0xff] +
    HEX[lo >>> 24] +
    HEX[(lo >>> 16) & 0xff] +
    '-' +
    HEX[(lo >>> 8) & 0xff] +
    HEX[lo & 0xff] +
    '-' +
    HEX[0x70 | (counter >>> 8)] +
    HEX[counter & 0xff] +
    '-' +
    HEX[0x80 | (pool[r + 2] & 0x3f)] +
    HEX[pool[r + 3]] +
    '-' +
    HEX[pool[r + 4]] +
    HEX[pool[r + 5]] +
    HEX[pool[r + 6]] +
    HEX[pool[r + 7]] +
    HEX[pool[r + 8]] +
    HEX[pool[r + 9]]
  );
}
