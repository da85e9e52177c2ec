import { randomFillSync } from 'node:crypto';
import { uuidOf } from '../shared/uuid';

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
/**
 * Each id is written in 16 bytes of the pool, which `randomFillSync` filled: the first 8 are
 * overwritten with the time and the counter (whose start comes from two of them), the last 8 stay
 * random (2 bits become the variant).
 */
const BYTES_PER_ID = 16;

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
    counter = ((pool[r + 6] << 8) | pool[r + 7]) & 0x7ff;
  } else if (++counter > 0xfff) {
    // a clock that stepped back, or more than 4096 ids in one ms: stay monotonic
    lastMs++;
    counter = 0;
  }
  // 48 bits of time (the high 16 and the low 32: bitwise operators work on 32 bits), then the
  // 12-bit counter below the version nibble
  const hi = Math.floor(lastMs / 0x100000000);
  const lo = lastMs >>> 0;
  pool[r] = hi >>> 8;
  pool[r + 1] = hi;
  pool[r + 2] = lo >>> 24;
  pool[r + 3] = lo >>> 16;
  pool[r + 4] = lo >>> 8;
  pool[r + 5] = lo;
  pool[r + 6] = counter >>> 8;
  pool[r + 7] = counter;
  return uuidOf(pool, 7, r);
}
