import type IORedis from 'ioredis';
import { loadConfig } from '../../src/config/config';
import type { PlanEvent } from '../../src/contracts';
import { PlanEventStore } from '../../src/store/plan-event-store';
import { startWorker, WorkerConfig, WorkerHandle } from '../../src/worker';
import type { EventPersister } from '../../src/worker/batch-writer';
import { createMigratedDb, TestDb, withMssql } from '../support/databases';
import { manyPlanRuns, shuffled, toJobData } from '../support/event-factory';
import {
  countRows,
  dropPrefix,
  openRedis,
  publish,
  queueCounts,
  queuedEvents,
  REDIS_URL,
  silentLogger,
  uniquePrefix,
  waitFor,
} from './helpers/queue-harness';

type Db = Awaited<ReturnType<typeof createMigratedDb>>;

const PLAN_COLUMNS =
  'id, status, total_steps, completed_steps, failed_steps, skipped_steps, total_input_tokens, total_output_tokens, approval_status';

/** What a user compares: every plan's counters and the number of rows per table. */
async function snapshot(ds: Db['ds']) {
  const plans = await ds.query(`SELECT ${PLAN_COLUMNS} FROM execution_plans ORDER BY id`);
  const counts: Record<string, number> = {};
  for (const t of [
    'plan_events',
    'plan_steps',
    'plan_handoffs',
    'plan_decisions',
    'workflow_checkpoints',
    'workflow_dags',
    'sessions',
  ])
    counts[t] = await countRows(ds, t);
  return {
    plans: plans.map((p: Record<string, unknown>) =>
      Object.fromEntries(
        Object.entries(p).map(([k, v]) => [k, typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v]),
      ),
    ),
    counts,
  };
}

describe.each<TestDb>(withMssql(['sqlite', 'postgres']))('worker on %s: many jobs at high concurrency', (kind) => {
  let redis: IORedis;
  let db: Db;
  let reference: Db;
  let prefix: string;
  let worker: WorkerHandle | undefined;

  beforeAll(async () => {
    redis = openRedis();
    [db, reference] = await Promise.all([createMigratedDb(kind), createMigratedDb(kind)]);
    prefix = uniquePrefix('conc');
  });
  afterAll(async () => {
    await worker?.close();
    await dropPrefix(redis, prefix);
    await redis.quit();
    await Promise.all([db.close(), reference.close()]);
  });

  it('stores the same plans as one sequential write, whatever the job order and with redelivered duplicates', async () => {
    const events = manyPlanRuns(4000, { seed: 3 });
    // Jobs of 25 events in shuffled order, plus 10 jobs delivered twice (different job ids).
    const jobs = shuffled(toJobData(events, 25), 9);
    const withDuplicates = [...jobs, ...jobs.slice(0, 10)];
    await publish(redis, prefix, withDuplicates);
    worker = await startWorker({
      config: loadConfig({ REDIS_URL, QUEUE_PREFIX: prefix, DATABASE_URL: db.db.url }),
      dataSource: db.ds,
      logger: silentLogger(),
      settings: { healthPort: null, concurrency: 32, batchSize: 300 },
    });
    expect(await worker.idle(60_000)).toBe(true);
    await new PlanEventStore(reference.ds).persist(events);

    const [got, want] = await Promise.all([snapshot(db.ds), snapshot(reference.ds)]);
    expect(got.counts.plan_events).toBe(events.length);
    expect(got).toEqual(want);
    const redelivered = jobs.slice(0, 10).reduce((n, job) => n + job.events.length, 0);
    expect(worker.stats()).toMatchObject({ inserted: events.length, duplicates: redelivered, deadLettered: 0 });
  });
});

describe('worker: health, readiness, metrics and shutdown (sqlite)', () => {
  let redis: IORedis;
  let db: Db;
  let prefix: string;
  let worker: WorkerHandle | undefined;

  beforeAll(async () => {
    redis = openRedis();
    db = await createMigratedDb('sqlite');
  });
  beforeEach(() => {
    prefix = uniquePrefix('health');
  });
  afterEach(async () => {
    await worker?.close(2_000);
    worker = undefined;
    await dropPrefix(redis, prefix);
    await db.ds.query('DELETE FROM plan_events');
  });
  afterAll(async () => {
    await redis.quit();
    await db.close();
  });

  const start = (settings: Partial<WorkerConfig>, store?: EventPersister) =>
    startWorker({
      config: loadConfig({ REDIS_URL, QUEUE_PREFIX: prefix, DATABASE_URL: db.db.url }),
      dataSource: db.ds,
      logger: silentLogger(),
      store,
      settings: { healthPort: 0, healthHost: '127.0.0.1', ...settings },
    });

  it('serves /healthz, /readyz and Prometheus /metrics with the documented series', async () => {
    worker = await start({ concurrency: 4 });
    const base = `http://127.0.0.1:${worker.healthPort}`;
    await publish(redis, prefix, toJobData(manyPlanRuns(200, { seed: 5 }), 20));
    expect(await worker.idle(30_000)).toBe(true);

    const health = await fetch(`${base}/healthz`);
    expect(health.status).toBe(200);
    const ready = await fetch(`${base}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({
      ready: true,
      checks: { redis: { ok: true }, database: { ok: true }, schema: { ok: true }, progress: { ok: true } },
    });
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toMatch(/^plan_ledger_events_persisted_total\{type="plan.created"\} \d+/m);
    expect(metrics).toMatch(/^plan_ledger_events_persisted_total\{type="step.completed"\} \d+/m);
    expect(metrics).toMatch(/^plan_ledger_commit_duration_seconds_bucket\{le="0.1"\} \d+/m);
    expect(metrics).toMatch(/^plan_ledger_queue_jobs\{shard="0",state="wait"\} 0/m);
    expect(metrics).toMatch(/^plan_ledger_queue_oldest_waiting_age_seconds\{shard="0"\} 0/m);
    expect(metrics).toMatch(/^plan_ledger_worker_process_resident_memory_bytes \d+/m);
    expect(metrics).toContain('# TYPE plan_ledger_events_dead_lettered_total counter');
    expect(metrics).toMatch(/^plan_ledger_events_applied_total [1-9]\d*/m);
    expect(metrics).toMatch(/^plan_ledger_plan_rebuilds_total 0/m);
    expect(metrics).toContain('# TYPE plan_ledger_gap_waits_total counter');
    expect(metrics).toContain('# TYPE plan_ledger_gaps_skipped_total counter');
    expect(metrics).toContain('# TYPE plan_ledger_plans_waiting_on_gap gauge');
    expect(metrics).toContain('# TYPE plan_ledger_row_cache_hits_total counter');
    expect((await fetch(`${base}/nope`)).status).toBe(404);
  });

  it('an event lost upstream leaves a gap: its plan waits, on /metrics, then applies past it after WORKER_GAP_TIMEOUT_MS', async () => {
    worker = await start({ concurrency: 4, gapTimeoutMs: 1_500 });
    const base = `http://127.0.0.1:${worker.healthPort}`;
    const events = manyPlanRuns(1, { seed: 12 }); // one plan, seq 0..n, finalized last
    const lost = events.findIndex((e) => e.type === 'step.completed');
    await publish(
      redis,
      prefix,
      toJobData(
        events.filter((_, i) => i !== lost),
        5,
      ),
    );
    expect(await worker.idle(30_000)).toBe(true);
    expect(worker.stats().deadLettered).toBe(0);
    const planId = events[0].planId;
    const status = async () =>
      (await db.ds.query(`SELECT status FROM execution_plans WHERE id = '${planId}'`))[0]?.status;
    expect(await status()).toBe('executing'); // plan.finalized waits behind the missing seq
    const metrics = async () => (await fetch(`${base}/metrics`)).text();
    await waitFor(
      'the gauge to count the waiting plan',
      async () => /^plan_ledger_plans_waiting_on_gap 1$/m.test(await metrics()),
      10_000,
      200,
    );
    expect(await metrics()).toMatch(/^plan_ledger_gap_waits_total 1$/m);
    await waitFor('the sweeper to apply past the gap', async () => (await status()) === 'completed', 15_000, 200);
    await waitFor(
      'the gauge to drop',
      async () => /^plan_ledger_plans_waiting_on_gap 0$/m.test(await metrics()),
      10_000,
      200,
    );
    expect(await metrics()).toMatch(/^plan_ledger_gaps_skipped_total 1$/m);
  });

  it('is not ready while a backlog waits and nothing commits, and ready again once it commits', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const real = new PlanEventStore(db.ds);
    const store: EventPersister = { persist: async (events: PlanEvent[]) => (await gate, real.persist(events)) };
    worker = await start({ concurrency: 2, readyStallSeconds: 1 }, store);
    const base = `http://127.0.0.1:${worker.healthPort}`;
    await publish(redis, prefix, toJobData(manyPlanRuns(100, { seed: 6 }), 10));
    await waitFor(
      'readiness to fail on the stalled backlog',
      async () => (await fetch(`${base}/readyz`)).status === 503,
      10_000,
      200,
    );
    const body = (await (await fetch(`${base}/readyz`)).json()) as { checks: { progress: unknown } };
    expect(body.checks.progress).toEqual({
      ok: false,
      detail: expect.stringMatching(/jobs waiting and nothing committed for \d+ s/),
    });
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(
      Number(/^plan_ledger_queue_oldest_waiting_age_seconds\{shard="0"\} (\S+)/m.exec(metrics)![1]),
    ).toBeGreaterThan(0.5);
    release();
    expect(await worker.idle(30_000)).toBe(true);
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
  });

  it('close() stops fetching, commits what is in flight, and leaves the rest queued for the next worker', async () => {
    const real = new PlanEventStore(db.ds);
    const slow: EventPersister = {
      persist: async (events) => (await new Promise((r) => setTimeout(r, 100)), real.persist(events)),
    };
    const events = manyPlanRuns(2000, { seed: 8 });
    await publish(redis, prefix, toJobData(events, 20));
    worker = await start({ concurrency: 5, batchSize: 50 }, slow);
    await waitFor('a first commit', () => worker!.stats().batches > 0, 10_000, 20);
    expect(await worker.close(5_000)).toEqual({ clean: true, unfinishedJobs: 0 });
    const stored = await countRows(db.ds, 'plan_events');
    const left = await queueCounts(redis, prefix);
    expect(left.active).toBe(0);
    expect(stored).toBeLessThan(events.length);
    // every event is committed or still queued
    expect(stored + (await queuedEvents(redis, prefix))).toBe(events.length);

    worker = await start({ concurrency: 16 });
    expect(await worker.idle(60_000)).toBe(true);
    expect(await countRows(db.ds, 'plan_events')).toBe(events.length);
  });

  it('close() keeps its deadline when a write hangs; the job is not acknowledged and the next worker stores it', async () => {
    const hang: EventPersister = { persist: () => new Promise(() => undefined) };
    const events = manyPlanRuns(20, { seed: 9 });
    await publish(redis, prefix, toJobData(events, events.length));
    worker = await start({ concurrency: 1, lockDurationMs: 1_000 }, hang);
    await waitFor('the job to be active', async () => (await queueCounts(redis, prefix)).active === 1, 10_000, 20);
    // returning at all proves the deadline: without it, close() waits on the hung write forever
    expect(await worker.close(300)).toEqual({ clean: false, unfinishedJobs: 1 });
    worker = undefined;
    const counts = await queueCounts(redis, prefix);
    expect(counts.completed + counts.failed).toBe(0);

    worker = await start({ concurrency: 4, lockDurationMs: 1_000 });
    await waitFor(
      'the abandoned job to be redelivered and stored',
      async () => (await countRows(db.ds, 'plan_events')) === events.length,
      20_000,
      100,
    );
  });
});
