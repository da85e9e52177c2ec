/**
 * A Redis at `maxmemory` (noeviction) refuses writes, BullMQ's moves of a job included. Completed
 * jobs keep no data (their events are in the database), and a worker that meets Redis's OOM error
 * frees what the queue holds beyond its work, so it starts and drains on a full Redis.
 * A redis-server of our own with a small maxmemory; the shared one is never touched.
 */
import IORedis from 'ioredis';
import { Queue } from 'bullmq';
import { loadConfig } from '../../src/config/config';
import { DEFAULT_JOB_OPTIONS } from '../../src/publisher/publisher-options';
import { EVENT_BATCH_JOB, EVENTS_QUEUE } from '../../src/queue/queue-names';
import { startWorker, WorkerHandle } from '../../src/worker';
import { createMigratedDb } from '../support/databases';
import { manyPlanRuns, toJobData } from '../support/event-factory';
import { RedisProcess } from '../publisher/support/redis-process';
import { countRows, silentLogger, uniquePrefix, waitFor } from './helpers/queue-harness';
import { spawnWorker, stopProcess } from './helpers/worker-process';
import type { PlanEvent } from '../../src/contracts';

const MAXMEMORY = 12 * 1024 * 1024;

/** Events with ~1 KB of output each, so that a few hundred jobs fill the small Redis. */
function heavyEvents(total: number, seed: number): PlanEvent[] {
  return manyPlanRuns(total, { seed, steps: 4 }).map((e) =>
    e.type === 'step.completed'
      ? ({ ...e, payload: { ...e.payload, outputContent: 'x'.repeat(4_000) } } as PlanEvent)
      : e,
  );
}

/**
 * Adds each job, waiting out Redis's OOM refusals (as the publisher does, minus its journal); false if Redis never
 * took them.
 */
async function addAll(queue: Queue, jobs: ReturnType<typeof toJobData>, untilMs: number): Promise<boolean> {
  for (let i = 0; i < jobs.length; i++) {
    for (;;) {
      try {
        await queue.add(EVENT_BATCH_JOB, jobs[i], { ...DEFAULT_JOB_OPTIONS, jobId: `full-${i}` });
        break;
      } catch (err) {
        if (!/OOM/.test(String((err as Error).message))) throw err;
        if (Date.now() > untilMs) return false;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }
  return true;
}

/** Adds each job with the publisher's options and ids `<idPrefix>-<i>`, while Redis has room. */
async function addJobs(queue: Queue, jobs: ReturnType<typeof toJobData>, idPrefix: string): Promise<void> {
  for (const [i, data] of jobs.entries())
    await queue.add(EVENT_BATCH_JOB, data, { ...DEFAULT_JOB_OPTIONS, jobId: `${idPrefix}-${i}` });
}

/** Events the jobs carry. */
const eventsIn = (jobs: ReturnType<typeof toJobData>) => jobs.reduce((n, d) => n + d.events.length, 0);

describe('worker on a full Redis (maxmemory, noeviction)', () => {
  let redis: RedisProcess;
  let client: IORedis;
  let db: Awaited<ReturnType<typeof createMigratedDb>>;
  let worker: WorkerHandle | undefined;
  const queues: Queue[] = [];
  /**
   * The events queue under `prefix`, closed after the file; the later tests stop Redis under it, so its connection
   * errors are expected (without a listener BullMQ prints each one).
   */
  const openQueue = (prefix: string): Queue => {
    const queue = new Queue(EVENTS_QUEUE, { connection: client, prefix });
    queue.on('error', () => undefined);
    queues.push(queue);
    return queue;
  };

  beforeAll(async () => {
    redis = await RedisProcess.create();
    await redis.start();
    client = new IORedis(redis.url, { maxRetriesPerRequest: null });
    await client.config('SET', 'maxmemory', String(MAXMEMORY));
    db = await createMigratedDb('postgres');
  });
  afterAll(async () => {
    await worker?.close();
    for (const q of queues) await q.close();
    await client?.quit();
    await redis?.destroy();
    await db?.close();
  });

  const usedMemory = async () => Number(/used_memory:(\d+)/.exec(await client.info('memory'))![1]);
  /** maxmemory just under what Redis holds now: every write is refused from here on. */
  const overMaxmemory = async () => client.config('SET', 'maxmemory', String((await usedMemory()) - 256 * 1024));

  const start = (prefix: string) =>
    startWorker({
      config: loadConfig({ REDIS_URL: redis.url, QUEUE_PREFIX: prefix, DATABASE_URL: db.db.url }),
      dataSource: db.ds,
      logger: silentLogger(),
      settings: { healthPort: null, concurrency: 4 },
    });

  it('keeps no payload once a job completes, and drains more events than maxmemory could ever hold', async () => {
    const prefix = uniquePrefix('full');
    const queue = openQueue(prefix);
    const events = heavyEvents(12_000, 81); // ~30 MB of event data through a 12 MB Redis
    worker = await start(prefix);
    expect(await addAll(queue, toJobData(events, 200), Date.now() + 120_000)).toBe(true);
    expect(await worker.idle(120_000)).toBe(true);
    expect(await countRows(db.ds, 'plan_events')).toBe(events.length);
    expect(await queue.getJobCounts('completed', 'wait', 'active')).toEqual({ completed: 0, wait: 0, active: 0 });
    await worker.close();
    worker = undefined;
  });

  it('starts on a Redis already over maxmemory, full of completed jobs with their data (older publishers), and drains it', async () => {
    const prefix = uniquePrefix('full2');
    const queue = openQueue(prefix);
    const before = await countRows(db.ds, 'plan_events');
    await client.config('SET', 'maxmemory', '0');
    const baseline = await usedMemory();
    // what an older publisher left: completed jobs that kept their 200 events each...
    let added = 0;
    for (const [i, data] of toJobData(heavyEvents(8_000, 82), 200).entries()) {
      if ((await usedMemory()) > baseline + 5 * 1024 * 1024) break;
      const job = await queue.add(EVENT_BATCH_JOB, data, { jobId: `old-${i}` });
      await client.eval(
        `redis.call('LREM', KEYS[1], 0, ARGV[1]); redis.call('ZADD', KEYS[2], 1, ARGV[1])`,
        2,
        queue.keys.wait,
        queue.keys.completed,
        job.id!,
      );
      added++;
    }
    // ...then a backlog, and Redis found over its maxmemory (noeviction): every write is refused
    const backlog = toJobData(heavyEvents(4_000, 83), 200);
    await addJobs(queue, backlog, 'new');
    await overMaxmemory();
    try {
      await expect(client.set('probe', 'x')).rejects.toThrow(/OOM command not allowed/);
      expect(added).toBeGreaterThan(5);

      worker = await start(prefix);
      expect(await worker.idle(60_000)).toBe(true);
      expect(await countRows(db.ds, 'plan_events')).toBe(before + eventsIn(backlog));
      expect(await queue.getJobCounts('wait', 'completed')).toEqual({ wait: 0, completed: 0 });
    } finally {
      await client.config('SET', 'maxmemory', String(MAXMEMORY));
    }
  }, 150_000);

  it('plan-ledger worker (the CLI, retention scheduler included) starts on a Redis over maxmemory, drains it and exits 0', async () => {
    const prefix = uniquePrefix('full3');
    const queue = openQueue(prefix);
    const before = await countRows(db.ds, 'plan_events');
    await client.config('SET', 'maxmemory', '0');
    // completed jobs an older publisher left with their data (what a relief can free), then a backlog
    for (const [i, data] of toJobData(heavyEvents(2_000, 85), 200).entries()) {
      const job = await queue.add(EVENT_BATCH_JOB, data, { jobId: `old-${i}` });
      await client.eval(
        `redis.call('LREM', KEYS[1], 0, ARGV[1]); redis.call('ZADD', KEYS[2], 1, ARGV[1])`,
        2,
        queue.keys.wait,
        queue.keys.completed,
        job.id!,
      );
    }
    const backlog = toJobData(heavyEvents(2_000, 84), 200);
    await addJobs(queue, backlog, 'cli');
    await overMaxmemory();
    const cli = spawnWorker({ REDIS_URL: redis.url, QUEUE_PREFIX: prefix, DATABASE_URL: db.db.url });
    try {
      await expect(client.set('probe', 'x')).rejects.toThrow(/OOM command not allowed/);
      await cli.waitForLog('worker started', 40_000);
      const total = before + eventsIn(backlog);
      await waitFor('the backlog stored', async () => (await countRows(db.ds, 'plan_events')) === total, 40_000).catch(
        (err) => {
          throw new Error(`${(err as Error).message}\n${cli.stdout().slice(-3000)}\n${cli.stderr()}`);
        },
      );
      cli.child.kill('SIGTERM');
      expect(await cli.exited).toBe(0);
    } finally {
      await stopProcess(cli);
      await client.config('SET', 'maxmemory', String(MAXMEMORY));
    }
  }, 150_000);

  it('a Redis full of data the worker cannot free: it waits between fetches, logs each kind of refusal once (with a count), and drains once Redis has room', async () => {
    const prefix = uniquePrefix('full4');
    const queue = openQueue(prefix);
    const before = await countRows(db.ds, 'plan_events');
    await client.config('SET', 'maxmemory', '0');
    const backlog = toJobData(manyPlanRuns(300, { seed: 86 }), 100);
    await addJobs(queue, backlog, 'junk');
    // another application's keys fill Redis: nothing of the queue's is there to free
    await client.eval(
      `for i = 1, 2000 do redis.call('SET', KEYS[1] .. i, string.rep('x', 1000)) end`,
      1,
      `${prefix}-other:`,
    );
    await overMaxmemory();
    const cli = spawnWorker({ REDIS_URL: redis.url, QUEUE_PREFIX: prefix, DATABASE_URL: db.db.url });
    try {
      await expect(client.set('probe', 'x')).rejects.toThrow(/OOM command not allowed/);
      await cli.waitForLog('worker started', 40_000);
      await new Promise((r) => setTimeout(r, 3_000)); // refused fetch after refused fetch
      expect(await countRows(db.ds, 'plan_events')).toBe(before);
      // before: BullMQ fetched again at once, ~5,000 refused scripts and log lines a second
      const errorsWhileFull = cli.logs().filter((l) => l.msg === 'worker error');
      expect(errorsWhileFull.length).toBeGreaterThan(0);
      expect(errorsWhileFull.length).toBeLessThanOrEqual(5);
      // the operator frees memory: the next try goes through
      await client.eval(`for i = 1, 2000 do redis.call('DEL', KEYS[1] .. i) end`, 1, `${prefix}-other:`);
      const total = before + eventsIn(backlog);
      await waitFor(
        'the backlog stored once Redis had room',
        async () => (await countRows(db.ds, 'plan_events')) === total,
        30_000,
      );
      cli.child.kill('SIGTERM');
      expect(await cli.exited).toBe(0);
      const repeated = cli.logs().filter((l) => l.msg === 'worker error (repeated)');
      expect(repeated.reduce((n, l) => n + (l.repeated as number), 0)).toBeGreaterThan(0);
      // an ioredis error's command is named, not quoted: no BullMQ script source, no job data
      const lines = cli.stdout().split('\n');
      expect(lines.filter((l) => l.length > 4_000)).toEqual([]);
      expect(cli.logs().find((l) => l.msg === 'worker error')).toMatchObject({
        err: { command: { name: expect.stringMatching(/^eval/), args: expect.any(Number) } },
      });
    } finally {
      await stopProcess(cli);
      await client.config('SET', 'maxmemory', String(MAXMEMORY));
    }
  }, 150_000);

  // last in this file: it stops this file's Redis (and starts an empty one on the same port)
  it('Redis down for 5 s: each client logs its connection error once (the rest counted), and the worker goes on after', async () => {
    const prefix = uniquePrefix('down');
    const cli = spawnWorker({ REDIS_URL: redis.url, QUEUE_PREFIX: prefix, DATABASE_URL: db.db.url });
    try {
      await cli.waitForLog('worker started', 40_000);
      await redis.stop();
      await new Promise((r) => setTimeout(r, 5_000)); // every client reconnects, and fails, again and again
      await redis.start();
      await client.config('SET', 'maxmemory', String(MAXMEMORY));
      const queue = openQueue(prefix);
      const before = await countRows(db.ds, 'plan_events');
      const jobs = toJobData(manyPlanRuns(100, { seed: 87 }), 50);
      await addJobs(queue, jobs, 'down');
      await waitFor(
        'the events published after the outage stored',
        async () => (await countRows(db.ds, 'plan_events')) === before + eventsIn(jobs),
        30_000,
      ).catch((err) => {
        throw new Error(`${(err as Error).message}\n${cli.stdout().slice(-4000)}\n${cli.stderr()}`);
      });
      cli.child.kill('SIGTERM');
      expect(await cli.exited).toBe(0);
      // a kind of error is its log message and the error's own message (a refused connection, a
      // closed one): each kind is logged once per 10 s window, the rest counted
      const perKind = new Map<string, number>();
      for (const l of cli.logs())
        if ((l.level as number) >= 40) {
          // the error's message: on a first line in `err`, on a "(repeated)" count in `message`
          const message = (l.err as { message?: unknown } | undefined)?.message ?? l.message ?? '';
          const kind = `${String(l.msg)} | ${String(message)}`;
          perKind.set(kind, (perKind.get(kind) ?? 0) + 1);
        }
      const messages = [...perKind.keys()].map((k) => k.split(' | ')[0]);
      // before: each of these once per reconnection attempt, 6 to 12 times in 5 s
      // once, or twice if the outage outlasts a 10 s window on a slow machine
      expect(messages).toContain('events queue connection error');
      for (const [kind, n] of perKind) expect({ kind, n: Math.min(n, 2) }).toEqual({ kind, n });
      expect(messages.filter((m) => m.endsWith('(repeated)')).length).toBeGreaterThan(0);
    } finally {
      await stopProcess(cli);
      if (!redis.isRunning) await redis.start();
    }
  }, 150_000);

  // stops this file's Redis too
  it('SIGTERM while Redis is down and no job is in flight: exits 0 at the deadline, says nothing is handed back, and sums up each repeated error', async () => {
    await client.config('SET', 'maxmemory', String(MAXMEMORY));
    const prefix = uniquePrefix('downstop');
    const cli = spawnWorker({
      REDIS_URL: redis.url,
      QUEUE_PREFIX: prefix,
      DATABASE_URL: db.db.url,
      SHUTDOWN_TIMEOUT_MS: '1500',
    });
    try {
      await cli.waitForLog('worker started', 40_000);
      await redis.stop();
      await cli.waitForLog('events queue connection error', 20_000);
      await new Promise((r) => setTimeout(r, 2_500)); // reconnection attempts, about one a second: counted, not logged
      cli.child.kill('SIGTERM');
      // before: exit 1 and "unfinished jobs will be redelivered", with none in flight
      expect(await cli.exited).toBe(0);
      expect(cli.stderr()).toContain(
        'reached with no job in flight; the Redis connections were dropped (is Redis reachable?)',
      );
      expect(cli.stderr()).not.toContain('redelivered');
      const logs = cli.logs();
      expect(logs.find((l) => l.msg === 'worker closed')).toMatchObject({ clean: false, unfinishedJobs: 0 });
      // the 10 s windows were still open at the signal: their counts come out at shutdown (before: lost)
      const closing = logs.findIndex((l) => l.msg === 'signal received: shutting down');
      const summed = logs.slice(closing).filter((l) => String(l.msg).endsWith('(repeated)'));
      expect(summed.map((l) => l.msg)).toContain('events queue connection error (repeated)');
      for (const l of summed) expect(l.repeated).toBeGreaterThan(0);
      // and each kind (the error's message: a reset of the open connection, then refused reconnections) is logged whole once
      const whole = logs.filter((l) => l.msg === 'events queue connection error');
      const kinds = whole.map((l) => (l.err as { message?: string } | undefined)?.message);
      expect(whole.length).toBeGreaterThanOrEqual(1);
      expect(new Set(kinds).size).toBe(kinds.length);
    } finally {
      await stopProcess(cli);
      if (!redis.isRunning) await redis.start();
    }
  }, 60_000);
});
