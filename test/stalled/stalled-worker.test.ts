import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type IORedis from 'ioredis';
import { loadConfig } from '../../src/config/config';
import { parsePlanEvent } from '../../src/contracts';
import { ENTITY, PlanHeadRow } from '../../src/store/entities';
import { startWorker, WorkerHandle } from '../../src/worker';
import { ALL_TEST_DBS, createMigratedDb } from '../support/databases';
import {
  dropPrefix,
  openRedis,
  publish,
  REDIS_URL,
  silentLogger,
  uniquePrefix,
  waitFor,
} from '../worker/helpers/queue-harness';

const EXECUTOR = path.join(__dirname, 'support', 'dying-executor.ts');
const STALL_AFTER_MS = 2_000;
const TICK_MS = 500;

/** Starts the executor, waits until its two events are stored, and returns it still running. */
async function startExecutor(env: Record<string, string>) {
  const child = spawn(process.execPath, ['--require', 'tsx/cjs', EXECUTOR], {
    env: { ...process.env, REDIS_URL, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  const exited = new Promise<string>((resolve) => child.on('exit', (code, signal) => resolve(String(signal ?? code))));
  await waitFor(
    'the executor to have its events stored',
    async () => out.includes('stored') || child.exitCode !== null,
    60_000,
    50,
  );
  expect({ out, err }).toEqual({ out: 'stored\n', err: '' });
  return { child, exited };
}

describe.each(ALL_TEST_DBS)('a plan whose executor is killed, with a real worker on %s', (kind) => {
  let db: Awaited<ReturnType<typeof createMigratedDb>>;
  let redis: IORedis;
  let prefix: string;
  let journal: string;
  let worker: WorkerHandle | undefined;

  beforeAll(async () => {
    db = await createMigratedDb(kind);
    redis = openRedis();
    prefix = uniquePrefix('stall');
    journal = fs.mkdtempSync(path.join(os.tmpdir(), 'pl-stall-'));
    worker = await startWorker({
      config: loadConfig({ REDIS_URL, QUEUE_PREFIX: prefix, DATABASE_URL: db.db.url }),
      dataSource: db.ds,
      logger: silentLogger(),
      settings: { healthPort: 0, healthHost: '127.0.0.1', stallAfterMs: STALL_AFTER_MS, stallCheckMs: TICK_MS },
      stallCheck: true,
    });
  });
  afterAll(async () => {
    await worker?.close();
    await dropPrefix(redis, prefix);
    await redis.quit();
    await db.close();
    fs.rmSync(journal, { recursive: true, force: true });
  });

  const head = async (planId: string) =>
    (await db.ds.getRepository<PlanHeadRow>(ENTITY.head).findOneByOrFail({ planId })) as PlanHeadRow;
  const stalledGauge = async () => {
    const text = await (await fetch(`http://127.0.0.1:${worker!.healthPort}/metrics`)).text();
    const line = text.split('\n').find((l) => l.startsWith('plan_ledger_plans_stalled '));
    return line === undefined ? undefined : Number(line.split(' ')[1]);
  };

  it('becomes stalled within its deadline plus one tick, and running again on a late event', async () => {
    const planId = `killed-${kind}`;
    const executor = await startExecutor({ QUEUE_PREFIX: prefix, JOURNAL_DIR: journal, PLAN_ID: planId });
    const lastEventAt = new Date((await head(planId)).updatedAt).getTime();
    executor.child.kill('SIGKILL');
    expect(await executor.exited).toBe('SIGKILL');
    expect((await head(planId)).stalledAt).toBeNull();

    // due STALL_AFTER after its last event; every tick marks each plan past its due time
    // (stall-check.test.ts), so it is marked by the first tick after it (no wall-clock bound asserted)
    expect(new Date((await head(planId)).stallDueAt!).getTime()).toBe(lastEventAt + STALL_AFTER_MS);
    await waitFor('the plan to be marked stalled', async () => (await head(planId)).stalledAt !== null, 30_000, 50);
    expect(new Date((await head(planId)).stalledAt!).getTime()).toBeGreaterThanOrEqual(lastEventAt + STALL_AFTER_MS);
    expect(await stalledGauge()).toBe(1);

    // a late event (the executor's replacement finishing the step) makes it running again
    const late = parsePlanEvent({
      specVersion: 1,
      eventId: '6f1d2c1e-0000-4000-8000-000000000001',
      type: 'step.completed',
      planId,
      sessionId: `session-${planId}`,
      seq: 2,
      occurredAt: new Date().toISOString(),
      payload: { stepId: 'fetch', inputTokens: 1, outputTokens: 1 },
    });
    if (!late.ok) throw late.error;
    await publish(redis, prefix, [{ v: 1, events: [late.event] }]);
    await waitFor('the late event to clear the stall', async () => (await head(planId)).stalledAt === null, 30_000, 50);
    const [plan] = await db.ds.query(`SELECT status FROM execution_plans WHERE id = '${planId}'`);
    expect(plan.status).toBe('executing');
    expect(await stalledGauge()).toBe(0);
  });

  it("holds a plan while its running step's deadline has not passed", async () => {
    const planId = `long-step-${kind}`;
    const executor = await startExecutor({
      QUEUE_PREFIX: prefix,
      JOURNAL_DIR: journal,
      PLAN_ID: planId,
      STEP_DEADLINE_MS: '600000',
    });
    executor.child.kill('SIGKILL');
    await executor.exited;
    // STALL_AFTER and several ticks pass: the step may stay silent for 10 minutes
    await new Promise((r) => setTimeout(r, STALL_AFTER_MS + 4 * TICK_MS));
    const h = await head(planId);
    expect(h.stalledAt).toBeNull();
    expect(new Date(h.stallDueAt!).getTime()).toBeGreaterThan(Date.now() + 500_000);
  });
});
