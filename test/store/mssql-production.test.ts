/**
 * SQL Server as production runs it, against a real server (skipped without TEST_MSSQL_URL; see
 * docs/sql-server.md#what-the-env-gated-suite-proves-with-one): READ_COMMITTED_SNAPSHOT on, the
 * worker a login that reads and writes rows only, two workers at once, two `migrate` runs at once,
 * and the upgrade of a database on which queries ran. What only a server can tell; the statements
 * themselves are checked without one by the recorded-SQL tests (mssql-*.unit.test.ts,
 * tsql-syntax.unit.test.ts).
 */
import { DataSource } from 'typeorm';
import { openDataSource, createDataSource } from '../../src/store/data-source';
import { dbErrorCode, isRetryableDbError } from '../../src/store/db-errors';
import { runMigrations } from '../../src/store/migrator';
import { PlanEventStore } from '../../src/store/plan-event-store';
import { MIGRATIONS } from '../../migrations';
import type { PlanEvent } from '../../src/contracts';
import { runCli } from '../support/cli';
import { createMigratedDb, createThrowawayDb, MSSQL_ADMIN_URL } from '../support/databases';
import { planRun, shuffled } from '../support/event-factory';

const onServer = MSSQL_ADMIN_URL ? describe : describe.skip;

onServer('SQL Server as production runs it', () => {
  it('runs READ_COMMITTED_SNAPSHOT, and the worker login cannot change the schema', async () => {
    const { ds, close } = await createMigratedDb('mssql');
    try {
      const [db] = await ds.query(
        'SELECT is_read_committed_snapshot_on AS rcsi FROM sys.databases WHERE name = DB_NAME()',
      );
      expect(db.rcsi === true || db.rcsi === 1).toBe(true);
      await expect(ds.query('CREATE TABLE not_allowed (a int)')).rejects.toThrow(/permission/i);
    } finally {
      await close();
    }
  });

  it('two migrate runs at once: one applies every migration, the other waits its turn and finds nothing to do', async () => {
    const db = await createThrowawayDb('mssql');
    try {
      const [a, b] = await Promise.all([
        runCli(['migrate', '--json'], { DATABASE_URL: db.url }, 300_000),
        runCli(['migrate', '--json'], { DATABASE_URL: db.url }, 300_000),
      ]);
      expect([a.code, b.code, a.stderr, b.stderr]).toEqual([0, 0, '', '']);
      const applied = [JSON.parse(a.stdout).applied, JSON.parse(b.stdout).applied].sort(
        (x: string[], y: string[]) => x.length - y.length,
      );
      expect(applied[0]).toEqual([]);
      expect(applied[1]).toHaveLength(MIGRATIONS.length);
    } finally {
      await db.drop();
    }
  }, 600_000);

  it('two workers writing plans of the same sessions meet no deadlock and store every event once', async () => {
    const { db, ds, close } = await createMigratedDb('mssql');
    const other = await openDataSource(db.workerTarget, { poolSize: 4 });
    try {
      const events: PlanEvent[] = [];
      for (let i = 0; i < 200; i++)
        events.push(...planRun({ seed: 7_000 + i, steps: 4, sessionId: `sess-shared-${i % 8}` }));
      const order = shuffled(events, 11);
      const batches: PlanEvent[][] = [];
      for (let i = 0; i < order.length; i += 50) batches.push(order.slice(i, i + 50));
      const deadlocks: string[] = [];
      const work = async (store: PlanEventStore, mine: PlanEvent[][]) => {
        for (const batch of mine) {
          for (let attempt = 1; ; attempt++) {
            try {
              await store.persist(batch);
              break;
            } catch (err) {
              if (dbErrorCode(err) === '1205') deadlocks.push(String((err as Error).message));
              if (!isRetryableDbError(err) || attempt >= 5) throw err;
            }
          }
        }
      };
      await Promise.all([
        work(
          new PlanEventStore(ds),
          batches.filter((_, i) => i % 2 === 0),
        ),
        work(
          new PlanEventStore(other),
          batches.filter((_, i) => i % 2 === 1),
        ),
      ]);
      expect(deadlocks).toEqual([]);
      const [{ n }] = await ds.query('SELECT COUNT(*) AS n FROM plan_events');
      expect(Number(n)).toBe(events.length);
      const [{ plans }] = await ds.query("SELECT COUNT(*) AS plans FROM execution_plans WHERE status <> 'planning'");
      expect(Number(plans)).toBeGreaterThan(0);
    } finally {
      await other.destroy();
      await close();
    }
  }, 600_000);

  it('upgrades a database on which queries created column statistics (the collation change drops them first)', async () => {
    const db = await createThrowawayDb('mssql');
    const before = createDataSource(db.target);
    before.setOptions({ migrations: MIGRATIONS.slice(0, 3) });
    let after: DataSource | undefined;
    try {
      await before.initialize();
      await runMigrations(before);
      // what the analytics leave behind: an auto-created statistic per column a query grouped or
      // filtered by, and one created by hand by a DBA
      await before.query(
        "SELECT agent_id, COUNT(*) AS n FROM plan_steps WHERE model = N'gpt' AND status = N'completed' GROUP BY agent_id",
      );
      await before.query(
        "SELECT from_agent_id, COUNT(*) FROM plan_handoffs WHERE to_agent_id = N'x' GROUP BY from_agent_id",
      );
      await before.query('CREATE STATISTICS st_dba_model ON plan_steps (model)');
      const [{ stats }] = await before.query(
        "SELECT COUNT(*) AS stats FROM sys.stats WHERE object_id = OBJECT_ID(N'plan_steps') AND (auto_created = 1 OR user_created = 1)",
      );
      expect(Number(stats)).toBeGreaterThan(0);
      await before.destroy();

      after = await openDataSource(db.target, { poolSize: 2, requestTimeoutMs: 0 });
      const report = await runMigrations(after);
      expect(report.applied).toHaveLength(MIGRATIONS.length - 3);
      const [{ collation }] = await after.query(
        "SELECT collation_name AS collation FROM sys.columns WHERE object_id = OBJECT_ID(N'plan_steps') AND name = N'model'",
      );
      expect(collation).toBe('Latin1_General_100_BIN2');
    } finally {
      if (before.isInitialized) await before.destroy();
      if (after?.isInitialized) await after.destroy();
      await db.drop();
    }
  }, 600_000);
});
