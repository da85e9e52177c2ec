import type IORedis from 'ioredis';
import { Queue } from 'bullmq';
import { MAINTENANCE_QUEUE } from '../../src/queue/queue-names';
import { runCli } from '../support/cli';
import { createMigratedDb, createThrowawayDb } from '../support/databases';
import type { QueryRunner } from 'typeorm';
import { stuckRetentionRun } from '../retention/plan-fixtures';
import { manyPlanRuns, toJobData } from '../support/event-factory';
import { countRows, dropPrefix, openRedis, publish, REDIS_URL, uniquePrefix, waitFor } from './helpers/queue-harness';
import { spawnWorker, stopProcess, WorkerProcess } from './helpers/worker-process';

describe('plan-ledger worker (CLI)', () => {
  let redis: IORedis;
  let db: Awaited<ReturnType<typeof createMigratedDb>>;
  let prefix: string;
  let proc: WorkerProcess | undefined;

  beforeAll(async () => {
    redis = openRedis();
    db = await createMigratedDb('sqlite');
    prefix = uniquePrefix('cli');
  });
  afterAll(async () => {
    await stopProcess(proc);
    await dropPrefix(redis, prefix);
    await redis.quit();
    await db.close();
  });

  it('--help lists every worker variable with its default', async () => {
    const r = await runCli(['worker', '--help']);
    expect(r.code).toBe(0);
    for (const name of [
      'WORKER_CONCURRENCY',
      'WORKER_BATCH_SIZE',
      'WORKER_BATCH_WAIT_MS',
      'RETRY_BUDGET_MS',
      'HEALTH_PORT',
      'READY_STALL_SECONDS',
      'SHUTDOWN_TIMEOUT_MS',
    ]) {
      expect(r.stdout).toMatch(new RegExp(`${name}\\s+.*default`));
    }
  });

  it('names every bad variable and exits 2 without starting', async () => {
    const r = await runCli(['worker'], {
      WORKER_CONCURRENCY: 'lots',
      READY_STALL_SECONDS: '0',
      DATABASE_URL: db.db.url,
    });
    expect(r.code).toBe(2);
    expect(r.stderr.trim()).toBe(
      'plan-ledger: invalid configuration: WORKER_CONCURRENCY: "lots" is not an integer; READY_STALL_SECONDS: 0 is outside 1-86400',
    );
  });

  it('refuses to start on a database without the schema, saying to migrate', async () => {
    const empty = await createThrowawayDb('sqlite');
    try {
      const r = await runCli(['worker'], {
        DATABASE_URL: empty.url,
        REDIS_URL,
        QUEUE_PREFIX: prefix,
        HEALTH_PORT: 'off',
      });
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(
        /^plan-ledger: worker cannot start: database sqlite:.* is not ready for the worker \(.*\); run: plan-ledger migrate$/m,
      );
    } finally {
      await empty.drop();
    }
  });

  it('says when Redis is unreachable', async () => {
    const r = await runCli(['worker'], {
      DATABASE_URL: db.db.url,
      REDIS_URL: 'redis://127.0.0.1:1',
      HEALTH_PORT: 'off',
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /^plan-ledger: worker cannot start: cannot reach Redis at redis:\/\/127\.0\.0\.1:1 \(connect ECONNREFUSED 127\.0\.0\.1:1\); start it \(redis-server\) or set REDIS_URL$/m,
    );
  });

  it('persists what is published, logs one line per batch, and exits 0 on SIGTERM after finishing', async () => {
    proc = spawnWorker({ DATABASE_URL: db.db.url, REDIS_URL, QUEUE_PREFIX: prefix, SHUTDOWN_TIMEOUT_MS: '5000' });
    await proc.waitForLog('worker started');
    const events = manyPlanRuns(500, { seed: 41 });
    await publish(redis, prefix, toJobData(events, 25));
    await waitFor('all events stored', async () => (await countRows(db.ds, 'plan_events')) === events.length, 30_000);
    // the worker process also runs retention's job scheduler (one per prefix, however many workers)
    const maintenance = new Queue(MAINTENANCE_QUEUE, { connection: redis, prefix });
    expect((await maintenance.getJobSchedulers()).map((s) => s.key)).toEqual(['retention']);
    await maintenance.close();
    proc.child.kill('SIGTERM');
    expect(await proc.exited).toBe(0);
    const batches = proc.logs().filter((l) => l.msg === 'batch committed');
    expect(batches.length).toBeGreaterThan(0);
    expect(batches.reduce((n, l) => n + (l.inserted as number), 0)).toBe(events.length);
    expect(batches[0]).toEqual(
      expect.objectContaining({
        level: 30,
        jobIds: expect.any(Array),
        events: expect.any(Number),
        durationMs: expect.any(Number),
      }),
    );
    expect(proc.logs().find((l) => l.msg === 'worker closed')).toMatchObject({ clean: true });
  });

  it('a retention run stuck on a lock does not hold back the shutdown: the events worker closes, exit 0', async () => {
    const pg = await createMigratedDb('postgres');
    let locker: QueryRunner | undefined;
    const maintenance = new Queue(MAINTENANCE_QUEUE, { connection: redis, prefix: `${prefix}-stuck` });
    let worker: WorkerProcess | undefined;
    try {
      worker = spawnWorker({
        DATABASE_URL: pg.db.url,
        REDIS_URL,
        QUEUE_PREFIX: `${prefix}-stuck`,
        SHUTDOWN_TIMEOUT_MS: '1000',
      });
      await worker.waitForLog('worker started');
      locker = await stuckRetentionRun(pg.ds, maintenance, 'cli-stuck');
      worker.child.kill('SIGTERM');
      // within the 1 s deadline, both close at once; the retention worker is abandoned, not awaited
      await worker.waitForLog(
        'retention worker did not close in time; its job, if any, is abandoned (the next tick continues it)',
        10_000,
      );
      expect(await worker.waitForLog('worker closed', 10_000)).toMatchObject({ clean: true });
      await locker.rollbackTransaction(); // the stuck statement ends, the database closes
      expect({ code: await worker.exited, stderr: worker.stderr() }).toEqual({ code: 0, stderr: '' });
    } finally {
      if (locker?.isTransactionActive) await locker.rollbackTransaction().catch(() => undefined);
      await locker?.release();
      await stopProcess(worker);
      await maintenance.obliterate({ force: true }).catch(() => undefined);
      await maintenance.close();
      await pg.close();
    }
  });
});
