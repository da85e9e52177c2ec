/**
 * The connection-kill drill on a real SQL Server (skipped without TEST_MSSQL_URL; `npm run
 * test:mssql` runs it): two workers, each with a pool of its own and the production login
 * (db_datareader + db_datawriter only), store a stream of events while the admin connection ends
 * every session of that login with KILL, round after round. What an operator checks afterwards:
 * no dead letter, and plan_events holds every published event exactly once.
 */
import type IORedis from 'ioredis';
import type { DataSource } from 'typeorm';
import { loadConfig } from '../../src/config/config';
import { openDataSource } from '../../src/store/data-source';
import { startWorker, type WorkerHandle } from '../../src/worker';
import { createMigratedDb, MSSQL_ADMIN_URL } from '../support/databases';
import { manyPlanRuns, shuffled, toJobData } from '../support/event-factory';
import {
  dropPrefix,
  openRedis,
  publish,
  readDeadLetters,
  REDIS_URL,
  silentLogger,
  uniquePrefix,
  waitFor,
} from './helpers/queue-harness';

const onServer = MSSQL_ADMIN_URL ? describe : describe.skip;

const EVENTS = 20_000;
const ROUNDS = 12;
/** SQL Server's answer to a KILL of a session that ended in between (Msg 6106). */
const ENDED = /not an active process|6106/i;

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Ends every session of `login` but the caller's own; how many it ended. */
async function killSessions(admin: DataSource, login: string): Promise<number> {
  const sessions: Array<{ spid: number }> = await admin.query(
    'SELECT session_id AS spid FROM sys.dm_exec_sessions WHERE login_name = @0 AND session_id <> @@SPID',
    [login],
  );
  let ended = 0;
  for (const { spid } of sessions) {
    // KILL takes no variable: the session id goes through a parameter into dynamic SQL
    await admin
      .query("DECLARE @kill nvarchar(40) = N'KILL ' + CAST(@0 AS nvarchar(10)); EXEC (@kill)", [spid])
      .then(() => ended++)
      .catch((err: Error) => {
        if (!ENDED.test(err.message)) throw err;
      });
  }
  return ended;
}

/** Rows in the test database's plan_events, read on the admin connection (the workers' may be killed). */
async function stored(admin: DataSource): Promise<number> {
  const [row] = await admin.query('SELECT COUNT_BIG(*) AS n FROM plan_events');
  return Number(row.n);
}

onServer("connection-kill drill on SQL Server: KILL the workers' sessions while events flow", () => {
  let redis: IORedis;
  const prefix = uniquePrefix('kill');

  beforeAll(() => {
    redis = openRedis();
  });
  afterAll(async () => {
    await dropPrefix(redis, prefix);
    await redis.quit();
  });

  it('two workers: every session of their login killed, round after round: zero dead letters, stored = published', async () => {
    const { db, ds, close } = await createMigratedDb('mssql', { poolSize: 4 });
    const second = await openDataSource(db.workerTarget, { poolSize: 4 });
    // the database's owner, another login: the drill never kills its own session
    const admin = await openDataSource(db.target, { poolSize: 1 });
    const workers: WorkerHandle[] = [];
    try {
      const events = manyPlanRuns(EVENTS, { seed: 41 });
      await publish(redis, prefix, shuffled(toJobData(events, 25), 5));
      const config = loadConfig({ REDIS_URL, QUEUE_PREFIX: prefix, DATABASE_URL: db.workerUrl });
      for (const dataSource of [ds, second])
        workers.push(
          await startWorker({
            config,
            dataSource,
            logger: silentLogger(),
            settings: { healthPort: null, concurrency: 8, batchSize: 200 },
          }),
        );

      const rounds: Array<{ ended: number; storedBefore: number }> = [];
      for (let i = 0; i < ROUNDS; i++) {
        const storedBefore = await stored(admin);
        if (storedBefore >= events.length) break;
        rounds.push({ ended: await killSessions(admin, db.workerTarget.username!), storedBefore });
        await pause(400);
      }
      await waitFor('every event stored', async () => (await stored(admin)) >= events.length, 300_000);
      for (const w of workers) expect(await w.idle(120_000)).toBe(true);

      // the drill hit the workers mid-stream, not after the last event
      expect(rounds.filter((r) => r.ended > 0 && r.storedBefore < events.length).length).toBeGreaterThan(0);
      expect(await readDeadLetters(redis, prefix)).toEqual([]);
      expect(workers.map((w) => w.stats().deadLettered)).toEqual([0, 0]);
      // event_id is the primary key: a duplicate cannot hide in this count
      expect(await stored(admin)).toBe(events.length);
    } finally {
      for (const w of workers) await w.close(30_000);
      await admin.destroy();
      await second.destroy();
      await close();
    }
  }, 900_000);
});
