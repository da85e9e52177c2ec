/**
 * Listings and stats read a summary stored beside each dead letter when it is written, not the
 * entry itself: they must give exactly what decoding the whole entry gives, also for entries
 * written without one (an older version, or a writer that died between its two steps). And a
 * replay that fails half-way, with two batches in flight, loses nothing and sends nothing twice.
 * Real Redis, a prefix per test.
 */
import { Queue } from 'bullmq';
import type { DeadLetter } from '../../src/dead-letters/dead-letter';
import { DeadLetterService, summarize } from '../../src/dead-letters/dead-letter.service';
import { DEAD_LETTER_QUEUE, EventBatchJobData } from '../../src/queue/queue-names';
import { createLogger } from '../../src/shared/logger';
import { QueueFixture, letter, validEvent } from './dead-letter.fixtures';

const logger = createLogger({ level: 'silent' });
const SUMMARY_FIELDS = ['pl:summary', 'pl:kind', 'pl:type', 'pl:at'];

/** Varied and hostile records: kinds, missing type, a type with a newline and markup, errors with and without code. */
function mixed(n: number): DeadLetter[] {
  const kinds = ['invalid', 'retries-exhausted', 'unprocessable', 'conflict'] as const;
  return Array.from({ length: n }, (_, i) => {
    const type =
      i % 5 === 0 ? null : i % 5 === 1 ? 'step.\n<b>odd</b>' : i % 2 === 0 ? 'step.completed' : 'plan.created';
    const dl = letter({
      kind: kinds[i % 4],
      planId: `plan_${i % 3}`,
      type: type ?? undefined,
      lastFailedAt: new Date(Date.UTC(2025, 0, 1) + ((i * 7919) % n) * 60_000).toISOString(),
    });
    return {
      ...dl,
      type,
      event: validEvent(dl.planId ?? undefined, { type }),
      error: i % 3 === 0 ? { message: `boom ${i}` } : dl.error,
    };
  });
}

async function hasSummary(q: QueueFixture, id: string): Promise<boolean> {
  return (await q.redis.hexists(q.deadLetters.toKey(id), 'pl:summary')) === 1;
}

describe('dead letters: stored summaries', () => {
  let q: QueueFixture;
  let dlq: DeadLetterService;
  beforeEach(() => {
    q = new QueueFixture();
    dlq = new DeadLetterService({ deadLetters: q.deadLetters, events: q.events, logger });
  });
  afterEach(async () => q.close());

  it('list and stats give what decoding every whole entry gives, with summaries stored, with none, and with half', async () => {
    const letters = await q.write(...mixed(40));
    for (const dl of letters) expect(await hasSummary(q, dl.id)).toBe(true);

    // what a reader of the whole entries concludes
    const full = (await dlq.list({})).deadLetters;
    expect(full).toHaveLength(40);
    const expectedSummaries = full.map(summarize);
    const byKind: Record<string, number> = {};
    const byType: Record<string, number> = {};
    for (const dl of full) {
      byKind[dl.kind] = (byKind[dl.kind] ?? 0) + 1;
      byType[dl.type ?? '(none)'] = (byType[dl.type ?? '(none)'] ?? 0) + 1;
    }
    const oldest = [...full].sort((a, b) => a.lastFailedAt.localeCompare(b.lastFailedAt))[0];

    const check = async () => {
      expect((await dlq.listSummaries({})).deadLetters).toEqual(expectedSummaries);
      expect((await dlq.listSummaries({ planId: 'plan_1' })).deadLetters).toEqual(
        expectedSummaries.filter((s) => s.planId === 'plan_1'),
      );
      const stats = await dlq.stats();
      expect(stats).toMatchObject({
        total: 40,
        byKind,
        byType,
        oldest: { id: oldest.id, lastFailedAt: oldest.lastFailedAt },
      });
    };
    await check();
    // an older writer's entries: half of them without the summary fields
    for (const dl of letters.slice(0, 20)) await q.redis.hdel(q.deadLetters.toKey(dl.id), ...SUMMARY_FIELDS);
    expect(await hasSummary(q, letters[0].id)).toBe(false);
    await check();
    for (const dl of letters.slice(20)) await q.redis.hdel(q.deadLetters.toKey(dl.id), ...SUMMARY_FIELDS);
    await check();
  });

  it('a dead letter written again with the same id keeps the summary of the record that is stored', async () => {
    const [first] = await q.write(letter({ attempts: 3, lastFailedAt: '2025-01-01T00:01:00.000Z' }));
    // a redelivered job dead-letters the same event again: BullMQ keeps the first record
    await q.write({ ...first, attempts: 9, lastFailedAt: '2025-06-01T00:00:00.000Z' });
    const [summary] = (await dlq.listSummaries({})).deadLetters;
    expect(summary).toMatchObject({ id: first.id, attempts: 3, lastFailedAt: '2025-01-01T00:01:00.000Z' });
    expect(summary).toEqual(summarize(await dlq.show(first.id)));
    expect((await dlq.stats()).oldest).toMatchObject({ id: first.id, lastFailedAt: '2025-01-01T00:01:00.000Z' });
  });

  it('a replay whose third batch cannot be sent says where it stopped; every event is either queued once or still a dead letter', async () => {
    const letters = await q.write(...Array.from({ length: 100 }, () => letter({ kind: 'invalid' })));
    let calls = 0;
    // the real queue, whose third job add fails as a Redis outage would make it (the replay adds
    // its jobs through BullMQ's Job.createBulk, which hands them to the queue's backend)
    const backend = new Proxy(q.events.backend, {
      get(target, prop) {
        const value = Reflect.get(target, prop, target);
        if (prop === 'addJobs') {
          return async (...args: unknown[]) => {
            calls += 1;
            if (calls === 3) throw new Error('Connection is closed.');
            return (value as (...a: unknown[]) => unknown).apply(target, args);
          };
        }
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const events = new Proxy(q.events, {
      get(target, prop, receiver) {
        if (prop === 'backend') return backend;
        const value = Reflect.get(target, prop, receiver);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const failing = new DeadLetterService({
      deadLetters: new Queue(DEAD_LETTER_QUEUE, { connection: q.redis, prefix: q.prefix }),
      events,
      logger,
    });

    await expect(failing.replay({ filter: {} }, { batch: 10 })).rejects.toThrow(
      /^replay stopped after \d+ of \d+\+ events \(those are queued, the rest are still dead letters; rerun to continue\): Connection is closed\.$/,
    );

    const jobs = await q.events.getJobs(['waiting'], 0, -1, true);
    const queued = jobs.flatMap((j) =>
      (j.data as EventBatchJobData).events.map((e) => (e as { eventId: string }).eventId),
    );
    const left = (await dlq.list({})).deadLetters.map((dl) => dl.eventId);
    expect(new Set(queued).size).toBe(queued.length);
    expect(queued.filter((id) => left.includes(id))).toEqual([]);
    expect(new Set([...queued, ...left])).toEqual(new Set(letters.map((l) => l.eventId)));
    expect(left.length).toBeGreaterThanOrEqual(10);

    // a rerun while the failed batch's claims hold sends the rest and leaves those (a replay may still own them)
    const early = await dlq.replay({ filter: {} }, { batch: 10 });
    expect(early.vanished).toBeGreaterThanOrEqual(10);
    expect(early.replayed).toBe(left.length - early.vanished);
    expect((await dlq.listSummaries({})).total).toBe(early.vanished);
    // the claims expire (here: moved to the past); a rerun claims and sends them
    for (const dl of (await dlq.list({})).deadLetters) {
      const key = q.deadLetters.toKey(dl.id);
      const held = await q.redis.hget(key, 'pl:claim');
      if (held) await q.redis.hset(key, 'pl:claim', held.replace(/^\d+/, '1')); // expired long ago
    }
    const rerun = await dlq.replay({ filter: {} }, { batch: 10 });
    expect(rerun.replayed).toBe(early.vanished);
    expect((await dlq.listSummaries({})).total).toBe(0);
  });
});
