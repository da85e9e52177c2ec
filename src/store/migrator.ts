import { MigrationExecutor } from 'typeorm';
import type { DataSource, MigrationInterface, QueryRunner } from 'typeorm';
import type { DatabaseTarget } from '../config/database-url';
import { createDataSource } from './data-source';
import { sqlDialectOf } from './sql/dialects';
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
async function underLock<T>(
  ds: DataSource,
  fn: (executor: MigrationExecutor, runner: QueryRunner) => Promise<T>,
): Promise<T> {
  const runner = ds.createQueryRunner();
  try {
    const { migrations } = sqlDialectOf(ds);
    migrations.prepareRunner?.(runner);
    const executor = new MigrationExecutor(ds, runner);
    // where the lock is one exclusive transaction around everything, no migration opens its own
    executor.transaction = migrations.transaction;
    return await withMigrationLock(runner, () => fn(executor, runner));
  } finally {
    await runner.release().catch(() => undefined);
  }
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
export async function migrationSql(
  target: DatabaseTarget,
  direction: 'up' | 'down' = 'up',
): Promise<Array<{ migration: string; statements: string[] }>> {
  const ds = createDataSource(target);
  const runner = ds.createQueryRunner();
  const out: Array<{ migration: string; statements: string[] }> = [];
  const list: MigrationInterface[] = MIGRATIONS.map((M) => new M());
  for (const migration of direction === 'up' ? list : [...list].reverse()) {
    runner.enableSqlMemory();
    await migration[direction](runner);
    const memory = runner.getMemorySql();
    out.push({
      migration: migration.name ?? migration.constructor.name,
      statements: memory.upQueries.map((q) => q.query),
    });
    runner.disableSqlMemory();
  }
  await runner.release().catch(() => undefined);
  return out;
}
