/**
 * Which migrations a database has and lacks, read without writing anything (no migrations table
 * is created). `migrate --status` prints it; a worker (and `serve`) with pending migrations reports
 * not ready and writes nothing: rows written by new code into an old schema would fail as dead
 * letters, or worse, succeed half.
 */
import type { DataSource } from 'typeorm';
import { MIGRATIONS } from '../../migrations';

export interface AppliedMigration {
  name: string;
  /** The migration's timestamp (from its name), as TypeORM records it. */
  timestamp: number;
}

export interface MigrationStatus {
  applied: AppliedMigration[];
  /** Names of the migrations this version has and the database lacks, oldest first. */
  pending: string[];
}

const MISSING_TABLE = /no such table|relation .* does not exist|doesn't exist|Invalid object name/i;

/** Every migration this version of plan-ledger knows, by name, oldest first. */
export function knownMigrations(): string[] {
  return MIGRATIONS.map((M) => new M().name ?? M.name);
}

export async function migrationStatus(ds: DataSource): Promise<MigrationStatus> {
  const q = (name: string) => ds.driver.escape(name);
  let rows: Array<Record<string, unknown>>;
  try {
    rows = await ds.query(
      `SELECT ${q('name')} AS name, ${q('timestamp')} AS ts FROM ${q('migrations')} ORDER BY ${q('timestamp')}`,
    );
  } catch (err) {
    if (!MISSING_TABLE.test((err as Error)?.message ?? '')) throw err;
    rows = []; // never migrated
  }
  const applied = rows.map((r) => ({ name: String(r.name), timestamp: Number(r.ts) }));
  const done = new Set(applied.map((m) => m.name));
  return { applied, pending: knownMigrations().filter((name) => !done.has(name)) };
}

/** The one line an operator acts on: "2 pending migrations: run plan-ledger migrate". */
export function pendingMigrationsLine(pending: readonly string[]): string {
  return `${pending.length} pending migration${pending.length === 1 ? '' : 's'}: run plan-ledger migrate`;
}
