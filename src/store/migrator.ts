import type { DataSource, MigrationInterface } from 'typeorm';
import type { DatabaseTarget } from '../config/database-url';
import { createDataSource } from './data-source';
import { MIGRATIONS } from '../../migrations';

export interface MigrationReport {
  applied: string[];
  reverted: string[];
}

/** Apply every pending migration, each in its own transaction where the database allows DDL in one. */
export async function runMigrations(ds: DataSource): Promise<MigrationReport> {
  const done = await ds.runMigrations({ transaction: 'each' });
  return { applied: done.map((m) => m.name), reverted: [] };
}

/** Revert every applied migration, newest first; the migrations table itself stays. */
export async function revertAllMigrations(ds: DataSource): Promise<MigrationReport> {
  const reverted: string[] = [];
  for (let last = await lastExecutedName(ds); last; last = await lastExecutedName(ds)) {
    await ds.undoLastMigration({ transaction: 'each' });
    if (last === (await lastExecutedName(ds))) throw new Error(`reverting ${last} left it recorded as applied`);
    reverted.push(last);
  }
  return { applied: [], reverted };
}

async function lastExecutedName(ds: DataSource): Promise<string | undefined> {
  const rows: Array<Record<string, unknown>> = await ds
    .query(`SELECT ${ds.driver.escape('name')} AS name FROM ${ds.driver.escape('migrations')} ORDER BY ${ds.driver.escape('timestamp')} DESC`)
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
