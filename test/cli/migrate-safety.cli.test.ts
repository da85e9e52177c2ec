/**
 * `migrate` cannot half-apply: runs serialise on a database lock, a run interrupted on MySQL/MariaDB
 * (whose DDL commits statement by statement) can be rerun, and `--status` lists what is applied
 * and pending. Real servers, the real CLI in child processes.
 */
import { DataSource } from 'typeorm';
import { openDataSource } from '../../src/store/data-source';
import { withMigrationLock } from '../../src/store/migration-lock';
import { migrationStatus } from '../../src/store/migration-status';
import { migrationSql, runMigrations } from '../../src/store/migrator';
import { runCli } from '../support/cli';
import { createThrowawayDb, ThrowawayDb } from '../support/databases';
import { waitFor } from '../worker/helpers/queue-harness';
import { MIGRATIONS } from '../../migrations';

/** Every migration, oldest first (test/store/migrations.test.ts names them one by one). */
const ALL = MIGRATIONS.map((m) => m.name);

/** Holds the migration lock from this process until `release()` is called. */
async function holdLock(ds: DataSource): Promise<{ release(): void; released: Promise<void> }> {
  const runner = ds.createQueryRunner();
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  let taken!: () => void;
  const takenP = new Promise<void>((resolve) => (taken = resolve));
  const released = withMigrationLock(runner, async () => {
    taken();
    await gate;
  }).finally(() => runner.release());
  await takenP;
  return { release, released };
}

/** While another connection holds the lock, a `migrate` waits, applies nothing, and finishes once it is released. */
async function expectMigrateWaitsForLock(
  db: ThrowawayDb,
  isWaiting: (admin: DataSource) => Promise<boolean>,
): Promise<void> {
  const holder = await openDataSource(db.target, { poolSize: 2 });
  try {
    const lock = await holdLock(holder);
    const child = runCli(['migrate', '--json'], { DATABASE_URL: db.url });
    await waitFor('migrate to wait on the migration lock', () => isWaiting(holder), 60_000, 100);
    expect((await migrationStatus(holder)).pending).toEqual(ALL);
    lock.release();
    await lock.released;
    const done = await child;
    expect(done.stderr).toBe('');
    expect(done.code).toBe(0);
    expect(JSON.parse(done.stdout).applied).toEqual(ALL);
    expect(await migrationStatus(holder)).toMatchObject({ pending: [] });
  } finally {
    await holder.destroy();
  }
}

describe('migrate: one run at a time, rerunnable, with --status', () => {
  it('PostgreSQL: a second migrate waits on the advisory lock and then finds nothing half-done', async () => {
    const db = await createThrowawayDb('postgres');
    try {
      await expectMigrateWaitsForLock(db, async (ds) => {
        const rows = await ds.query(
          `SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND objid::bigint = (hashtext(current_schema())::bigint & 4294967295)`,
        );
        return rows[0].n > 0;
      });
    } finally {
      await db.drop();
    }
  });

  it('MariaDB: a second migrate waits on GET_LOCK and then finds nothing half-done', async () => {
    const db = await createThrowawayDb('mariadb');
    try {
      await expectMigrateWaitsForLock(db, async (ds) => {
        const rows = await ds.query(
          `SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE DB = DATABASE() AND INFO LIKE 'SELECT GET_LOCK%' AND ID <> CONNECTION_ID()`,
        );
        return Number(rows[0].n) > 0;
      });
    } finally {
      await db.drop();
    }
  });

  it('MariaDB: a migration interrupted after some of its DDL (committed at once) completes on the rerun', async () => {
    const db = await createThrowawayDb('mariadb');
    const ds = await openDataSource(db.target, { poolSize: 2 });
    try {
      // apply the first two migrations, then the first statements of the third, as a killed run leaves them
      await runMigrations(ds);
      await ds.query(`DELETE FROM migrations WHERE name = 'IncrementalStore1795219400000'`);
      const [, , third] = await migrationSql(db.target);
      const statements = third.statements;
      await ds.query(
        'ALTER TABLE `plan_heads` DROP INDEX `IX_plan_heads_gap`, DROP COLUMN `applied_seq`, DROP COLUMN `pending_events`, DROP COLUMN `gap_since`',
      );
      await ds.query('ALTER TABLE `plan_handoffs` DROP COLUMN `step_key`');
      for (const statement of statements.slice(0, 2)) await ds.query(statement); // the two ADD COLUMN statements
      expect((await migrationStatus(ds)).pending).toEqual(['IncrementalStore1795219400000']);

      const rerun = await runCli(['migrate'], { DATABASE_URL: db.url });
      expect(rerun.stderr).toBe('');
      expect(rerun).toMatchObject({ code: 0, stdout: 'applied IncrementalStore1795219400000\n' });
      const index = await ds.query(
        `SELECT COUNT(*) AS n FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND INDEX_NAME = 'IX_plan_heads_gap'`,
      );
      expect(Number(index[0].n)).toBe(1);
      expect((await migrationStatus(ds)).pending).toEqual([]);
    } finally {
      await ds.destroy();
      await db.drop();
    }
  });

  it('SQLite: two migrate runs at once both succeed and apply each migration once; --status lists them', async () => {
    const db = await createThrowawayDb('sqlite');
    try {
      const env = { DATABASE_URL: db.url };
      const before = await runCli(['migrate', '--status'], env);
      expect(before).toMatchObject({
        code: 0,
        stdout: `${ALL.map((n) => `pending  ${n}`).join('\n')}\n${ALL.length} pending migrations: run plan-ledger migrate\n`,
      });

      const runs = await Promise.all([runCli(['migrate', '--json'], env), runCli(['migrate', '--json'], env)]);
      expect(runs.map((r) => [r.code, r.stderr])).toEqual([
        [0, ''],
        [0, ''],
      ]);
      expect(runs.flatMap((r) => JSON.parse(r.stdout).applied).sort()).toEqual([...ALL].sort());

      const after = await runCli(['migrate', '--status', '--json'], env);
      expect(after.code).toBe(0);
      const status = JSON.parse(after.stdout);
      expect(status.pending).toEqual([]);
      expect(status.applied.map((m: { name: string }) => m.name)).toEqual(ALL);
      expect((await runCli(['migrate', '--status'], env)).stdout.trim().split('\n').pop()).toBe('schema is up to date');
    } finally {
      await db.drop();
    }
  });

  it('refuses --status with --revert-all in one line, exit 2', async () => {
    const r = await runCli(['migrate', '--status', '--revert-all'], { DATABASE_URL: 'sqlite::memory:' });
    expect(r).toMatchObject({ code: 2, stdout: '' });
    expect(r.stderr.trim()).toBe('plan-ledger: --revert-all and --status cannot be combined');
  });
});
