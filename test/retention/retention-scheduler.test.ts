import { randomBytes } from 'node:crypto';
import IORedis from 'ioredis';
import { Job, Queue } from 'bullmq';
import type { DataSource, QueryRunner } from 'typeorm';
import { createMigratedDb } from '../support/databases';
import { MAINTENANCE_QUEUE } from '../../src/queue/queue-names';
import { retentionPolicy } from '../../src/retention/retention-config';
import {
  RETENTION_JOB,
  RETENTION_SCHEDULER_ID,
  RetentionScheduler,
  startRetentionScheduler,
} from '../../src/retention/retention-scheduler';
import type { RetentionReport } from '../../src/retention/retention-report';
import { DAY, expectedRows, insertPlans, planRows, stuckRetentionRun } from './plan-fixtures';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

async function finished(queue: Queue, job: Job, timeoutMs = 20_000): Promise<Job> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const state = await job.getState();
    if (state === 'completed' || state === 'failed') return (await Job.fromId(queue, job.id!))!;
    if (Date.now() > deadline) throw new Error(`job ${job.id} still ${state} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('retention scheduler (real Redis)', () => {
  let ds: DataSource;
  let closeDb: () => Promise<void>;
  let prefix: string;
  const opened: RetentionScheduler[] = [];

  beforeAll(async () => {
    ({ ds, close: closeDb } = await createMigratedDb('sqlite'));
  });
  beforeEach(() => {
    prefix = `test-retention-${randomBytes(4).toString('hex')}`;
  });
  afterEach(async () => {
    for (const s of opened.splice(0)) await s.close();
    const admin = new Queue(MAINTENANCE_QUEUE, {
      connection: new IORedis(REDIS_URL, { maxRetriesPerRequest: null }),
      prefix,
    });
    await admin.obliterate({ force: true });
    await admin.close();
    await (admin.opts.connection as IORedis).quit();
  });
  afterAll(async () => closeDb?.());

  it('upserting from several workers leaves exactly one scheduler, daily in UTC', async () => {
    const policy = retentionPolicy();
    opened.push(await startRetentionScheduler({ redisUrl: REDIS_URL, prefix, dataSource: ds, policy }));
    opened.push(
      await startRetentionScheduler({ redisUrl: REDIS_URL, prefix, dataSource: ds, policy, runWorker: false }),
    );
    const queue = opened[0].queue;
    expect(await queue.getJobSchedulersCount()).toBe(1);
    expect(await queue.getJobScheduler(RETENTION_SCHEDULER_ID)).toMatchObject({
      pattern: '0 3 * * *',
      tz: 'UTC',
      name: RETENTION_JOB,
    });
    expect(await queue.getDelayedCount()).toBe(1); // one next run, however many workers upserted
  });

  it('a changed cron updates the one scheduler; RETENTION_CRON=off removes it', async () => {
    opened.push(
      await startRetentionScheduler({
        redisUrl: REDIS_URL,
        prefix,
        dataSource: ds,
        policy: retentionPolicy(),
        runWorker: false,
      }),
    );
    opened.push(
      await startRetentionScheduler({
        redisUrl: REDIS_URL,
        prefix,
        dataSource: ds,
        policy: retentionPolicy({ cron: '30 1 * * 0' }),
        runWorker: false,
      }),
    );
    expect(await opened[0].queue.getJobSchedulers()).toEqual([expect.objectContaining({ pattern: '30 1 * * 0' })]);
    const off = await startRetentionScheduler({
      redisUrl: REDIS_URL,
      prefix,
      dataSource: ds,
      policy: retentionPolicy({ cron: null }),
    });
    opened.push(off);
    expect(off.worker).toBeNull();
    expect(await opened[0].queue.getJobSchedulersCount()).toBe(0);
  });

  it('its worker runs retention for a retention job and returns the report', async () => {
    const plan = { id: 'sched-due', status: 'completed' as const, completedAt: new Date(Date.now() - 40 * DAY) };
    await insertPlans(ds, [plan]);
    const connection = new IORedis(REDIS_URL, { maxRetriesPerRequest: null });
    try {
      const scheduler = await startRetentionScheduler({
        connection,
        prefix,
        dataSource: ds,
        policy: retentionPolicy(),
      });
      opened.push(scheduler);
      const job = await finished(scheduler.queue, await scheduler.queue.add(RETENTION_JOB, { v: 1 }));
      expect(job.failedReason).toBeUndefined();
      expect((job.returnvalue as RetentionReport).plans.softDeleted).toBe(1);
      expect(await planRows(ds, plan.id, 'deleted')).toEqual(expectedRows(plan));

      const stray = await finished(scheduler.queue, await scheduler.queue.add('something-else', {}));
      expect(stray.failedReason).toBe('unknown maintenance job "something-else"');
    } finally {
      for (const s of opened.splice(0)) await s.close();
      await connection.quit(); // caller-owned: close() left it open
    }
  });

  it('close() returns at its deadline while a run is stuck, and drops the connection it opened', async () => {
    const pg = await createMigratedDb('postgres');
    let locker: QueryRunner | undefined;
    try {
      const scheduler = await startRetentionScheduler({
        redisUrl: REDIS_URL,
        prefix,
        dataSource: pg.ds,
        policy: retentionPolicy(),
        closeTimeoutMs: 300,
      });
      const connection = (await scheduler.queue.backend.client) as unknown as IORedis;
      // the run blocks on a lock held by another transaction: it cannot see the abort until it is released
      locker = await stuckRetentionRun(pg.ds, scheduler.queue, 'sched-stuck');
      // close() returns while the run is still stuck: the lock is released only after it did
      let timer: NodeJS.Timeout | undefined;
      const stuck = new Promise<'still closing'>(
        (resolve) => (timer = setTimeout(() => resolve('still closing'), 15_000)),
      );
      await expect(
        Promise.race([scheduler.close().then(() => 'closed'), stuck]).finally(() => clearTimeout(timer)),
      ).resolves.toBe('closed');
      for (let i = 0; connection.status !== 'end' && i < 40; i++)
        await new Promise((resolve) => setTimeout(resolve, 50));
      expect(connection.status).toBe('end');
      await locker.rollbackTransaction();
    } finally {
      if (locker?.isTransactionActive) await locker.rollbackTransaction().catch(() => undefined);
      await locker?.release();
      await pg.close();
    }
  });
});
