/**
 * Redis outages against real redis-server processes of our own: down before the publisher starts,
 * and killed (SIGKILL) in the middle of a stream. Every event must reach the queue exactly once,
 * and no publish() call may block during the outage.
 */
import type { PlanEvent } from '../../src/contracts';
import type { PlanEventPublisher } from '../../src/publisher';
import { exactlyEvents } from '../support/event-factory';
import {
  countByEventId,
  journalSegments,
  newPublisher,
  notExactlyOnce,
  queuedEvents,
  removeTempJournalDirs,
  yieldToLoop,
} from './support/publisher-harness';
import { RedisProcess } from './support/redis-process';

/**
 * "No publish call waits on Redis", proven without a clock (a latency bound flakes on a busy
 * machine; call latency is measured by `npm run bench:publish`, BENCHMARKS.md). A call that waited
 * on Redis would have to hand back a promise or let the event loop turn. So every call must return
 * a plain result, and a whole slice of 500 calls must run inside one turn of the loop: a
 * setImmediate queued before the slice has not run when the slice ends, so no I/O callback (no
 * Redis reply, no connect error) can have settled while any call of the slice ran.
 */
class NonBlockingProbe {
  slices = 0;
  calls = 0;
  /** Slices during which the event loop turned, i.e. some call let I/O settle. */
  loopTurnedIn: number[] = [];
  /** Calls that handed back something awaitable. */
  thenables = 0;

  slice(run: () => void): void {
    let turned = false;
    const immediate = setImmediate(() => {
      turned = true;
    });
    run();
    if (turned) this.loopTurnedIn.push(this.slices);
    clearImmediate(immediate);
    this.slices += 1;
  }

  record(result: unknown): void {
    this.calls += 1;
    if (typeof (result as { then?: unknown } | null)?.then === 'function') this.thenables += 1;
  }
}

/** Publishes in slices of 500, yielding between slices as an executor's event loop would. */
async function publishAll(
  publisher: PlanEventPublisher,
  events: readonly PlanEvent[],
  probe: (i: number) => NonBlockingProbe | undefined,
  afterSlice: (published: number) => Promise<void> = async () => undefined,
): Promise<void> {
  for (let start = 0; start < events.length; start += 500) {
    const p = probe(start);
    const run = () => {
      for (let i = start; i < Math.min(start + 500, events.length); i++) {
        const result = publisher.publish(events[i]);
        p?.record(result);
        if (!result.ok) throw new Error(`event ${i} not accepted: ${JSON.stringify(result)}`);
      }
    };
    if (p) p.slice(run);
    else run();
    await yieldToLoop();
    await afterSlice(Math.min(start + 500, events.length));
  }
}

function expectNoBlockingCall(probe: NonBlockingProbe): void {
  expect(probe.calls).toBeGreaterThan(1_000);
  expect({ thenables: probe.thenables, loopTurnedIn: probe.loopTurnedIn }).toEqual({ thenables: 0, loopTurnedIn: [] });
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
    const { publisher, prefix, journalDir } = newPublisher(redis.url, {
      maxBufferedEvents: 2_000,
      journalCommitMs: 600_000,
    });
    try {
      const events = exactlyEvents(10_000, { seed: 31 });
      const probe = new NonBlockingProbe();
      await publishAll(publisher, events, () => probe);
      expectNoBlockingCall(probe);
      expect(publisher.stats()).toMatchObject({
        buffered: 2_000,
        spilled: 8_000,
        dropped: 0,
        published: 0,
        redisReady: false,
      });
      expect(journalSegments(journalDir).length).toBeGreaterThan(0);

      await redis.start();
      await expect(publisher.flush(60_000)).resolves.toBe(true);

      const { events: queued } = await queuedEvents(redis.url, prefix);
      expect(
        notExactlyOnce(
          events.map((e) => e.eventId),
          countByEventId(queued),
        ),
      ).toEqual([]);
      expect(publisher.stats()).toMatchObject({
        published: 10_000,
        recovered: 8_000,
        buffered: 0,
        dropped: 0,
        journalBytes: 0,
      });
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
      const outage = new NonBlockingProbe();
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
      expect(
        notExactlyOnce(
          events.map((e) => e.eventId),
          countByEventId(queued),
        ),
      ).toEqual([]);
      expect(publisher.stats()).toMatchObject({ published: 50_000, dropped: 0, buffered: 0, journalBytes: 0 });
    } finally {
      await publisher.close(5_000);
    }
  });
});
