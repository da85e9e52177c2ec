/**
 * Dead letters under concurrent operators and big payloads: two replays of the same selection at
 * once send each event exactly once (claims), and listings do not read the events they do not
 * show. Real Redis: the shared server, and one of our own where Redis's byte counters are read.
 */
import IORedis from 'ioredis';
import { Queue } from 'bullmq';
import { DeadLetterService } from '../../src/dead-letters';
import type { StoredEventLookup } from '../../src/dead-letters/dead-letter-replayer';
import { parsePlanEvent, PlanEvent } from '../../src/contracts';
import { PlanEventStore } from '../../src/store/plan-event-store';
import { createMigratedDb } from '../support/databases';
import { DEAD_LETTER_QUEUE, EVENTS_QUEUE, EventBatchJobData } from '../../src/queue/queue-names';
import { createLogger } from '../../src/shared/logger';
import { RedisProcess } from '../publisher/support/redis-process';
import { QueueFixture, letter, validEvent } from './dead-letter.fixtures';

const logger = createLogger({ level: 'silent' });

function service(q: QueueFixture, redis: IORedis): { service: DeadLetterService; close(): Promise<void> } {
  const deadLetters = new Queue(DEAD_LETTER_QUEUE, { connection: redis, prefix: q.prefix });
  const events = new Queue(EVENTS_QUEUE, { connection: redis, prefix: q.prefix });
  return {
    service: new DeadLetterService({ deadLetters, events, logger }),
    close: async () => void (await Promise.all([deadLetters.close(), events.close()])),
  };
}

async function queuedEventIds(q: QueueFixture): Promise<string[]> {
  const jobs = await q.events.getJobs(['waiting'], 0, -1, true);
  return jobs.flatMap((j) => (j.data as EventBatchJobData).events.map((e) => (e as { eventId: string }).eventId));
}

describe('dead letters: parallel replays and payload-free listings', () => {
  it('two replays of the same 200 dead letters at once queue each event exactly once and leave none behind', async () => {
    const q = new QueueFixture();
    const clients = [
      new IORedis(q.env().REDIS_URL, { maxRetriesPerRequest: null }),
      new IORedis(q.env().REDIS_URL, { maxRetriesPerRequest: null }),
    ];
    const services = clients.map((c) => service(q, c));
    try {
      const letters = await q.write(...Array.from({ length: 200 }, () => letter({ kind: 'invalid' })));
      // small batches interleave the two runs: each reads a batch while the other is sending one
      const [a, b] = await Promise.all(services.map((s) => s.service.replay({ filter: {} }, { batch: 10 })));

      const queued = await queuedEventIds(q);
      expect(queued).toHaveLength(200);
      expect(new Set(queued).size).toBe(200);
      expect(new Set(queued)).toEqual(new Set(letters.map((l) => l.eventId)));
      expect(a.replayed + b.replayed).toBe(200);
      // what one claimed, the other counted as gone
      expect(a.vanished + b.vanished).toBe(a.selected + b.selected - 200);
      expect(await q.deadLetterIds()).toEqual([]);
      // nothing of the entries is left behind either (their claims were fields of their hashes)
      expect((await clients[0].keys(`${q.prefix}:${DEAD_LETTER_QUEUE}:dl-*`)).sort()).toEqual([]);
    } finally {
      await Promise.all(services.map((s) => s.close()));
      await Promise.all(clients.map((c) => c.quit()));
      await q.close();
    }
  });

  it('dlq list (table) and stats read no event payload: Redis sends a few KB for a 4 MB event; show and list --json still have it whole', async () => {
    const server = await RedisProcess.create();
    await server.start();
    const q = new QueueFixture(undefined, server.url);
    const redis = new IORedis(server.url, { maxRetriesPerRequest: null });
    const { service: dlq, close } = service(q, redis);
    try {
      const big = validEvent('plan_big', { payload: { stepId: 's1', outputContent: 'x'.repeat(4 * 1024 * 1024) } });
      const [huge] = await q.write(letter({ event: big, planId: 'plan_big' }), letter(), letter());
      const sent = async () => Number(/total_net_output_bytes:(\d+)/.exec(await redis.info('stats'))![1]);

      const before = await sent();
      const list = await dlq.listSummaries({ limit: 100 });
      const stats = await dlq.stats();
      const filtered = await dlq.listSummaries({ planId: 'plan_big' });
      const bytes = (await sent()) - before;
      expect(list.total).toBe(3);
      expect(stats).toMatchObject({ total: 3, byKind: { 'retries-exhausted': 3 } });
      expect(filtered.deadLetters.map((d) => d.id)).toEqual([huge.id]);
      expect(filtered.deadLetters[0]).not.toHaveProperty('event');
      expect(bytes).toBeLessThan(64 * 1024);

      expect((await dlq.show(huge.id)).event).toEqual(big);
      expect((await dlq.list({ planId: 'plan_big' })).deadLetters[0].event).toEqual(big);
    } finally {
      await close();
      await redis.quit();
      await q.close();
      await server.destroy();
    }
  });

  it('counts the stored events right when the batches in flight answer in reverse order, in a dry run and a replay', async () => {
    const q = new QueueFixture();
    const database = await createMigratedDb('sqlite');
    try {
      const letters = await q.write(
        ...Array.from({ length: 12 }, (_, i) =>
          letter({ planId: `plan_${i}`, event: validEvent(`plan_${i}`, { seq: 1 }) }),
        ),
      );
      const stored = letters.filter((_, i) => i % 3 !== 0); // 8 of 12, in every batch
      const store = new PlanEventStore(database.ds);
      await store.persist(stored.map((dl) => (parsePlanEvent(dl.event) as { event: PlanEvent }).event));
      // the real store, whose first lookup of a run answers last: two batches are in flight at once
      let calls = 0;
      const lookup: StoredEventLookup = {
        async storedEventIds(ids) {
          calls += 1;
          const answer = await store.storedEventIds(ids);
          if (calls % 2 === 1) await new Promise((resolve) => setTimeout(resolve, 200));
          return answer;
        },
      };
      const dlq = new DeadLetterService({ deadLetters: q.deadLetters, events: q.events, storedEvents: lookup, logger });

      const dry = await dlq.replay({ filter: {} }, { dryRun: true, batch: 3 });
      expect({ selected: dry.selected, alreadyStored: dry.alreadyStored }).toEqual({ selected: 12, alreadyStored: 8 });
      const run = await dlq.replay({ filter: {} }, { batch: 3 });
      expect({ replayed: run.replayed, alreadyStored: run.alreadyStored, jobs: run.jobIds.length }).toEqual({
        replayed: 12,
        alreadyStored: 8,
        jobs: 4,
      });
      expect((await queuedEventIds(q)).sort()).toEqual(letters.map((dl) => dl.eventId).sort());
    } finally {
      await q.close();
      await database.close();
    }
  });
});
