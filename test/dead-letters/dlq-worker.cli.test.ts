/**
 * Dead letters produced by the real worker (in this process), inspected and replayed by the real
 * CLI (child processes), on real Redis and a real PostgreSQL schema. The database "goes down"
 * through a TCP proxy in front of PostgreSQL, so other tests sharing the server are unaffected.
 */
import { randomUUID } from 'node:crypto';
import { runCli } from '../support/cli';
import { createMigratedDb } from '../support/databases';
import { planRun } from '../support/event-factory';
import { loadConfig } from '../../src/config/config';
import type { DeadLetter } from '../../src/dead-letters/dead-letter';
import { EVENT_BATCH_JOB, EventBatchJobData } from '../../src/queue/queue-names';
import { createLogger } from '../../src/shared/logger';
import { startWorker, WorkerHandle } from '../../src/worker';
import { QueueFixture, REDIS_URL, validEvent } from './dead-letter.fixtures';
import { TcpProxy } from './tcp-proxy';

let database: Awaited<ReturnType<typeof createMigratedDb>>;
let proxy: TcpProxy;
let worker: WorkerHandle | undefined;
let q: QueueFixture | undefined;

beforeAll(async () => {
  database = await createMigratedDb('postgres');
  const direct = new URL(database.db.url);
  proxy = new TcpProxy({ host: direct.hostname, port: Number(direct.port || 5432) });
  await proxy.start();
});

afterEach(async () => {
  await worker?.close(5_000);
  worker = undefined;
  await q?.close();
  q = undefined;
  await proxy.start().catch(() => undefined); // back up if a test left it down
});

afterAll(async () => {
  await proxy.stop();
  await database.close();
});

/** Starts a worker whose database connection goes through the proxy. */
async function start(fixture: QueueFixture, retryBudgetMs = 60_000): Promise<WorkerHandle> {
  const viaProxy = new URL(database.db.url);
  viaProxy.port = String(proxy.port);
  worker = await startWorker({
    config: loadConfig({ REDIS_URL, QUEUE_PREFIX: fixture.prefix, DATABASE_URL: viaProxy.toString() }),
    logger: createLogger({ level: 'silent' }),
    retryBackoff: { baseMs: 50, maxMs: 200 },
    settings: { healthPort: null, retryBudgetMs, batchWaitMs: 5 },
  });
  return worker;
}

async function publish(fixture: QueueFixture, events: unknown[]): Promise<void> {
  const data: EventBatchJobData = { v: 1, events };
  await fixture.events.add(EVENT_BATCH_JOB, data, { jobId: `job-${randomUUID()}` });
}

async function until<T>(what: string, probe: () => Promise<T>, ok: (v: T) => boolean, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (ok(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last value: ${JSON.stringify(value)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function storedCount(eventIds: string[]): Promise<number> {
  const rows: Array<{ n: string | number }> = await database.ds.query(
    `SELECT COUNT(*) AS n FROM plan_events WHERE event_id = ANY($1::uuid[])`,
    [eventIds],
  );
  return Number(rows[0].n);
}

/** What the plan tables hold for one plan, to show a second replay changes nothing. */
async function planSnapshot(planId: string): Promise<unknown[]> {
  return Promise.all([
    database.ds.query('SELECT * FROM execution_plans WHERE id = $1', [planId]),
    database.ds.query('SELECT * FROM plan_steps WHERE plan_id = $1 ORDER BY step_index', [planId]),
    database.ds.query('SELECT event_id, recorded_at FROM plan_events ORDER BY event_id'),
  ]);
}

const listJson = async (fixture: QueueFixture, ...args: string[]) => {
  const r = await runCli(['dlq', 'list', '--json', ...args], fixture.env());
  expect(r.code).toBe(0);
  return JSON.parse(r.stdout) as { total: number; deadLetters: DeadLetter[] };
};

describe('dead letters from the real worker', () => {
  it('a poison event shows in dlq list and dlq show with its violations, and fails again when replayed unchanged', async () => {
    q = new QueueFixture();
    await start(q);
    const good = validEvent('plan_poison');
    const poison = validEvent('plan_poison', { seq: 2, payload: { inputTokens: 'many', outputTokens: 20 } });
    await publish(q, [good, poison]);
    await until(
      'the poison dead letter',
      () => q!.deadLetterIds(),
      (ids) => ids.length === 1,
    );

    const list = await listJson(q, '--kind', 'invalid');
    expect(list.total).toBe(1);
    const [dl] = list.deadLetters;
    expect(dl).toMatchObject({
      kind: 'invalid',
      eventId: poison.eventId,
      type: 'step.completed',
      planId: 'plan_poison',
      replayCount: 0,
      event: poison,
    });
    const paths = dl.error.violations!.map((v) => v.path).sort();
    expect(paths).toEqual(['payload.inputTokens', 'payload.stepId']);

    const show = await runCli(['dlq', 'show', dl.id], q.env());
    expect(show.code).toBe(0);
    expect(show.stdout).toContain('kind            invalid');
    expect(show.stdout).toContain('\nviolations:\n');
    for (const v of dl.error.violations!) expect(show.stdout).toContain(`\n  - ${v.message}\n`);
    expect(show.stdout).toContain(`"eventId": "${poison.eventId}"`);
    expect(await storedCount([good.eventId as string])).toBe(1); // its neighbour was not held back

    const replay = await runCli(['dlq', 'replay', dl.id, '--wait', '--json'], q.env({ DATABASE_URL: database.db.url }));
    expect(replay.code).toBe(1);
    expect(replay.stderr).toContain('1 replayed event(s) failed again');
    const summary = JSON.parse(replay.stdout);
    expect(summary).toMatchObject({ selected: 1, replayed: 1, alreadyStored: 0, failedAgain: 1, pending: 0 });
    const again = await listJson(q);
    expect(again.deadLetters).toHaveLength(1);
    expect(again.deadLetters[0]).toMatchObject({
      id: summary.failedAgainIds[0],
      eventId: poison.eventId,
      replayCount: 1,
      source: { jobId: summary.jobIds[0] },
    });
  });

  it('replays events that exhausted their retries while the database was down; a second replay changes nothing', async () => {
    q = new QueueFixture();
    await start(q, 1_500);
    await proxy.stop();
    const events = planRun({ seed: 5150, steps: 3 });
    const planId = events[0].planId;
    const eventIds = events.map((e) => e.eventId);
    await publish(q, events);
    await until(
      'every event dead-lettered',
      () => q!.deadLetterIds(),
      (ids) => ids.length === events.length,
    );
    const dead = await listJson(q);
    expect(dead.deadLetters.every((dl) => dl.kind === 'retries-exhausted')).toBe(true);
    expect(await storedCount(eventIds)).toBe(0);

    await proxy.start();
    const env = q.env({ DATABASE_URL: database.db.url });
    const first = await runCli(['dlq', 'replay', '--kind', 'retries-exhausted', '--wait', '--json'], env);
    expect({ code: first.code, stderr: first.stderr }).toEqual({ code: 0, stderr: '' });
    expect(JSON.parse(first.stdout)).toMatchObject({
      selected: events.length,
      replayed: events.length,
      alreadyStored: 0,
      failedAgain: 0,
      pending: 0,
    });
    expect(await storedCount(eventIds)).toBe(events.length);
    const stats = await runCli(['dlq', 'stats', '--json'], env);
    expect(JSON.parse(stats.stdout)).toMatchObject({ total: 0, oldest: null });
    const after = await planSnapshot(planId);
    expect((after[0] as unknown[]).length).toBe(1);

    const second = await runCli(['dlq', 'replay', '--all'], env);
    expect(second).toMatchObject({ code: 0, stdout: 'no dead letters match; nothing replayed\n' });

    // A replay killed between queueing and removing leaves the dead letters behind: replaying
    // them again must find them stored and change nothing.
    await q.write(...dead.deadLetters);
    const third = await runCli(['dlq', 'replay', '--all', '--wait', '--json'], env);
    expect(third.code).toBe(0);
    expect(JSON.parse(third.stdout)).toMatchObject({
      replayed: events.length,
      alreadyStored: events.length,
      failedAgain: 0,
    });
    expect(await q.deadLetterIds()).toEqual([]);
    expect(await planSnapshot(planId)).toEqual(after);
  });
});
