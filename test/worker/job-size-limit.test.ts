/**
 * One job size for everyone (ContractLimits.maxJobBytes, default 16 MiB): the publisher splits
 * batches below it; the worker dead-letters a larger job whole, unparsed, and goes on.
 */
import type IORedis from 'ioredis';
import { Queue } from 'bullmq';
import { DEFAULT_LIMITS } from '../../src/contracts';
import { loadConfig } from '../../src/config/config';
import { PublisherConfigError } from '../../src/publisher';
import { EVENTS_QUEUE } from '../../src/queue/queue-names';
import { startWorker, WorkerHandle } from '../../src/worker';
import { createMigratedDb } from '../support/databases';
import { planRun } from '../support/event-factory';
import { newPublisher, removeTempJournalDirs } from '../publisher/support/publisher-harness';
import {
  countRows,
  dropPrefix,
  openRedis,
  publish,
  readDeadLetters,
  REDIS_URL,
  silentLogger,
  uniquePrefix,
} from './helpers/queue-harness';

const MIB = 1024 * 1024;

describe('job size limit', () => {
  let redis: IORedis;
  afterAll(async () => {
    await redis?.quit();
    removeTempJournalDirs();
  });
  beforeAll(() => {
    redis = openRedis();
  });

  it('is documented in one place: 16 MiB per job, 1 MiB per event', () => {
    expect(DEFAULT_LIMITS).toMatchObject({ maxJobBytes: 16 * MIB, maxEventBytes: MIB });
  });

  it('the publisher splits batches so that no job passes maxJobBytes, and delivers every event', async () => {
    const maxJobBytes = 3 * MIB;
    const { publisher, prefix } = newPublisher(REDIS_URL, { limits: { maxJobBytes } });
    try {
      const big = 'é'.repeat(150_000); // 300 KB of UTF-8 in 150k characters: the byte count, not the length, must decide
      const run = planRun({ seed: 70, steps: 30 });
      let published = 0;
      for (const e of run) {
        const input = e.type === 'step.completed' ? { ...e, payload: { ...e.payload, outputContent: big } } : e;
        expect(publisher.publish(input as never)).toMatchObject({ ok: true });
        published++;
      }
      expect(await publisher.flush(30_000)).toBe(true);
      const queue = new Queue(EVENTS_QUEUE, { connection: redis, prefix });
      const jobs = await queue.getJobs(['waiting'], 0, -1);
      let events = 0;
      for (const job of jobs) {
        expect(await redis.hstrlen(`${prefix}:${EVENTS_QUEUE}:${job.id}`, 'data')).toBeLessThanOrEqual(maxJobBytes);
        events += (job.data as { events: unknown[] }).events.length;
      }
      expect(jobs.length).toBeGreaterThan(2);
      expect(events).toBe(published);
      await queue.obliterate({ force: true });
      await queue.close();
    } finally {
      await publisher.close(5_000);
      await dropPrefix(redis, prefix);
    }
  });

  it('the publisher refuses a job limit that cannot hold its largest event and journal record', () => {
    expect(() => newPublisher(REDIS_URL, { limits: { maxJobBytes: MIB } })).toThrow(PublisherConfigError);
    expect(() => newPublisher(REDIS_URL, { limits: { maxJobBytes: MIB } })).toThrow(
      /limits.maxJobBytes \(1048576\) must be at least/,
    );
  });

  it('the worker dead-letters a job over 16 MiB whole, without parsing it, and stores the jobs beside it', async () => {
    const db = await createMigratedDb('sqlite');
    const prefix = uniquePrefix('size');
    let worker: WorkerHandle | undefined;
    const queue = new Queue(EVENTS_QUEUE, { connection: redis, prefix });
    try {
      // written raw: no publisher makes such a job
      const raw = `{"v":1,"events":[${JSON.stringify({ filler: 'x'.repeat(17 * MIB) })}]}`;
      const job = await queue.add('events', { v: 1, events: [] }, { jobId: 'huge', delay: 3_600_000 });
      await redis.hset(`${prefix}:${EVENTS_QUEUE}:huge`, 'data', raw);
      await job.promote();
      const run = planRun({ seed: 71, steps: 2 });
      await publish(redis, prefix, [{ v: 1, events: run }], 'beside');
      worker = await startWorker({
        config: loadConfig({ REDIS_URL, QUEUE_PREFIX: prefix, DATABASE_URL: db.db.url }),
        dataSource: db.ds,
        logger: silentLogger(),
        settings: { healthPort: null },
      });
      expect(await worker.idle(60_000)).toBe(true);
      expect(await countRows(db.ds, 'plan_events')).toBe(run.length);
      const letters = await readDeadLetters(redis, prefix);
      expect(letters).toHaveLength(1);
      expect(letters[0]).toMatchObject({ kind: 'invalid', source: { jobId: 'huge' } });
      expect(letters[0].event).toBe(raw); // nothing dropped: the raw text is kept
      expect(letters[0].error.message).toBe(
        `job data is ${Buffer.byteLength(raw)} bytes, over the ${16 * MIB}-byte job limit (maxJobBytes); not parsed, its raw text is kept as the event`,
      );
    } finally {
      await worker?.close();
      await queue.close();
      await dropPrefix(redis, prefix);
      await db.close();
    }
  });
});
