import { MigrationExecutor } from 'typeorm';
import type { DataSource, MigrationInterface, QueryRunner } from 'typeorm';
import type { DatabaseTarget } from '../config/database-url';
import { createDataSource } from './data-source';
import { dialectOf } from './dialect-of';
import { withMigrationLock } from './migration-lock';
import { MIGRATIONS } from '../../migrations';

export interface MigrationReport {
  applied: string[];
  reverted: string[];
}

/**
 * Runs `fn` with an executor bound to one connection that holds the migration lock (see
 * migration-lock.ts): concurrent `migrate` runs take turns, and the second sees the first's work.
 */
async function underLock<T>(ds: DataSource, fn: (executor: MigrationExecutor, runner: QueryRunner) => Promise<T>): Promise<T> {
  const runner = ds.createQueryRunner();
  try {
    const dialect = dialectOf(ds);
    if (dialect === 'mysql') rerunnableDdl(runner);
    const executor = new MigrationExecutor(ds, runner);
    // SQLite: the lock is one exclusive transaction around everything; elsewhere each migration has its own
    executor.transaction = dialect === 'sqlite' ? 'none' : 'each';
    return await withMigrationLock(runner, () => fn(executor, runner));
  } finally {
    await runner.release().catch(() => undefined);
  }
}

/**
 * MySQL/MariaDB commit every DDL statement at once, so a migration killed halfway leaves its first
 * tables, columns or indexes behind while it is still recorded as pending; the rerun would stop at
 * "already exists". Each such statement is atomic, so on a rerun an object that exists was made by
 * that very statement: the error is skipped and the migration goes on. The data steps of the
 * migrations are written to be idempotent (an UPDATE that sets the same value twice).
 */
const MYSQL_ALREADY_DONE = new Set([
  1050, // ER_TABLE_EXISTS_ERROR: CREATE TABLE
  1060, // ER_DUP_FIELDNAME: ADD COLUMN
  1061, // ER_DUP_KEYNAME: CREATE INDEX, ADD UNIQUE
  1068, // ER_MULTIPLE_PRI_KEY: ADD PRIMARY KEY
  1826, // ER_FK_DUP_NAME: ADD CONSTRAINT ... FOREIGN KEY (MySQL 8)
  1051, // ER_BAD_TABLE_ERROR: DROP TABLE (a rerun of a revert)
  1091, // ER_CANT_DROP_FIELD_OR_KEY: DROP COLUMN / INDEX / FOREIGN KEY (a rerun of a revert)
]);
const DDL = /^\s*(CREATE|ALTER|DROP)\s/i;

function alreadyDone(err: unknown, sql: string): boolean {
  if (!DDL.test(sql)) return false;
  const e = err as { errno?: number; driverError?: { errno?: number }; message?: string };
  const errno = e?.errno ?? e?.driverError?.errno;
  if (errno !== undefined && MYSQL_ALREADY_DONE.has(errno)) return true;
  // MariaDB reports a duplicate foreign key name as errno 1005 with "Duplicate key on write" (errno 121)
  return errno === 1005 && /errno: 121/.test(e?.message ?? '');
}

function rerunnableDdl(runner: QueryRunner): void {
  const query = runner.query.bind(runner) as (sql: string, ...rest: unknown[]) => Promise<unknown>;
  runner.query = (async (sql: string, ...rest: unknown[]) => {
    try {
      return await query(sql, ...rest);
    } catch (err) {
      if (alreadyDone(err, sql)) return undefined;
      throw err;
    }
  }) as QueryRunner['query'];
}

/** Apply every pending migration, each in its own transaction where the database allows DDL in one. */
export async function runMigrations(ds: DataSource): Promise<MigrationReport> {
  const done = await underLock(ds, (executor) => executor.executePendingMigrations());
  return { applied: done.map((m) => m.name), reverted: [] };
}

/** Revert every applied migration, newest first; the migrations table itself stays. */
export async function revertAllMigrations(ds: DataSource): Promise<MigrationReport> {
  return underLock(ds, async (executor, runner) => {
    const reverted: string[] = [];
    for (let last = await lastExecutedName(runner); last; last = await lastExecutedName(runner)) {
      await executor.undoLastMigration();
      if (last === (await lastExecutedName(runner))) throw new Error(`reverting ${last} left it recorded as applied`);
      reverted.push(last);
    }
    return { applied: [], reverted };
  });
}

/** Read on the locked connection: with a pool of one, another connection would wait forever. */
async function lastExecutedName(runner: QueryRunner): Promise<string | undefined> {
  const e = (name: string) => runner.connection.driver.escape(name);
  const rows: Array<Record<string, unknown>> = await runner
    .query(`SELECT ${e('name')} AS name FROM ${e('migrations')} ORDER BY ${e('timestamp')} DESC`)
    .catch(() => []); // no migrations table yet: nothing applied
  return rows[0]?.name as string | undefined;
}

/**
 * The SQL every migration's `up` would run on this dialect, generated without connecting: the
 * query runner records statements instead of sending them (SQL memory mode). This is how SQL
 * Server DDL is checked on machines with no SQL Server.
 */
export async function migrationSql(target: DatabaseTarget, direction: 'up' | 'down' = 'up'): Promise<Array<{ migration: string; statements: string[] }>> {
  const ds = createDataSource(target);
  const runner = ds.createQueryRunner();
  const out: Array<{ migration: string; statements: string[] }> = [];
  const list: MigrationInterface[] = MIGRATIONS.map((M) => new M());
  for (const migration of direction === 'up' ? list : [...list].reverse()) {
    runner.enableSqlMemory();
    await migration[direction](runner);
    const memory = runner.getMemorySql();
    out.push({ migration: migration.name ?? migration.constructor.name, statements: memory.upQueries.map((q) => q.query) });
    runner.disableSqlMemory();
  }
  await runner.release().catch(() => undefined);
  return out;
}
