/**
 * `whenDurable`: what `plan-ledger serve` waits for before it answers 2xx. When it says `durable`,
 * every event accepted before the call must already be in Redis (jobs added) or written and
 * fsynced in the journal; it must not say so before, whatever Redis does.
 */
import Redis from 'ioredis';
import { manyPlanRuns } from '../support/event-factory';
import { freePort, RedisProcess } from './support/redis-process';
import {
  journalRecords,
  newPublisher,
  queuedEvents,
  removeTempJournalDirs,
  TestPublisher,
} from './support/publisher-harness';

jest.setTimeout(60_000);

describe('PlanEventPublisher.whenDurable', () => {
  let redis: RedisProcess;
  const opened: TestPublisher[] = [];
  const open = (...args: Parameters<typeof newPublisher>) => {
    const p = newPublisher(...args);
    opened.push(p);
    return p;
  };

  beforeAll(async () => {
    redis = await RedisProcess.create();
    await redis.start();
  });
  afterEach(async () => {
    for (const p of opened.splice(0)) await p.publisher.close(2_000);
  });
  afterAll(async () => {
    await redis?.destroy();
    removeTempJournalDirs();
  });

  it('says durable once every event accepted before the call is in Redis, not before', async () => {
    const { publisher, prefix } = open(redis.url);
    const [warm, ...events] = manyPlanRuns(3_001, { seed: 7 }).slice(0, 3_001);
    // connected first: before that, the group commit writes memory to the journal (durable there)
    publisher.publish(warm as never);
    expect(await publisher.flush(10_000)).toBe(true);
    const since = publisher.durabilityMark();
    for (const e of events.slice(0, 1_000)) expect(publisher.publish(e as never).ok).toBe(true);
    const first = publisher.whenDurable(since, 30_000);
    for (const e of events.slice(1_000)) publisher.publish(e as never);
    expect(await first).toBe('durable');
    // the first 1,000 are in Redis at that moment (later ones may be too)
    const queued = await queuedEvents(redis.url, prefix).then((q) => new Set(q.events.map((e) => e.eventId)));
    expect(events.slice(0, 1_000).filter((e) => !queued.has((e as { eventId: string }).eventId))).toEqual([]);
  });

  it('with Redis unreachable, says durable once the events are written to the journal (group commit and fsync)', async () => {
    const { publisher, journalDir } = open(`redis://127.0.0.1:${await freePort()}`, { journalCommitMs: 50 });
    const events = manyPlanRuns(500, { seed: 8 }).slice(0, 500);
    const since = publisher.durabilityMark();
    for (const e of events) expect(publisher.publish(e as never).ok).toBe(true);
    expect(journalRecords(journalDir)).toEqual([]); // in memory, not yet on disk
    expect(await publisher.whenDurable(since, 30_000)).toBe('durable');
    const onDisk = journalRecords(journalDir).flatMap((r) => r.events.map((e) => e.eventId));
    expect(onDisk.sort()).toEqual(events.map((e) => (e as { eventId: string }).eventId).sort());
  });

  it('says timeout while Redis does not answer, and durable once it does', async () => {
    const { publisher, prefix } = open(redis.url);
    const [warm, ...events] = manyPlanRuns(101, { seed: 9 }).slice(0, 101);
    publisher.publish(warm as never);
    expect(await publisher.flush(10_000)).toBe(true);
    const admin = new Redis(redis.url);
    try {
      const sleeping = admin.call('DEBUG', 'SLEEP', '1.5'); // the server answers nobody meanwhile
      await new Promise((resolve) => setTimeout(resolve, 50));
      const since = publisher.durabilityMark();
      for (const e of events) publisher.publish(e as never);
      expect(await publisher.whenDurable(since, 300)).toBe('timeout');
      expect(await publisher.whenDurable(since, 30_000)).toBe('durable');
      await sleeping;
      expect((await queuedEvents(redis.url, prefix)).events).toHaveLength(101);
    } finally {
      admin.disconnect();
    }
  });

  it('resolves at once when nothing is pending', async () => {
    const { publisher } = open(redis.url);
    expect(await publisher.whenDurable(publisher.durabilityMark(), 0)).toBe('durable');
  });
});
