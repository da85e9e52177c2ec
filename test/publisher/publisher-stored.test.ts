/**
 * Read your own writes from TypeScript: `publisher.stored()` resolves once the events accepted so
 * far are stored by a worker. Real Redis, a real worker, a real SQLite database.
 */
import { execFile } from 'node:child_process';
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

  describe('across publishers on one journal directory (a restarted executor)', () => {
    const opened = () =>
      new PlanEventPublisher({ redisUrl: REDIS_URL, queuePrefix: prefix, journalDir, logger: silentLogger() });

    it("B.stored() covers what A sent before it closed: a read right after sees A's plan, 20 times of 20", async () => {
      await publisher.close(5_000); // the directory is A's, then B's
      await startOne();
      for (let round = 0; round < 20; round++) {
        const a = opened();
        const events = planRun({ seed: 900 + round, steps: 4 });
        for (const e of events) expect(a.publish(e).ok).toBe(true);
        expect((await a.close(10_000)).flushed).toBe(true);
        const b = opened();
        try {
          expect(await b.stored(30_000)).toBe(true);
          expect({ round, stored: await storedOf(events[0].planId) }).toEqual({ round, stored: events.length });
        } finally {
          await b.close(5_000);
        }
      }
      expect(fs.readdirSync(journalDir)).not.toContain('unconfirmed-jobs'); // all seen finished, nothing kept
    });

    it('holds across a process boundary: A is a process that published and exited', async () => {
      await publisher.close(5_000);
      await startOne();
      const script = path.join(__dirname, 'support', 'publish-and-exit.ts');
      const out = await new Promise<string>((resolve, reject) =>
        execFile(
          process.execPath,
          ['-r', 'tsx/cjs', script, REDIS_URL, prefix, journalDir, '950'],
          { cwd: path.join(__dirname, '..', '..') },
          (err, stdout) => (err ? reject(err) : resolve(stdout)),
        ),
      );
      const a = JSON.parse(out) as { planId: string; events: number; flushed: boolean };
      expect(a.flushed).toBe(true);
      const b = opened();
      try {
        expect(await b.stored(30_000)).toBe(true);
        expect(await storedOf(a.planId)).toBe(a.events);
      } finally {
        await b.close(5_000);
      }
    });
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
