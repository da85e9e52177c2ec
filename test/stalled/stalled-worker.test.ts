import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ENTITY } from '../../src/store/entities';
import { ALL_TEST_DBS } from '../support/databases';
import { REDIS_URL, waitFor } from '../worker/helpers/queue-harness';
import { ev } from './support/stall-events';
import { startStallWorker, type StallWorker, untilTicked } from './support/stall-worker';

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
  let stall: StallWorker;
  let journal: string;

  beforeAll(async () => {
    stall = await startStallWorker(kind, { stallAfterMs: STALL_AFTER_MS, tickMs: TICK_MS });
    journal = fs.mkdtempSync(path.join(os.tmpdir(), 'pl-stall-'));
  });
  afterAll(async () => {
    await stall?.close();
    fs.rmSync(journal, { recursive: true, force: true });
  });

  const head = (planId: string) => stall.head(planId);
  const stalledGauge = async () => {
    const text = await (await fetch(`http://127.0.0.1:${stall.worker.healthPort}/metrics`)).text();
    const line = text.split('\n').find((l) => l.startsWith('plan_ledger_plans_stalled '));
    return line === undefined ? undefined : Number(line.split(' ')[1]);
  };

  it('becomes stalled within its deadline plus one tick, and running again on a late event', async () => {
    const planId = `killed-${kind}`;
    const executor = await startExecutor({ QUEUE_PREFIX: stall.prefix, JOURNAL_DIR: journal, PLAN_ID: planId });
    const lastEventAt = new Date((await head(planId)).updatedAt).getTime();
    executor.child.kill('SIGKILL');
    expect(await executor.exited).toBe('SIGKILL');
    expect((await head(planId)).stalledAt).toBeNull();

    // due STALL_AFTER after its last event; every tick marks each plan past its due time
    // (stall-check.test.ts), so it is marked by the first tick after it (no wall-clock bound asserted)
    expect(new Date((await head(planId)).stallDueAt!).getTime()).toBe(lastEventAt + STALL_AFTER_MS);
    await untilTicked('the plan to be marked stalled', async () => (await head(planId)).stalledAt !== null);
    expect(new Date((await head(planId)).stalledAt!).getTime()).toBeGreaterThanOrEqual(lastEventAt + STALL_AFTER_MS);
    expect(await stalledGauge()).toBe(1);

    // a late event (the executor's replacement finishing the step) makes it running again
    await stall.send(
      ev(planId, 2, 'step.completed', { stepId: 'fetch', inputTokens: 1, outputTokens: 1 }, `session-${planId}`),
    );
    await untilTicked('the late event to clear the stall', async () => (await head(planId)).stalledAt === null);
    const plan = await stall.db.ds
      .getRepository<{ id: string; status: string }>(ENTITY.plan)
      .findOneByOrFail({ id: planId });
    expect(plan.status).toBe('executing');
    expect(await stalledGauge()).toBe(0);
  });

  it("holds a plan while its running step's deadline has not passed", async () => {
    const planId = `long-step-${kind}`;
    const started = Date.now();
    const executor = await startExecutor({
      QUEUE_PREFIX: stall.prefix,
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
    expect(new Date(h.stallDueAt!).getTime()).toBeGreaterThanOrEqual(started + 600_000);
  });
});
