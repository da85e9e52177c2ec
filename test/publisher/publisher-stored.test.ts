/**
 * Read your own writes from TypeScript: `publisher.stored()` resolves once the events accepted so
 * far are stored by a worker. Real Redis, a real worker, a real SQLite database.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { loadConfig } from '../../src/config/config';
import { PlanEventPublisher } from '../../src/publisher';
import { startWorker, WorkerHandle } from '../../src/worker';
import { createMigratedDb } from '../support/databases';
import { planRun } from '../support/event-factory';
import { dropPrefix, openRedis, REDIS_URL, silentLogger, uniquePrefix } from '../worker/helpers/queue-harness';
import { freePort } from './support/redis-process';

jest.setTimeout(60_000);

describe('PlanEventPublisher.stored()', () => {
  let db: Awaited<ReturnType<typeof createMigratedDb>>;
  let prefix: string;
  let journalDir: string;
  let publisher: PlanEventPublisher;
  let worker: WorkerHandle | undefined;

  beforeAll(async () => {
    db = await createMigratedDb('sqlite');
  });
  beforeEach(() => {
    prefix = uniquePrefix('stored');
    journalDir = fs.mkdtempSync(path.join(os.tmpdir(), 'pl-stored-'));
    publisher = new PlanEventPublisher({
      redisUrl: REDIS_URL,
      queuePrefix: prefix,
      journalDir,
      logger: silentLogger(),
    });
  });
  afterEach(async () => {
    await publisher.close(5_000);
    await worker?.close(10_000);
    worker = undefined;
    const redis = openRedis();
    await dropPrefix(redis, prefix);
    redis.disconnect();
    fs.rmSync(journalDir, { recursive: true, force: true });
  });
  afterAll(async () => db.close());

  const startOne = async () => {
    worker = await startWorker({
      config: loadConfig({ REDIS_URL, QUEUE_PREFIX: prefix, DATABASE_URL: db.db.url }),
      dataSource: db.ds,
      logger: silentLogger(),
      settings: { healthPort: null },
    });
  };
  const storedOf = async (planId: string) =>
    Number((await db.ds.query(`SELECT COUNT(*) AS n FROM plan_events WHERE plan_id = '${planId}'`))[0].n);

  it('resolves true once a worker stored every event accepted before the call: a read right after sees them all', async () => {
    await startOne();
    const events = planRun({ seed: 81, steps: 5 });
    for (const e of events) expect(publisher.publish(e).ok).toBe(true);
    expect(await publisher.stored(30_000)).toBe(true);
    expect(await storedOf(events[0].planId)).toBe(events.length);
  });

  it('says false while no worker has taken the jobs, and true once one has', async () => {
    const events = planRun({ seed: 82, steps: 3 });
    for (const e of events) publisher.publish(e);
    expect(await publisher.stored(300)).toBe(false);
    expect(await storedOf(events[0].planId)).toBe(0);
    await startOne();
    expect(await publisher.stored(30_000)).toBe(true);
    expect(await storedOf(events[0].planId)).toBe(events.length);
  });

  it('says false while Redis is unreachable (the events wait in the journal), and never throws', async () => {
    const down = new PlanEventPublisher({
      redisUrl: `redis://127.0.0.1:${await freePort()}`,
      queuePrefix: prefix,
      journalDir: fs.mkdtempSync(path.join(os.tmpdir(), 'pl-stored-down-')),
      logger: silentLogger(),
    });
    try {
      down.publish(planRun({ seed: 83, steps: 1 })[0]);
      await expect(down.stored(300)).resolves.toBe(false);
    } finally {
      await down.close(1_000);
    }
  });
});
