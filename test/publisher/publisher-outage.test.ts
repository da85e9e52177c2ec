/**
 * Redis outages against real redis-server processes of our own: down before the publisher starts,
 * and killed (SIGKILL) in the middle of a stream. Every event must reach the queue exactly once,
 * and no publish() call may block during the outage.
 */
import type { PlanEvent } from '../../src/contracts';
import type { PlanEventPublisher } from '../../src/publisher';
import { exactlyEvents } from '../support/event-factory';
import {
  CallTimer,
  countByEventId,
  journalSegments,
  newPublisher,
  notExactlyOnce,
  queuedEvents,
  removeTempJournalDirs,
  settleHeap,
  yieldToLoop,
} from './support/publisher-harness';
import { RedisProcess } from './support/redis-process';

/**
 * "No publish call waits on Redis": a call that did would take the 5 s connect timeout, or
 * forever. The typical call takes a few microseconds and the slowest (a GC pause, an inline 1 MiB
 * journal write) ~10 ms, but on a busy shared machine preemption alone can stretch a call to
 * hundreds of ms, so the bound here is the one a wait on Redis would break, not a latency target:
 * call latency is measured by `npm run bench:publish` (BENCHMARKS.md), never asserted in a test.
 */
const MAX_MS = 2_000;

/** Publishes in slices of 500, yielding between slices as an executor's event loop would. */
async function publishAll(
  publisher: PlanEventPublisher,
  events: readonly PlanEvent[],
  timer: (i: number) => CallTimer | undefined,
  afterSlice: (published: number) => Promise<void> = async () => undefined,
): Promise<void> {
  for (let i = 0; i < events.length; i++) {
    const t = timer(i);
    const result = t ? t.time(() => publisher.publish(events[i])) : publisher.publish(events[i]);
    if (!result.ok) throw new Error(`event ${i} not accepted: ${JSON.stringify(result)}`);
    if (i % 500 === 499) {
      await yieldToLoop();
      await afterSlice(i + 1);
    }
  }
}

function expectNoBlockingCall(timer: CallTimer): void {
  expect(timer.count).toBeGreaterThan(1_000);
  expect(timer.max).toBeLessThan(MAX_MS);
}

describe('publisher during Redis outages', () => {
  const servers: RedisProcess[] = [];
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.destroy()));
    removeTempJournalDirs();
  });

  it('Redis stopped before the publisher starts: 10k events reach the queue exactly once after it starts', async () => {
    const redis = await RedisProcess.create();
    servers.push(redis);
    // Memory holds 2k events; the other 8k go through the spill journal (no group commit of memory
    // during the test: publisher-journal.test.ts covers it).
    const { publisher, prefix, journalDir } = newPublisher(redis.url, { maxBufferedEvents: 2_000, journalCommitMs: 600_000 });
    try {
      const events = exactlyEvents(10_000, { seed: 31 });
      settleHeap();
      const timer = new CallTimer();
      await publishAll(publisher, events, () => timer);
      expectNoBlockingCall(timer);
      expect(publisher.stats()).toMatchObject({ buffered: 2_000, spilled: 8_000, dropped: 0, published: 0, redisReady: false });
      expect(journalSegments(journalDir).length).toBeGreaterThan(0);

      await redis.start();
      await expect(publisher.flush(60_000)).resolves.toBe(true);

      const { events: queued } = await queuedEvents(redis.url, prefix);
      expect(notExactlyOnce(events.map((e) => e.eventId), countByEventId(queued))).toEqual([]);
      expect(publisher.stats()).toMatchObject({ published: 10_000, recovered: 8_000, buffered: 0, dropped: 0, journalBytes: 0 });
      // The journal drained in order, and was removed.
      const spilled = new Set(events.slice(2_000).map((e) => e.eventId));
      expect(queued.filter((e) => spilled.has(e.eventId)).map((e) => e.eventId)).toEqual([...spilled]);
      expect(journalSegments(journalDir)).toEqual([]);
    } finally {
      await publisher.close(5_000);
    }
  });

  it('Redis killed mid-stream of 50k events and restarted: all arrive, none twice', async () => {
    // Durable (AOF, fsync always): what Redis acknowledged before the kill is still there after it.
    const redis = await RedisProcess.create({ durable: true });
    servers.push(redis);
    await redis.start();
    const { publisher, prefix } = newPublisher(redis.url, { maxBufferedEvents: 5_000 });
    try {
      const events = exactlyEvents(50_000, { seed: 32 });
      settleHeap();
      const outage = new CallTimer();
      let down = false;
      await publishAll(
        publisher,
        events,
        () => (down ? outage : undefined),
        async (published) => {
          if (published === 15_000) {
            await redis.kill();
            down = true;
          } else if (published === 40_000) {
            await redis.start();
            down = false;
          }
        },
      );
      expectNoBlockingCall(outage);
      expect(publisher.stats().spilled).toBeGreaterThan(0);
      await expect(publisher.flush(90_000)).resolves.toBe(true);

      const { events: queued } = await queuedEvents(redis.url, prefix);
      expect(notExactlyOnce(events.map((e) => e.eventId), countByEventId(queued))).toEqual([]);
      expect(publisher.stats()).toMatchObject({ published: 50_000, dropped: 0, buffered: 0, journalBytes: 0 });
    } finally {
      await publisher.close(5_000);
    }
  });
});
