/**
 * The issue's webhook tests with real processes: `plan-ledger worker` children, real Redis and
 * PostgreSQL, a local receiver that verifies every request with the Standard Webhooks library.
 * - 1,000 plans finalized while the worker is kill -9'd every 2 s: every plan.finalized arrives at
 *   least once, the copies of one share a webhook-id, every signature verifies.
 * - The receiver down (its port closed) for 60 s: deliveries resume and none is lost.
 */
import type IORedis from 'ioredis';
import type { PlanEvent } from '../../src/contracts';
import { addSubscription, newSecret } from '../../src/webhooks/webhook-subscriptions';
import { createMigratedDb } from '../support/databases';
import { planRun, toJobData } from '../support/event-factory';
import {
  countRows,
  queueCounts,
  dropPrefix,
  openRedis,
  publish,
  REDIS_URL,
  uniquePrefix,
  waitFor,
} from '../worker/helpers/queue-harness';
import { spawnWorker, stopProcess, WorkerProcess } from '../worker/helpers/worker-process';
import { Receiver } from './receiver';

// a worker process starts in seconds on an idle machine, in a minute or more on a loaded one
jest.setTimeout(1_200_000);
const START_MS = 300_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function plans(from: number, count: number): { events: PlanEvent[]; planIds: string[] } {
  const events: PlanEvent[] = [];
  const planIds: string[] = [];
  for (let seed = from; seed < from + count; seed++) {
    const run = planRun({ seed, steps: 2, failAt: seed % 10 === 0 ? 0 : undefined });
    planIds.push(run[0].planId);
    events.push(...run);
  }
  return { events, planIds };
}

describe('webhooks with real worker processes on PostgreSQL', () => {
  let redis: IORedis;
  const procs: WorkerProcess[] = [];
  const prefixes: string[] = [];
  const closers: (() => Promise<void>)[] = [];
  const secret = newSecret();

  const worker = (env: Record<string, string>) => {
    const p = spawnWorker({
      REDIS_URL,
      // long enough that a live worker on a loaded machine keeps its jobs; a killed one's come back after it
      WORKER_LOCK_MS: '10000',
      WEBHOOKS_ALLOW_PRIVATE: '127.0.0.1',
      WEBHOOKS_TIMEOUT_MS: '1000',
      WEBHOOKS_LEASE_MS: '3000',
      WEBHOOKS_BACKOFF_BASE_MS: '100',
      WEBHOOKS_BACKOFF_MAX_MS: '2000',
      WEBHOOKS_MAX_ATTEMPTS: '1000',
      ...env,
    });
    procs.push(p);
    return p;
  };

  beforeAll(() => {
    redis = openRedis();
  });
  afterAll(async () => {
    for (const p of procs) await stopProcess(p);
    for (const p of prefixes) await dropPrefix(redis, p);
    for (const close of closers) await close();
    await redis.quit();
  });

  it("1,000 plans finalized while the worker is kill -9'd every 2 s: each plan.finalized arrives, copies share a webhook-id, all verify", async () => {
    const db = await createMigratedDb('postgres');
    closers.push(() => db.close());
    const receiver = await Receiver.start(secret);
    closers.push(() => receiver.close());
    await addSubscription(db.ds, { url: receiver.url, eventTypes: 'plan.finalized', secret });
    const prefix = uniquePrefix('whkill');
    prefixes.push(prefix);
    const { events, planIds } = plans(1, 1_000);
    const env = { DATABASE_URL: db.db.url, QUEUE_PREFIX: prefix };
    // published in ten parts a second apart, so kills land while events are stored and while webhooks are sent
    const jobs = toJobData(events, 25);
    const publishing = (async () => {
      for (let i = 0; i < 10; i++) {
        await publish(redis, prefix, jobs.slice((i * jobs.length) / 10, ((i + 1) * jobs.length) / 10));
        await sleep(1_000);
      }
    })();
    let kills = 0;
    let killedWithDeliveriesOwed = 0;
    // the next worker starts while the current one runs, so a kill comes 2 s after each start
    let next = worker(env);
    for (let round = 0; round < 5; round++) {
      const w = next;
      await w.waitForLog('worker started', START_MS);
      next = worker(env);
      await sleep(2_000);
      w.child.kill('SIGKILL');
      expect(await w.exited).toBe('SIGKILL');
      kills++;
      if (receiver.idsOf('plan.finalized').size < 1_000) killedWithDeliveriesOwed++;
    }
    await publishing;
    const last = next;
    await waitFor(
      'every plan.finalized delivered',
      () => new Set(receiver.got.map((r) => r.data.planId)).size >= 1_000,
      600_000,
      200,
    ).catch(async (err: Error) => {
      // what an operator would look at: the queue, the outbox, what arrived
      const outbox = await db.ds.query('SELECT status, COUNT(*) AS n FROM webhook_deliveries GROUP BY status');
      const stored = await db.ds.query("SELECT COUNT(*) AS n FROM plan_events WHERE type = 'plan.finalized'");
      const queue = await queueCounts(redis, prefix);
      const got = new Set(receiver.got.map((r) => r.data.planId)).size;
      throw new Error(
        `${err.message}: ${got} plans' webhooks received; outbox ${JSON.stringify(outbox)}; plan.finalized stored ${JSON.stringify(stored)}; queue ${JSON.stringify(queue)}`,
      );
    });
    last.child.kill('SIGTERM');
    expect(await last.exited).toBe(0);

    expect(kills).toBe(5);
    expect(killedWithDeliveriesOwed).toBeGreaterThan(0);
    expect(receiver.unverified).toBe(0);
    expect([...new Set(receiver.got.map((r) => String(r.data.planId)))].sort()).toEqual([...planIds].sort());
    // copies of one plan's webhook (sent, then the worker died before recording it) share its webhook-id
    const idsByPlan = new Map<string, Set<string>>();
    for (const r of receiver.got) {
      const set = idsByPlan.get(String(r.data.planId)) ?? new Set<string>();
      set.add(r.id);
      idsByPlan.set(String(r.data.planId), set);
    }
    expect([...idsByPlan.values()].filter((s) => s.size !== 1)).toEqual([]);
    // the outbox holds one row per finalized plan, however often its events were redelivered
    expect(await countRows(db.ds, 'webhook_deliveries')).toBe(1_000);
  });

  it('the receiver down for 60 s: deliveries resume when it is back, none is lost', async () => {
    const db = await createMigratedDb('postgres');
    closers.push(() => db.close());
    let receiver = await Receiver.start(secret);
    const port = receiver.port;
    await addSubscription(db.ds, { url: receiver.url, eventTypes: 'plan.finalized,plan.failed', secret });
    const prefix = uniquePrefix('whdown');
    prefixes.push(prefix);
    const w = worker({ DATABASE_URL: db.db.url, QUEUE_PREFIX: prefix });
    await w.waitForLog('worker started', START_MS);
    const before = plans(5_001, 50);
    await publish(redis, prefix, toJobData(before.events, 25));
    await waitFor('the first 50 delivered', () => receiver.idsOf('plan.finalized').size >= 50, 60_000, 100);
    const firstGot = [...receiver.got];
    await receiver.close(); // down: connections refused
    const during = plans(6_001, 200);
    await publish(redis, prefix, toJobData(during.events, 25));
    await waitFor(
      'the events stored meanwhile',
      async () => (await countRows(db.ds, 'webhook_deliveries')) >= 50 + 5 + 200 + 20,
      60_000,
      200,
    );
    await sleep(60_000);
    const [failedMeanwhile] = await db.ds.query(
      "SELECT COUNT(*) AS n FROM webhook_deliveries WHERE status = 'pending' AND attempts > 0",
    );
    expect(Number(failedMeanwhile.n)).toBeGreaterThan(0);
    receiver = await Receiver.start(secret, port);
    closers.push(() => receiver.close());
    await waitFor(
      'the 200 delivered after the outage',
      () => receiver.idsOf('plan.finalized').size >= 200,
      60_000,
      200,
    );
    await waitFor(
      'every delivery recorded as delivered',
      async () => {
        const [row] = await db.ds.query("SELECT COUNT(*) AS n FROM webhook_deliveries WHERE status <> 'delivered'");
        return Number(row.n) === 0;
      },
      30_000,
      200,
    );
    w.child.kill('SIGTERM');
    expect(await w.exited).toBe(0);
    const all = [...firstGot, ...receiver.got];
    expect(receiver.unverified).toBe(0);
    const finalizedPlans = new Set(all.filter((r) => r.type === 'plan.finalized').map((r) => String(r.data.planId)));
    expect([...finalizedPlans].sort()).toEqual([...before.planIds, ...during.planIds].sort());
    // 1 in 10 plans fails: its plan.failed arrives too
    const failedPlans = new Set(all.filter((r) => r.type === 'plan.failed').map((r) => String(r.data.planId)));
    expect(failedPlans.size).toBe(25);
    const [dead] = await db.ds.query("SELECT COUNT(*) AS n FROM webhook_deliveries WHERE status = 'dead'");
    expect(Number(dead.n)).toBe(0);
  });
});
