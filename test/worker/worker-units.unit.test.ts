import { ConfigError } from '../../src/config/config';
import { backoffDelay } from '../../src/shared/backoff';
import { DatabaseGate } from '../../src/worker/database-gate';
import { MicroBatcher } from '../../src/worker/micro-batcher';
import { eventLane } from '../../src/worker/session-lane';
import { AdaptiveConcurrency } from '../../src/worker/adaptive-concurrency';
import { DEFAULT_WORKER_CONFIG, loadWorkerConfig, WORKER_ENV_HELP } from '../../src/worker/worker-config';
import { WorkerState } from '../../src/worker/worker-state';
import { deadLetterId } from '../../src/dead-letters/dead-letter-writer';
import { createLogger } from '../../src/shared/logger';

describe('loadWorkerConfig', () => {
  it('uses the documented defaults', () => {
    expect(loadWorkerConfig({})).toEqual(DEFAULT_WORKER_CONFIG);
    expect(DEFAULT_WORKER_CONFIG.retryBudgetMs).toBeGreaterThanOrEqual(600_000);
    for (const [name] of WORKER_ENV_HELP) expect(name).toMatch(/^[A-Z_]+$/);
  });

  it('reads every variable, and HEALTH_PORT=off disables the server', () => {
    expect(
      loadWorkerConfig({
        WORKER_CONCURRENCY: '8',
        WORKER_MAX_EVENTS_IN_FLIGHT: '100',
        WORKER_BATCH_SIZE: '500',
        WORKER_BATCH_WAIT_MS: '0',
        WORKER_TRANSACTIONS: '2',
        RETRY_BUDGET_MS: '1000',
        HEALTH_PORT: 'off',
        READY_STALL_SECONDS: '5',
        SHUTDOWN_TIMEOUT_MS: '2000',
        WORKER_LOCK_MS: '5000',
        WORKER_HEAP_GROWING_PERCENT: '0',
        HEALTH_HOST: '127.0.0.1',
        WORKER_GAP_TIMEOUT_MS: '0',
        WORKER_ROW_CACHE_MB: '32',
        STALL_AFTER: '90s',
        STALL_CHECK_EVERY: 'off',
      }),
    ).toEqual({
      concurrency: 8,
      maxEventsInFlight: 100,
      batchSize: 500,
      batchWaitMs: 0,
      transactions: 2,
      retryBudgetMs: 1000,
      healthPort: null,
      healthHost: '127.0.0.1',
      readyStallSeconds: 5,
      shutdownTimeoutMs: 2000,
      lockDurationMs: 5000,
      heapGrowingPercent: 0,
      gapTimeoutMs: 0,
      rowCacheMb: 32,
      stallAfterMs: 90_000,
      stallCheckMs: null,
    });
    expect(loadWorkerConfig({ HEALTH_PORT: '0' }).healthPort).toBe(0);
  });

  it('reads STALL_AFTER and STALL_CHECK_EVERY as durations, and says in one line what a bad one is', () => {
    expect(loadWorkerConfig({})).toMatchObject({ stallAfterMs: 900_000, stallCheckMs: 30_000 });
    expect(loadWorkerConfig({ STALL_AFTER: '2h', STALL_CHECK_EVERY: '500ms' })).toMatchObject({
      stallAfterMs: 7_200_000,
      stallCheckMs: 500,
    });
    expect(() => loadWorkerConfig({ STALL_AFTER: '15' })).toThrow(
      'STALL_AFTER: "15" is not a duration; use a whole number and a unit ms, s, m, h or d (e.g. 15m)',
    );
    expect(() => loadWorkerConfig({ STALL_AFTER: '500ms' })).toThrow('STALL_AFTER: 500ms is outside 1000 ms-30 days');
  });

  it('names every bad variable in one error', () => {
    let error: unknown;
    try {
      loadWorkerConfig({ WORKER_CONCURRENCY: 'many', WORKER_BATCH_SIZE: '0', HEALTH_PORT: '70000' });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toHaveLength(3);
    expect((error as ConfigError).problems).toEqual(
      expect.arrayContaining([
        'WORKER_BATCH_SIZE: 0 is outside 1-50000',
        'HEALTH_PORT: 70000 is outside 0-65535',
        'WORKER_CONCURRENCY: "many" is not an integer',
      ]),
    );
  });
});

describe('AdaptiveConcurrency', () => {
  it('starts as if jobs were big, then keeps about maxEvents events in flight', () => {
    const applied: number[] = [];
    const c = new AdaptiveConcurrency(256, 8000, (n) => applied.push(n));
    expect(c.concurrency).toBe(16); // 8000 / 500 (the publisher's default job size)
    c.observe(2); // a trickle of tiny jobs: open up at once
    expect(c.concurrency).toBe(256);
    for (let i = 0; i < 40; i++) c.observe(1000);
    expect(c.concurrency).toBeLessThanOrEqual(9);
    expect(c.concurrency).toBeGreaterThanOrEqual(8);
    expect(applied[0]).toBe(256);
  });
});

describe('WorkerState', () => {
  it('counts a commit of at least its large-batch size as a burst for the given time only', () => {
    const state = new WorkerState(500);
    expect(state.recentLargeCommit(1_000)).toBe(false);
    state.committed({ events: 499, inserted: 499, duplicates: 0 });
    expect(state.recentLargeCommit(1_000)).toBe(false);
    state.committed({ events: 500, inserted: 400, duplicates: 100 });
    expect(state.recentLargeCommit(1_000)).toBe(true);
    expect(state.recentLargeCommit(0)).toBe(false);
    // without a size, no commit is large
    const plain = new WorkerState();
    plain.committed({ events: 100_000, inserted: 100_000, duplicates: 0 });
    expect(plain.recentLargeCommit(1_000)).toBe(false);
  });
});

describe('backoffDelay', () => {
  it('grows exponentially, is capped, and keeps at least half its step', () => {
    const policy = { baseMs: 100, maxMs: 1000 };
    expect([1, 2, 3, 4, 5, 10].map((n) => backoffDelay(n, policy, () => 0))).toEqual([50, 100, 200, 400, 500, 500]);
    expect([1, 2, 3, 4, 5, 10].map((n) => backoffDelay(n, policy, () => 1))).toEqual([100, 200, 400, 800, 1000, 1000]);
  });
});

describe('deadLetterId', () => {
  it('is stable for one event of one job and differs otherwise', () => {
    const p = { prefix: 'pl', queue: 'plan-events', jobId: '7', index: 0, replayCount: 0 };
    expect(deadLetterId(p)).toBe(deadLetterId({ ...p }));
    expect(deadLetterId(p)).toMatch(/^dl-[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(
      new Set(
        [p, { ...p, index: 1 }, { ...p, jobId: '8' }, { ...p, replayCount: 1 }, { ...p, prefix: 'x' }].map(
          deadLetterId,
        ),
      ).size,
    ).toBe(5);
  });
});

describe('MicroBatcher', () => {
  const make = (over: Partial<ConstructorParameters<typeof MicroBatcher<number, number>>[0]> = {}) => {
    const batches: number[][] = [];
    const batcher = new MicroBatcher<number, number>({
      maxEvents: 10,
      maxWaitMs: 30,
      maxEntries: 100,
      lanes: 1,
      write: async (entries) => {
        batches.push(entries.map((e) => e.events.length));
        return entries.map((e) => ({ ok: true as const, value: e.events.reduce((a, b) => a + b, 0) }));
      },
      ...over,
    });
    return { batcher, batches };
  };

  it('flushes when the events reach the batch size, and each job gets its own result', async () => {
    const { batcher, batches } = make();
    const results = await Promise.all([
      batcher.submit('a', [1, 2, 3, 4]),
      batcher.submit('b', [5, 5, 5, 5, 5, 5]),
      batcher.submit('c', [1]),
    ]);
    expect(results).toEqual([10, 30, 1]);
    expect(batches).toEqual([[4, 6], [1]]);
  });

  it('flushes after the wait when the batch does not fill', async () => {
    const { batcher, batches } = make({ maxWaitMs: 20 });
    const started = Date.now();
    expect(await batcher.submit('a', [1])).toBe(1);
    expect(Date.now() - started).toBeGreaterThanOrEqual(15);
    expect(batches).toEqual([[1]]);
  });

  it('flushes at once when every job the worker may hold is waiting', async () => {
    const { batcher, batches } = make({ maxWaitMs: 60_000, maxEntries: 2 });
    await Promise.all([batcher.submit('a', [1]), batcher.submit('b', [1])]);
    expect(batches).toEqual([[1, 1]]);
  });

  it('never runs more writes at once than allowed, and batches what arrives meanwhile', async () => {
    let running = 0;
    let most = 0;
    const sizes: number[] = [];
    const batcher = new MicroBatcher<number, number>({
      maxEvents: 1000,
      maxWaitMs: 0,
      maxEntries: 1000,
      lanes: 1,
      write: async (entries) => {
        most = Math.max(most, ++running);
        sizes.push(entries.length);
        await new Promise((r) => setTimeout(r, 10));
        running--;
        return entries.map(() => ({ ok: true as const, value: 0 }));
      },
    });
    const all: Promise<number>[] = [];
    for (let i = 0; i < 50; i++) {
      all.push(batcher.submit(String(i), [i]));
      if (i % 10 === 0) await new Promise((r) => setTimeout(r, 3));
    }
    await Promise.all(all);
    expect(most).toBe(1);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(50);
    expect(sizes.length).toBeLessThan(50);
  });

  it('rejects only the jobs whose part of the write failed', async () => {
    const batcher = new MicroBatcher<number, number>({
      maxEvents: 100,
      maxWaitMs: 5,
      maxEntries: 100,
      lanes: 1,
      write: async (entries) =>
        entries.map((e) =>
          e.key === 'bad' ? { ok: false as const, error: new Error('nope') } : { ok: true as const, value: 1 },
        ),
    });
    const [good, bad] = await Promise.allSettled([batcher.submit('good', [1]), batcher.submit('bad', [1])]);
    expect(good).toEqual({ status: 'fulfilled', value: 1 });
    expect(bad).toMatchObject({ status: 'rejected', reason: new Error('nope') });
  });

  it('writes a plan in one lane at a time, other plans in parallel lanes, and merges a job split across lanes', async () => {
    type Ev = { plan: string; n: number };
    const writing = new Set<string>();
    let overlap = 0;
    let parallel = 0;
    let running = 0;
    const batcher = new MicroBatcher<Ev, number>({
      maxEvents: 4,
      maxWaitMs: 0,
      maxEntries: 1000,
      lanes: 3,
      laneOf: (e) => Number(e.plan.slice(1)),
      merge: (parts) => parts.reduce((a, b) => a + b, 0),
      write: async (entries) => {
        const plans = new Set(entries.flatMap((e) => e.events.map((ev) => ev.plan)));
        for (const p of plans) if (writing.has(p)) overlap++;
        for (const p of plans) writing.add(p);
        parallel = Math.max(parallel, ++running);
        await new Promise((r) => setTimeout(r, 5));
        running--;
        for (const p of plans) writing.delete(p);
        return entries.map((e) => ({ ok: true as const, value: e.events.reduce((a, ev) => a + ev.n, 0) }));
      },
    });
    const jobs = Array.from({ length: 30 }, (_, j) =>
      batcher.submit(
        `j${j}`,
        [0, 1, 2, 3, 4, 5].map((p) => ({ plan: `p${p}`, n: j })),
      ),
    );
    const results = await Promise.all(jobs);
    expect(results).toEqual(Array.from({ length: 30 }, (_, j) => 6 * j));
    expect(overlap).toBe(0);
    expect(parallel).toBeGreaterThan(1);
    expect(batcher.size).toBe(0);
  });

  it("the worker's lanes write a session's plans one transaction at a time, other sessions in parallel", async () => {
    type Ev = { planId: string; sessionId: string };
    const writing = new Set<string>();
    let overlap = 0;
    let parallel = 0;
    let running = 0;
    const batcher = new MicroBatcher<Ev, number>({
      maxEvents: 3,
      maxWaitMs: 0,
      maxEntries: 1000,
      lanes: 4,
      laneOf: eventLane,
      merge: (parts) => parts.reduce((a, b) => a + b, 0),
      write: async (entries) => {
        const sessions = new Set(entries.flatMap((e) => e.events.map((ev) => ev.sessionId)));
        for (const s of sessions) if (writing.has(s)) overlap++;
        for (const s of sessions) writing.add(s);
        parallel = Math.max(parallel, ++running);
        await new Promise((r) => setTimeout(r, 5));
        running--;
        for (const s of sessions) writing.delete(s);
        return entries.map((e) => ({ ok: true as const, value: e.events.length }));
      },
    });
    // 8 sessions of 5 plans each, every plan with an event in every job
    const events = Array.from({ length: 40 }, (_, p) => ({ planId: `plan-${p}`, sessionId: `sess-${p % 8}` }));
    const results = await Promise.all(Array.from({ length: 20 }, (_, j) => batcher.submit(`j${j}`, events)));
    expect(results).toEqual(Array.from({ length: 20 }, () => 40));
    expect(overlap).toBe(0);
    expect(parallel).toBeGreaterThan(1);
  });

  it('settles a job split across lanes only when every part has, failing it if one part failed', async () => {
    let lane1Done = false;
    const batcher = new MicroBatcher<number, number>({
      maxEvents: 100,
      maxWaitMs: 0,
      maxEntries: 100,
      lanes: 2,
      laneOf: (e) => e,
      merge: (parts) => parts.reduce((a, b) => a + b, 0),
      write: async (entries) => {
        if (entries[0].events[0] === 0)
          return entries.map(() => ({ ok: false as const, error: new Error('lane 0 failed') }));
        await new Promise((r) => setTimeout(r, 20));
        lane1Done = true;
        return entries.map(() => ({ ok: true as const, value: 1 }));
      },
    });
    await expect(batcher.submit('j', [0, 1])).rejects.toThrow('lane 0 failed');
    expect(lane1Done).toBe(true);
  });

  it('drain() flushes at once and waits for writes in flight', async () => {
    const { batcher, batches } = make({ maxWaitMs: 60_000 });
    const pending = batcher.submit('a', [1]);
    await batcher.drain();
    expect(batches).toEqual([[1]]);
    expect(await pending).toBe(1);
    expect(batcher.size).toBe(0);
  });
});

describe('DatabaseGate', () => {
  const logger = createLogger({ level: 'silent' });

  it('stays up when the probe answers (a deadlock is not an outage)', async () => {
    const calls: string[] = [];
    const gate = new DatabaseGate({
      probe: async () => calls.push('probe'),
      onDown: () => void calls.push('down'),
      onUp: () => void calls.push('up'),
      logger,
    });
    gate.reportFailure(new Error('deadlock'));
    await gate.whenUp(Date.now() + 1000);
    expect(calls).toEqual(['probe']);
    expect(gate.isUp).toBe(true);
  });

  it('pauses once while the database is unreachable, probes with backoff, resumes once, and wakes the waiters', async () => {
    const calls: string[] = [];
    let reachable = false;
    const gate = new DatabaseGate({
      probe: async () => {
        calls.push('probe');
        if (!reachable) throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
      },
      onDown: () => void calls.push('down'),
      onUp: () => void calls.push('up'),
      logger,
      backoff: { baseMs: 10, maxMs: 20 },
    });
    gate.reportFailure(new Error('x'));
    gate.reportFailure(new Error('y')); // already checking: ignored
    await new Promise((r) => setTimeout(r, 80));
    expect(gate.isUp).toBe(false);
    const waiting = gate.whenUp(Date.now() + 5_000);
    reachable = true;
    await waiting;
    expect(gate.isUp).toBe(true);
    expect(calls.filter((c) => c === 'down')).toHaveLength(1);
    expect(calls.filter((c) => c === 'up')).toHaveLength(1);
    expect(calls.filter((c) => c === 'probe').length).toBeGreaterThan(2);
    gate.stop();
  });

  it('whenUp gives up at its deadline', async () => {
    const gate = new DatabaseGate({
      probe: () => Promise.reject(new Error('down')),
      onDown: () => undefined,
      onUp: () => undefined,
      logger,
      backoff: { baseMs: 10, maxMs: 10 },
    });
    gate.reportFailure(new Error('x'));
    const started = Date.now();
    await gate.whenUp(Date.now() + 100);
    expect(Date.now() - started).toBeGreaterThanOrEqual(90);
    expect(gate.isUp).toBe(false);
    gate.stop();
  });
});
