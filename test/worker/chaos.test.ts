/**
 * The chaos tests, with real processes: `plan-ledger worker` children, a real Redis,
 * real PostgreSQL. Each asserts what an operator would check afterwards: the row count of
 * plan_events equals the events published (the event id is the primary key, so a duplicate
 * cannot hide), the plans equal those of one sequential write, and the dead-letter queue is empty.
 */
import type IORedis from 'ioredis';
import type { DataSource } from 'typeorm';
import { parseDatabaseUrl } from '../../src/config/database-url';
import { openDataSource } from '../../src/store/data-source';
import { runMigrations } from '../../src/store/migrator';
import { PlanEventStore } from '../../src/store/plan-event-store';
import { createMigratedDb } from '../support/databases';
import { exactlyEvents, shuffled, toJobData } from '../support/event-factory';
import {
  countRows,
  dropPrefix,
  openRedis,
  publish,
  queueCounts,
  readDeadLetters,
  REDIS_URL,
  uniquePrefix,
  waitFor,
} from './helpers/queue-harness';
import { startPrivatePostgres, PrivatePostgres } from './helpers/private-postgres';
import { spawnWorker, stopProcess, WorkerProcess } from './helpers/worker-process';

jest.setTimeout(180_000);

const TOTAL = 20_000;
const PER_JOB = 50;
const events = exactlyEvents(TOTAL, { seed: 77 });
const jobs = toJobData(events, PER_JOB);

const PLAN_COLUMNS =
  'id, status, total_steps, completed_steps, failed_steps, skipped_steps, total_input_tokens, total_output_tokens, approval_status';
async function plans(ds: DataSource): Promise<unknown[]> {
  return ds.query(`SELECT ${PLAN_COLUMNS} FROM execution_plans ORDER BY id`);
}

describe('chaos: real worker processes on PostgreSQL', () => {
  let redis: IORedis;
  let reference: Awaited<ReturnType<typeof createMigratedDb>>;
  let expectedPlans: unknown[];
  const procs: WorkerProcess[] = [];
  const prefixes: string[] = [];

  const worker = (env: Record<string, string>) => {
    const p = spawnWorker({ REDIS_URL, WORKER_LOCK_MS: '2000', LOG_LEVEL: 'info', ...env });
    procs.push(p);
    return p;
  };
  const prefix = () => {
    const p = uniquePrefix('chaos');
    prefixes.push(p);
    return p;
  };

  beforeAll(async () => {
    redis = openRedis();
    reference = await createMigratedDb('postgres');
    await new PlanEventStore(reference.ds).persist(events);
    expectedPlans = await plans(reference.ds);
  });
  afterAll(async () => {
    for (const p of procs) await stopProcess(p);
    for (const p of prefixes) await dropPrefix(redis, p);
    await redis.quit();
    await reference.close();
  });

  it('kill -9 of the worker in the middle of 20k events, then a restart: every event stored exactly once', async () => {
    const db = await createMigratedDb('postgres');
    try {
      const qp = prefix();
      const env = { DATABASE_URL: db.db.url, QUEUE_PREFIX: qp, WORKER_CONCURRENCY: '16', WORKER_BATCH_SIZE: '400' };
      await publish(redis, qp, jobs);
      const first = worker(env);
      await first.waitForLog('worker started');
      await waitFor(
        'a few thousand events stored',
        async () => (await countRows(db.ds, 'plan_events')) >= 3_000,
        60_000,
        20,
      );
      first.child.kill('SIGKILL');
      expect(await first.exited).toBe('SIGKILL');
      const atKill = await countRows(db.ds, 'plan_events');
      expect(atKill).toBeLessThan(TOTAL); // really mid-stream

      const second = worker(env);
      await waitFor('all events stored', async () => (await countRows(db.ds, 'plan_events')) >= TOTAL, 120_000, 200);
      await waitFor(
        'the queue to drain',
        async () => {
          const c = await queueCounts(redis, qp);
          return c.wait + c.active + c.delayed === 0;
        },
        60_000,
        200,
      );
      second.child.kill('SIGTERM');
      expect(await second.exited).toBe(0);

      expect(await countRows(db.ds, 'plan_events')).toBe(TOTAL);
      expect(await plans(db.ds)).toEqual(expectedPlans);
      expect((await queueCounts(redis, qp)).failed).toBe(0);
      expect(await readDeadLetters(redis, qp)).toEqual([]);
    } finally {
      await db.close();
    }
  });

  it('PostgreSQL stopped for 20 s mid-stream and started again: everything stored, no dead letters', async () => {
    let pg: PrivatePostgres | undefined;
    let ds: DataSource | undefined;
    try {
      pg = await startPrivatePostgres();
      ds = await openDataSource(parseDatabaseUrl(pg.url), { poolSize: 2 });
      await runMigrations(ds);
      await ds.destroy();
      const qp = prefix();
      const proc = worker({
        DATABASE_URL: pg.url,
        QUEUE_PREFIX: qp,
        HEALTH_PORT: '0',
        HEALTH_HOST: '127.0.0.1',
        WORKER_CONCURRENCY: '16',
      });
      const started = await proc.waitForLog('worker started');
      const readyz = async () => (await fetch(`http://127.0.0.1:${started.healthPort}/readyz`)).status;

      // A steady stream (about 800 events/s) running before, during and after the outage.
      let published = 0;
      const stream = (async () => {
        for (let i = 0; i < jobs.length; i += 8) {
          await publish(redis, qp, jobs.slice(i, i + 8));
          published += jobs.slice(i, i + 8).reduce((n, j) => n + j.events.length, 0);
          await new Promise((r) => setTimeout(r, 500));
        }
      })();
      await waitFor('the stream to be under way', () => published >= 2_000, 30_000, 50);
      pg.stop();
      const stoppedAt = Date.now();
      await waitFor('/readyz to report the outage', async () => (await readyz()) === 503, 15_000, 200);
      await proc.waitForLog('database unreachable: pausing the worker until it answers', 15_000);
      await new Promise((r) => setTimeout(r, Math.max(0, 20_000 - (Date.now() - stoppedAt))));
      expect(published).toBeLessThan(TOTAL); // the outage is mid-stream
      pg.start();
      await proc.waitForLog('database reachable again: resuming the worker', 30_000);
      await stream;

      ds = await openDataSource(parseDatabaseUrl(pg.url), { poolSize: 2 });
      await waitFor('all events stored', async () => (await countRows(ds!, 'plan_events')) >= TOTAL, 120_000, 250);
      await waitFor('ready again', async () => (await readyz()) === 200, 30_000, 200);
      proc.child.kill('SIGTERM');
      expect(await proc.exited).toBe(0);
      if (process.env.CHAOS_DEBUG)
        console.log(
          proc
            .logs()
            .filter((l) => (l.level as number) >= 40)
            .map((l) => JSON.stringify(l).slice(0, 300))
            .join('\n'),
        );

      expect(await countRows(ds, 'plan_events')).toBe(TOTAL);
      expect(await plans(ds)).toEqual(expectedPlans);
      expect(await readDeadLetters(redis, qp)).toEqual([]);
      expect((await queueCounts(redis, qp)).failed).toBe(0);
    } finally {
      if (ds?.isInitialized) await ds.destroy();
      pg?.destroy();
    }
  });

  it('two worker processes on one queue: every event stored exactly once, redeliveries included', async () => {
    const db = await createMigratedDb('postgres');
    try {
      const qp = prefix();
      const env = { DATABASE_URL: db.db.url, QUEUE_PREFIX: qp, WORKER_CONCURRENCY: '16', WORKER_BATCH_SIZE: '500' };
      const a = worker(env);
      const b = worker(env);
      await Promise.all([a.waitForLog('worker started'), b.waitForLog('worker started')]);
      // Shuffled jobs, and 40 of them published twice: the two workers race on the same events and plans.
      const mixed = shuffled(jobs, 5);
      await publish(redis, qp, [...mixed, ...mixed.slice(0, 40)]);
      await waitFor('all events stored', async () => (await countRows(db.ds, 'plan_events')) >= TOTAL, 120_000, 200);
      await waitFor(
        'the queue to drain',
        async () => {
          const c = await queueCounts(redis, qp);
          return c.wait + c.active + c.delayed === 0;
        },
        60_000,
        200,
      );
      a.child.kill('SIGTERM');
      b.child.kill('SIGTERM');
      expect(await Promise.all([a.exited, b.exited])).toEqual([0, 0]);

      expect(await countRows(db.ds, 'plan_events')).toBe(TOTAL);
      expect(await plans(db.ds)).toEqual(expectedPlans);
      expect(await readDeadLetters(redis, qp)).toEqual([]);
      const inserted = (p: WorkerProcess) =>
        p
          .logs()
          .filter((l) => l.msg === 'batch committed')
          .reduce((n, l) => n + (l.inserted as number), 0);
      expect(inserted(a)).toBeGreaterThan(0);
      expect(inserted(b)).toBeGreaterThan(0);
      expect(inserted(a) + inserted(b)).toBe(TOTAL);
    } finally {
      await db.close();
    }
  });
});
