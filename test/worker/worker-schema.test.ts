/**
 * A worker started on a schema with pending migrations (new code deployed before `migrate` ran)
 * reports not ready with one actionable line and writes nothing: no rows, no dead letters, its
 * jobs stay queued. Once the migrations are applied it starts and stores them.
 */
import type IORedis from 'ioredis';
import { MigrationExecutor } from 'typeorm';
import { MIGRATIONS } from '../../migrations';
import { loadConfig } from '../../src/config/config';
import { runMigrations } from '../../src/store/migrator';
import { startWorker, WorkerHandle } from '../../src/worker';
import { createMigratedDb, TestDb } from '../support/databases';
import { manyPlanRuns, toJobData } from '../support/event-factory';
import {
  countRows,
  dropPrefix,
  openRedis,
  publish,
  queueCounts,
  readDeadLetters,
  REDIS_URL,
  silentLogger,
  uniquePrefix,
  waitFor,
} from './helpers/queue-harness';

describe.each<TestDb>(['sqlite', 'postgres'])('worker on %s with pending migrations', (kind) => {
  let redis: IORedis;
  let db: Awaited<ReturnType<typeof createMigratedDb>>;
  let worker: WorkerHandle | undefined;
  const prefix = uniquePrefix('schema');

  beforeAll(async () => {
    redis = openRedis();
    db = await createMigratedDb(kind);
  });
  afterAll(async () => {
    await worker?.close(5_000);
    await dropPrefix(redis, prefix);
    await redis.quit();
    await db.close();
  });

  it('is not ready ("1 pending migration: run plan-ledger migrate"), consumes nothing, and starts once migrated', async () => {
    await new MigrationExecutor(db.ds).undoLastMigration(); // the database is one migration behind the code
    const events = manyPlanRuns(20, { seed: 41 });
    const jobs = toJobData(events, 25);
    await publish(redis, prefix, jobs);
    worker = await startWorker({
      config: loadConfig({ REDIS_URL, QUEUE_PREFIX: prefix, DATABASE_URL: db.db.url }),
      dataSource: db.ds,
      logger: silentLogger(),
      settings: { healthPort: 0, healthHost: '127.0.0.1' },
      schemaPollMs: 100,
    });
    const readyz = `http://127.0.0.1:${worker.healthPort}/readyz`;
    const answer = await fetch(readyz);
    expect(answer.status).toBe(503);
    expect(((await answer.json()) as { checks: Record<string, unknown> }).checks.schema).toEqual({
      ok: false,
      detail: '1 pending migration: run plan-ledger migrate',
    });
    // Nothing was fetched, written or dead-lettered: every job is still waiting.
    expect(await queueCounts(redis, prefix)).toMatchObject({ wait: jobs.length, active: 0, completed: 0, failed: 0 });
    expect(await countRows(db.ds, 'plan_events')).toBe(0);
    expect(await readDeadLetters(redis, prefix)).toEqual([]);

    expect((await runMigrations(db.ds)).applied).toEqual([MIGRATIONS[MIGRATIONS.length - 1].name]);
    await waitFor(
      'the worker to see the schema current and store the backlog',
      async () => (await countRows(db.ds, 'plan_events')) === events.length,
      30_000,
      100,
    );
    expect(await worker.idle(30_000)).toBe(true);
    expect((await fetch(readyz)).status).toBe(200);
    expect(await readDeadLetters(redis, prefix)).toEqual([]);
  });
});
