import type IORedis from 'ioredis';
import { randomBytes } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { loadConfig } from '../../src/config/config';
import { parseDatabaseUrl } from '../../src/config/database-url';
import { openDataSource } from '../../src/store/data-source';
import { startWorker, WorkerHandle } from '../../src/worker';
import { createMigratedDb, TestDb } from '../support/databases';
import { planRun, toJobData } from '../support/event-factory';
import {
  countRows,
  dropPrefix,
  openRedis,
  publish,
  queueCounts,
  readDeadLetters,
  REDIS_URL,
  silentLogger,
  uniquePrefix,
  waitFor,
} from './helpers/queue-harness';

/**
 * The breaker: an error no event can cause (a missing table, a permission denied), repeated, pauses
 * the worker with the reason in readiness; no event is dead-lettered, and everything is stored once
 * an operator repairs the database. Real servers, a real least-privilege login.
 */

type Fault = 'missing table' | 'revoked INSERT grant';

interface Setup {
  /** The worker's DataSource (the least-privilege login where there is one). */
  workerDs: DataSource;
  breakIt(): Promise<void>;
  repair(): Promise<void>;
  close(): Promise<void>;
}

const CASES: [TestDb, Fault][] = [
  ['sqlite', 'missing table'],
  ['postgres', 'missing table'],
  ['postgres', 'revoked INSERT grant'],
  ['mariadb', 'missing table'],
  ['mariadb', 'revoked INSERT grant'],
];

const EXPECTED: Record<Fault, RegExp> = {
  'missing table': /standing database fault, missing table, column or function .*plan_events/,
  'revoked INSERT grant': /standing database fault, permission denied .*(plan_events|denied)/,
};

/** A login that may read and write the rows of the test's tables only, as a production worker's. */
async function leastPrivilegeLogin(
  kind: TestDb,
  owner: DataSource,
  url: string,
): Promise<{ url: string; drop(): Promise<void> }> {
  const login = `pl_w_${randomBytes(4).toString('hex')}`;
  const u = new URL(url);
  if (kind === 'postgres') {
    const schema = u.searchParams.get('schema')!;
    await owner.query(`CREATE ROLE "${login}" LOGIN`);
    await owner.query(`GRANT USAGE ON SCHEMA "${schema}" TO "${login}"`);
    await owner.query(`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA "${schema}" TO "${login}"`);
    await owner.query(`GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA "${schema}" TO "${login}"`);
    u.username = login;
    return {
      url: u.toString(),
      drop: async () => {
        await owner.query(`DROP OWNED BY "${login}"`);
        await owner.query(`DROP ROLE "${login}"`);
      },
    };
  }
  // MariaDB: grants on each table, which take effect at once on open connections (a database-wide
  // grant would wait for the connection's next USE)
  const database = u.pathname.slice(1);
  const password = randomBytes(8).toString('hex');
  await owner.query(`CREATE USER '${login}'@'%' IDENTIFIED BY '${password}'`);
  const tables: { name: string }[] = await owner.query(
    `SELECT table_name AS name FROM information_schema.tables WHERE table_schema = ?`,
    [database],
  );
  for (const { name } of tables)
    await owner.query(`GRANT SELECT, INSERT, UPDATE, DELETE ON \`${database}\`.\`${name}\` TO '${login}'@'%'`);
  u.username = login;
  u.password = password;
  return { url: u.toString(), drop: () => owner.query(`DROP USER '${login}'@'%'`) };
}

async function setUp(kind: TestDb, fault: Fault, owner: DataSource, url: string): Promise<Setup> {
  if (fault === 'missing table') {
    const rename = (from: string, to: string) =>
      owner.query(kind === 'mariadb' ? `RENAME TABLE ${from} TO ${to}` : `ALTER TABLE ${from} RENAME TO ${to}`);
    return {
      workerDs: owner,
      breakIt: () => rename('plan_events', 'plan_events_away'),
      repair: () => rename('plan_events_away', 'plan_events'),
      close: async () => undefined,
    };
  }
  const login = await leastPrivilegeLogin(kind, owner, url);
  const workerDs = await openDataSource(parseDatabaseUrl(login.url));
  const user = kind === 'postgres' ? `"${new URL(login.url).username}"` : `'${new URL(login.url).username}'@'%'`;
  const table = kind === 'postgres' ? 'plan_events' : `\`${new URL(url).pathname.slice(1)}\`.plan_events`;
  return {
    workerDs,
    breakIt: () => owner.query(`REVOKE INSERT ON ${table} FROM ${user}`),
    repair: () => owner.query(`GRANT INSERT ON ${table} TO ${user}`),
    close: async () => {
      await workerDs.destroy();
      await login.drop();
    },
  };
}

describe.each(CASES)('breaker on %s, %s', (kind, fault) => {
  let redis: IORedis;
  let db: Awaited<ReturnType<typeof createMigratedDb>>;
  let setup: Setup;
  let worker: WorkerHandle | undefined;
  const prefix = uniquePrefix('breaker');

  beforeAll(async () => {
    redis = openRedis();
    db = await createMigratedDb(kind);
    setup = await setUp(kind, fault, db.ds, db.db.url);
  });
  afterAll(async () => {
    await worker?.close();
    await dropPrefix(redis, prefix);
    await redis.quit();
    await setup?.close();
    await db.close();
  });

  it('pauses the worker with the reason in readiness, dead-letters nothing, and stores everything once repaired', async () => {
    worker = await startWorker({
      config: loadConfig({ REDIS_URL, QUEUE_PREFIX: prefix, DATABASE_URL: db.db.url }),
      dataSource: setup.workerDs,
      logger: silentLogger(),
      retryBackoff: { baseMs: 20, maxMs: 200 },
      // a short budget: a standing fault must not spend it
      settings: { healthPort: null, concurrency: 2, retryBudgetMs: 300 },
    });
    const before = planRun({ seed: 1, steps: 2 });
    await publish(redis, prefix, [{ v: 1, events: before }]);
    await waitFor('the first plan stored', async () => (await countRows(db.ds, 'plan_events')) === before.length);

    await setup.breakIt();
    const after = Array.from({ length: 8 }, (_, i) => planRun({ seed: 100 + i, steps: 2 })).flat();
    await publish(redis, prefix, toJobData(after, 4));
    await waitFor('the worker paused by the breaker', () => worker!.stats().databaseFault !== null, 30_000, 20);
    const stats = worker!.stats();
    expect(stats.databaseFault).toMatch(EXPECTED[fault]);
    const readiness = await worker!.readiness();
    expect(readiness.ready).toBe(false);
    expect(readiness.checks.database).toEqual({ ok: false, detail: expect.stringMatching(EXPECTED[fault]) });
    // paused: what it had not fetched still waits; past the retry budget, nothing is dead-lettered
    await new Promise((r) => setTimeout(r, 600));
    expect((await queueCounts(redis, prefix)).wait).toBeGreaterThan(0);
    expect(await readDeadLetters(redis, prefix)).toEqual([]);
    expect(worker!.stats().deadLettered).toBe(0);

    await setup.repair();
    await waitFor(
      'every event stored after the repair',
      async () => (await countRows(db.ds, 'plan_events')) === before.length + after.length,
    );
    expect(await worker!.idle(30_000)).toBe(true);
    expect(await countRows(db.ds, 'plan_events')).toBe(before.length + after.length);
    expect(await readDeadLetters(redis, prefix)).toEqual([]);
    expect(worker!.stats().databaseFault).toBeNull();
    expect((await worker!.readiness()).checks.database).toEqual({ ok: true });
  });
});
