/**
 * `plan-ledger serve` with QUEUE_SHARDS: the HTTP API's publisher (and so the Python client's path)
 * routes each event to the shard of its plan, the console's health has a row per shard, and a
 * worker of the same QUEUE_SHARDS stores everything. Real Redis, real SQLite.
 */
import { Queue } from 'bullmq';
import { EVENTS_QUEUE, EventBatchJobData } from '../../src/queue/queue-names';
import { queueShards, shardOfPlan } from '../../src/queue/queue-shards';
import { startWorker } from '../../src/worker';
import { loadConfig } from '../../src/config/config';
import { manyPlanRuns } from '../support/event-factory';
import { countRows, openRedis, REDIS_URL, silentLogger, waitFor } from '../worker/helpers/queue-harness';
import { ApiStack, call, startApiStack } from './http-harness';

jest.setTimeout(90_000);

describe('plan-ledger serve with QUEUE_SHARDS=3', () => {
  let stack: ApiStack;
  beforeAll(async () => {
    stack = await startApiStack('sqlite', { worker: false, appEnv: { QUEUE_SHARDS: '3' } });
  });
  afterAll(async () => stack?.close());

  it('routes every event to the queue of its plan; the health view counts each shard; a worker stores them all', async () => {
    const events = manyPlanRuns(600, { seed: 19 });
    for (let i = 0; i < events.length; i += 200) {
      const res = await call(stack, 'POST', '/v1/events', { body: events.slice(i, i + 200) });
      expect(res.status).toBe(202);
    }
    expect(await stack.server.flush(10_000)).toBe(true);
    const redis = openRedis();
    const waiting: number[] = [];
    try {
      for (const shard of queueShards(stack.prefix, 3)) {
        const queue = new Queue<EventBatchJobData>(EVENTS_QUEUE, { connection: redis, prefix: shard.prefix });
        const jobs = await queue.getJobs(['wait'], 0, -1);
        await queue.close();
        let n = 0;
        for (const job of jobs)
          for (const e of job.data.events as Array<{ planId: string }>) {
            expect(shardOfPlan(e.planId, 3)).toBe(shard.index);
            n++;
          }
        expect(n).toBe(events.filter((e) => shardOfPlan(e.planId, 3) === shard.index).length);
        waiting.push(jobs.length);
      }
    } finally {
      redis.disconnect();
    }
    const health = await call(stack, 'GET', '/v1/health?minutes=1');
    expect(health.status).toBe(200);
    expect(health.json.shards.map((s: { shard: string; waiting: number }) => [s.shard, s.waiting])).toEqual([
      ['0', waiting[0]],
      ['1', waiting[1]],
      ['2', waiting[2]],
    ]);
    expect(health.json.queue.waiting).toBe(waiting[0] + waiting[1] + waiting[2]);

    const worker = await startWorker({
      config: loadConfig({ REDIS_URL, QUEUE_PREFIX: stack.prefix, QUEUE_SHARDS: '3', DATABASE_URL: stack.db.db.url }),
      dataSource: stack.db.ds,
      logger: silentLogger(),
      settings: { healthPort: null },
    });
    try {
      await waitFor('every event stored', async () => (await countRows(stack.db.ds, 'plan_events')) >= events.length);
      expect(await countRows(stack.db.ds, 'plan_events')).toBe(events.length);
    } finally {
      await worker.close(10_000);
    }
  });
});
