/**
 * QUEUE_SHARDS on one Redis: the publisher routes by plan id, workers consume every shard, the
 * shards they are pinned to, and the shards an older QUEUE_SHARDS left. Real Redis, real SQLite.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Queue } from 'bullmq';
import type IORedis from 'ioredis';
import { loadConfig } from '../../src/config/config';
import { PlanEventPublisher } from '../../src/publisher';
import { EVENTS_QUEUE, EventBatchJobData } from '../../src/queue/queue-names';
import { layoutsKey, queueShards, shardOfPlan } from '../../src/queue/queue-shards';
import { startWorker, WorkerHandle } from '../../src/worker';
import { buildDeadLetter, DeadLetterWriter } from '../../src/dead-letters/dead-letter-writer';
import { openDeadLetterService } from '../../src/dead-letters/dead-letter-connections';
import { parseFilter } from '../../src/dead-letters/dead-letter-filter';
import { journalRecords } from '../publisher/support/publisher-harness';
import { createMigratedDb } from '../support/databases';
import { manyPlanRuns } from '../support/event-factory';
import { countRows, openRedis, REDIS_URL, silentLogger, uniquePrefix, waitFor } from '../worker/helpers/queue-harness';

jest.setTimeout(120_000);

type Db = Awaited<ReturnType<typeof createMigratedDb>>;

describe('queue shards on one Redis', () => {
  let redis: IORedis;
  let db: Db;
  const cleanups: Array<() => Promise<unknown>> = [];
  const prefixes: string[] = [];

  beforeAll(async () => {
    redis = openRedis();
  });
  beforeEach(async () => {
    db = await createMigratedDb('sqlite');
  });
  afterEach(async () => {
    for (const fn of cleanups.splice(0).reverse()) await fn().catch(() => undefined);
    await db.close();
    for (const prefix of prefixes.splice(0)) {
      const keys = await redis.keys(`${prefix}*`);
      if (keys.length) await redis.del(...keys);
    }
  });
  afterAll(async () => redis.quit());

  const prefixFor = (tag: string) => {
    const prefix = uniquePrefix(tag);
    prefixes.push(prefix);
    return prefix;
  };
  const newPublisher = (prefix: string, queueShards?: number) => {
    const journalDir = fs.mkdtempSync(path.join(os.tmpdir(), 'pl-shards-'));
    const publisher = new PlanEventPublisher({
      redisUrl: REDIS_URL,
      queuePrefix: prefix,
      queueShards,
      journalDir,
      logger: silentLogger(),
    });
    cleanups.push(async () => {
      await publisher.close(5_000);
      fs.rmSync(journalDir, { recursive: true, force: true });
    });
    return publisher;
  };
  const newWorker = async (env: Record<string, string>, layoutPollMs?: number) => {
    const worker: WorkerHandle = await startWorker({
      config: loadConfig({ REDIS_URL, DATABASE_URL: db.db.url, ...env }),
      dataSource: db.ds,
      logger: silentLogger(),
      settings: { healthPort: null },
      layoutPollMs,
    });
    cleanups.push(() => worker.close(10_000));
    return worker;
  };
  const jobsOn = async (prefix: string) => {
    const queue = new Queue<EventBatchJobData>(EVENTS_QUEUE, { connection: redis, prefix });
    try {
      return await queue.getJobs(['wait', 'delayed', 'active'], 0, -1);
    } finally {
      await queue.close();
    }
  };
  const keyShapes = async (prefix: string) =>
    [
      ...new Set(
        (await redis.keys(`${prefix}*`)).map((k) => k.slice(prefix.length).replace(/b-[0-9a-f-]{36}/, '<job>')),
      ),
    ].sort();

  it('QUEUE_SHARDS=1 writes exactly the keys of a publisher without it: all under <prefix>:plan-events:', async () => {
    const events = manyPlanRuns(1_200, { seed: 3 });
    const unset = prefixFor('sh-unset');
    const one = prefixFor('sh-one');
    for (const [prefix, shards] of [
      [unset, undefined],
      [one, 1],
    ] as const) {
      const publisher = newPublisher(prefix, shards);
      for (const e of events) expect(publisher.publish(e).ok).toBe(true);
      expect(await publisher.flush(10_000)).toBe(true);
    }
    const shapes = await keyShapes(unset);
    expect(shapes.length).toBeGreaterThan(2);
    expect(await keyShapes(one)).toEqual(shapes);
    for (const shape of shapes) expect(shape).toMatch(/^:plan-events:/);
    expect(await redis.exists(layoutsKey(one))).toBe(0);
    // and a default worker reads that layout: everything stored
    const worker = await newWorker({ QUEUE_PREFIX: one });
    expect(await worker.idle(60_000)).toBe(true);
    expect(await countRows(db.ds, 'plan_events')).toBe(events.length);
  });

  it('QUEUE_SHARDS=3: each plan on the shard of its id, every shard used, a worker stores every event once', async () => {
    const prefix = prefixFor('sh-three');
    const events = manyPlanRuns(3_000, { seed: 5 });
    const publisher = newPublisher(prefix, 3);
    for (const e of events) expect(publisher.publish(e).ok).toBe(true);
    expect(await publisher.flush(10_000)).toBe(true);
    const shards = queueShards(prefix, 3);
    let queued = 0;
    for (const shard of shards) {
      const jobs = await jobsOn(shard.prefix);
      expect(jobs.length).toBeGreaterThan(0);
      for (const job of jobs)
        for (const e of job.data.events as Array<{ planId: string }>) {
          expect(shardOfPlan(e.planId, 3)).toBe(shard.index);
          queued++;
        }
    }
    expect(queued).toBe(events.length);
    const worker = await newWorker({ QUEUE_PREFIX: prefix, QUEUE_SHARDS: '3' });
    expect(await publisher.stored(60_000)).toBe(true);
    expect(await countRows(db.ds, 'plan_events')).toBe(events.length);
    const metrics = await worker.metrics.text();
    for (const s of ['0', '1', '2']) expect(metrics).toContain(`plan_ledger_queue_jobs{shard="${s}",state="wait"} 0`);
  });

  it('a journal written with QUEUE_SHARDS=3 holds records of one shard each: drained as they are, or re-routed by another layout', async () => {
    const events = manyPlanRuns(3_000, { seed: 13 });
    const journalDir = fs.mkdtempSync(path.join(os.tmpdir(), 'pl-shards-journal-'));
    cleanups.push(async () => fs.rmSync(journalDir, { recursive: true, force: true }));
    // Redis unreachable: a small memory buffer sends most events to the journal one by one, close() the rest
    const down = new PlanEventPublisher({
      redisUrl: 'redis://127.0.0.1:1',
      queuePrefix: prefixFor('sh-journal-down'),
      queueShards: 3,
      journalDir,
      maxBufferedEvents: 100,
      journalCommitMs: 60_000, // no group commit during the test: memory goes to the journal at close
      logger: silentLogger(),
    });
    // in ticks of 100 events, as a busy executor publishes: the journal is written between them
    for (let i = 0; i < events.length; i++) {
      expect(down.publish(events[i]).ok).toBe(true);
      if (i % 100 === 99) await new Promise((r) => setImmediate(r));
    }
    expect((await down.close(300)).flushed).toBe(false);
    const records = journalRecords(journalDir);
    expect(records.length).toBeGreaterThan(3);
    const short = [0, 0, 0];
    for (const { key, count, events: recordEvents } of records) {
      const mark = /^b-[0-9a-f-]{36}#(\d)\/3$/.exec(key);
      expect(mark).not.toBeNull();
      expect(recordEvents).toHaveLength(count);
      for (const e of recordEvents) expect(shardOfPlan(e.planId, 3)).toBe(Number(mark![1]));
      if (recordEvents.length < 500) short[Number(mark![1])]++;
    }
    // records fill up to a whole job (500 events) while the journal is behind: per shard, only the
    // one written when it began, its last one and memory's batch are short
    for (const n of short) expect(n).toBeLessThanOrEqual(3);
    const copy = fs.mkdtempSync(path.join(os.tmpdir(), 'pl-shards-journal-'));
    cleanups.push(async () => fs.rmSync(copy, { recursive: true, force: true }));
    for (const f of fs.readdirSync(journalDir))
      if (f.endsWith('.jsonl')) fs.copyFileSync(path.join(journalDir, f), path.join(copy, f));
    for (const [dir, shards] of [
      [journalDir, 3],
      [copy, 2],
    ] as const) {
      const prefix = prefixFor(`sh-journal-${shards}`);
      const up = new PlanEventPublisher({
        redisUrl: REDIS_URL,
        queuePrefix: prefix,
        queueShards: shards,
        journalDir: dir,
        logger: silentLogger(),
      });
      cleanups.push(() => up.close(5_000));
      expect(await up.flush(30_000)).toBe(true);
      const seen = new Set<string>();
      for (const shard of queueShards(prefix, shards)) {
        const jobs = await jobsOn(shard.prefix);
        for (const job of jobs) {
          // the same layout sends each record as one job under its own id; another one splits them by shard
          if (shards === 3) expect(job.id).toMatch(/^b-[0-9a-f-]{36}$/);
          for (const e of job.data.events as Array<{ planId: string; eventId: string }>) {
            expect(shardOfPlan(e.planId, shards)).toBe(shard.index);
            expect(seen.has(e.eventId)).toBe(false);
            seen.add(e.eventId);
          }
        }
      }
      expect(seen.size).toBe(events.length);
    }
  });

  it('WORKER_SHARDS pins a worker to its shards: the others wait for theirs', async () => {
    const prefix = prefixFor('sh-pin');
    const events = manyPlanRuns(1_500, { seed: 7 });
    const publisher = newPublisher(prefix, 3);
    for (const e of events) publisher.publish(e);
    expect(await publisher.flush(10_000)).toBe(true);
    const onShard = (s: number) => events.filter((e) => shardOfPlan(e.planId, 3) === s).length;
    const first = await newWorker({ QUEUE_PREFIX: prefix, QUEUE_SHARDS: '3', WORKER_SHARDS: '1' });
    await waitFor('shard 1 stored', async () => (await countRows(db.ds, 'plan_events')) === onShard(1), 60_000);
    expect(await first.idle(1_000)).toBe(true);
    const [s0, s2] = [0, 2].map((s) => queueShards(prefix, 3)[s].prefix);
    expect((await jobsOn(s0)).length).toBeGreaterThan(0);
    expect((await jobsOn(s2)).length).toBeGreaterThan(0);
    await newWorker({ QUEUE_PREFIX: prefix, QUEUE_SHARDS: '3', WORKER_SHARDS: '0,2' });
    expect(await publisher.stored(60_000)).toBe(true);
    expect(await countRows(db.ds, 'plan_events')).toBe(events.length);
  });

  it('a running worker finds the layout of a publisher started later with another QUEUE_SHARDS and drains it', async () => {
    const prefix = prefixFor('sh-later');
    const worker = await newWorker({ QUEUE_PREFIX: prefix, QUEUE_SHARDS: '2' }, 100);
    const events = manyPlanRuns(3_000, { seed: 17 });
    const publisher = newPublisher(prefix, 5);
    for (const e of events) publisher.publish(e);
    expect(await publisher.stored(60_000)).toBe(true);
    expect(await countRows(db.ds, 'plan_events')).toBe(events.length);
    const metrics = await worker.metrics.text();
    for (const label of ['0', '1', '1/5', '2/5', '3/5', '4/5'])
      expect(metrics).toContain(`plan_ledger_queue_jobs{shard="${label}",state="wait"} 0`);
  });

  it('dead letters of every shard are in one place: listed, filtered by shard, erased by session, replayed to the shard of their plan', async () => {
    const prefix = prefixFor('sh-dlq');
    const events = manyPlanRuns(600, { seed: 13 });
    const writer = new DeadLetterWriter(redis, prefix);
    cleanups.push(() => writer.close());
    const at = new Date();
    await writer.write(
      events.map((event, index) =>
        buildDeadLetter(
          'retries-exhausted',
          event,
          { message: 'database down' },
          {
            queue: EVENTS_QUEUE,
            prefix: queueShards(prefix, 3)[shardOfPlan(event.planId, 3)].prefix,
            jobId: 'j',
            index,
            attempts: 3,
            firstFailedAt: at,
            lastFailedAt: at,
            workerVersion: 't',
            replayCount: 0,
          },
        ),
      ),
    );
    const config = loadConfig({ REDIS_URL, QUEUE_PREFIX: prefix, QUEUE_SHARDS: '3', DATABASE_URL: db.db.url });
    const opened = await openDeadLetterService(config, silentLogger(), { events: true });
    cleanups.push(() => opened.close());
    const { service } = opened;
    expect((await service.listSummaries({})).total).toBe(events.length);
    expect((await service.stats()).total).toBe(events.length);
    for (const shard of [0, 1, 2]) {
      const listed = await service.listSummaries(parseFilter({ shard: String(shard) }, 3));
      expect(listed.total).toBe(events.filter((e) => shardOfPlan(e.planId, 3) === shard).length);
      for (const dl of listed.deadLetters) expect(shardOfPlan(dl.planId!, 3)).toBe(shard);
    }
    expect(() => parseFilter({ shard: '3' }, 3)).toThrow('--shard: "3" is not a shard of QUEUE_SHARDS=3; give 0-2');
    // erasure of a session finds its dead letters whatever shard they came from
    const erased = events.find((e) => shardOfPlan(e.planId, 3) === 2)!;
    const ofSession = events.filter((e) => e.sessionId === erased.sessionId);
    const purged = await service.purgeSession(erased.sessionId, new Set([erased.planId]));
    expect(purged.deadLetters.map((d) => d.eventId).sort()).toEqual(ofSession.map((e) => e.eventId).sort());
    const kept = events.filter((e) => e.sessionId !== erased.sessionId);
    const summary = await service.replay({ filter: {} });
    expect(summary.replayed).toBe(kept.length);
    let queued = 0;
    for (const shard of queueShards(prefix, 3))
      for (const job of await jobsOn(shard.prefix))
        for (const e of job.data.events as Array<{ planId: string }>) {
          expect(shardOfPlan(e.planId, 3)).toBe(shard.index);
          queued++;
        }
    expect(queued).toBe(kept.length);
    const worker = await newWorker({ QUEUE_PREFIX: prefix, QUEUE_SHARDS: '3' });
    expect(await worker.idle(60_000)).toBe(true);
    expect(await countRows(db.ds, 'plan_events')).toBe(kept.length);
    expect((await service.stats()).total).toBe(0);
  });

  it('changing QUEUE_SHARDS from 6 to 2 under load loses nothing: the new workers drain the old layout too', async () => {
    const prefix = prefixFor('sh-change');
    const events = manyPlanRuns(12_000, { seed: 11 });
    const half = events.length / 2;
    const old = newPublisher(prefix, 6);
    const oldWorker = await newWorker({ QUEUE_PREFIX: prefix, QUEUE_SHARDS: '6' });
    for (let i = 0; i < half; i++) {
      old.publish(events[i]);
      if (i % 500 === 0) await new Promise((r) => setImmediate(r));
    }
    // the old worker stops mid-stream, with jobs left on the six shards
    await waitFor('some stored', async () => (await countRows(db.ds, 'plan_events')) > 500, 60_000);
    await oldWorker.close(10_000);
    const fresh = newPublisher(prefix, 2);
    for (let i = half; i < events.length; i++) {
      fresh.publish(events[i]);
      if (i % 500 === 0) await new Promise((r) => setImmediate(r));
    }
    expect(await old.flush(10_000)).toBe(true);
    expect(await fresh.flush(10_000)).toBe(true);
    const left = await Promise.all(
      queueShards(prefix, 6)
        .slice(1)
        .map(async (s) => (await jobsOn(s.prefix)).length),
    );
    expect(left.reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
    await newWorker({ QUEUE_PREFIX: prefix, QUEUE_SHARDS: '2' });
    await waitFor('every event stored', async () => (await countRows(db.ds, 'plan_events')) >= events.length, 90_000);
    expect(await old.stored(30_000)).toBe(true);
    expect(await fresh.stored(30_000)).toBe(true);
    expect(await countRows(db.ds, 'plan_events')).toBe(events.length);
    for (const s of [...queueShards(prefix, 6), ...queueShards(prefix, 2)]) expect(await jobsOn(s.prefix)).toEqual([]);
  });
});
