import type { RedisClient } from './connect-redis';
import { EVENTS_QUEUE } from './queue-names';

/** Per-minute counters are kept this long. @defaultValue 2 days */
const KEEP_SECONDS = 2 * 86_400;

function minuteKey(prefix: string, minute: number): string {
  // under the events queue's keys: same hash slot as the queue on Redis Cluster
  return `${prefix}:${EVENTS_QUEUE}:stored-per-minute:${minute}`;
}

/**
 * Counts events a worker stored, per UTC minute, in Redis (one INCRBY and EXPIRE per commit,
 * pipelined and not awaited by the commit): the console's "events per minute" without scanning
 * plan_events. Failures are ignored; the figure is for people, not for accounting.
 */
export function recordStoredEvents(redis: RedisClient, prefix: string, events: number, now = Date.now()): void {
  if (events <= 0) return;
  const key = minuteKey(prefix, Math.floor(now / 60_000));
  redis
    .multi()
    .incrby(key, events)
    .expire(key, KEEP_SECONDS)
    .exec()
    .catch(() => undefined);
}

/** The last `minutes` minutes, oldest first, the current one included. */
export async function storedEventsPerMinute(
  redis: RedisClient,
  prefix: string,
  minutes: number,
  now = Date.now(),
): Promise<Array<{ minute: string; events: number }>> {
  const last = Math.floor(now / 60_000);
  const range = Array.from({ length: minutes }, (_, i) => last - minutes + 1 + i);
  const values = range.length > 0 ? await redis.mget(...range.map((m) => minuteKey(prefix, m))) : [];
  return range.map((m, i) => ({ minute: new Date(m * 60_000).toISOString(), events: Number(values[i] ?? 0) }));
}
