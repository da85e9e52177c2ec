/**
 * One `migrate` at a time per database: two runs started together (two deploys, an init container
 * on every replica) serialise on a database lock held by the connection that runs the migrations,
 * so the second finds them applied instead of creating the same tables again.
 *
 * - PostgreSQL: a session advisory lock keyed by the current schema (two schemas do not wait on
 *   each other).
 * - MySQL/MariaDB: `GET_LOCK`, named after the database (locks are server-wide).
 * - SQL Server: `sp_getapplock` owned by the session (application locks are per database).
 * - SQLite: `BEGIN EXCLUSIVE`; every migration runs inside that one transaction (SQLite DDL is
 *   transactional, so a failed run leaves nothing behind).
 *
 * Session locks end with their connection: a `migrate` killed mid-run releases its lock.
 */
import type { QueryRunner } from 'typeorm';
import type { Dialect } from './dialect';
import { dialectOf } from './dialect-of';

/** PostgreSQL advisory locks take (int, int): a fixed first key for "plan-ledger migrate". */
const PG_LOCK_CLASS = 0x504c_4d47; // "PLMG"
const LOCK_NAME = 'plan-ledger:migrate';
/** GET_LOCK's wait in seconds: long enough to outlast any migration; a negative value is not portable across MySQL and MariaDB. */
const MYSQL_WAIT_S = 7 * 86_400;
/** How long SQLite waits for another `migrate` (each attempt waits the driver's busy timeout). @defaultValue 1 hour */
const SQLITE_WAIT_MS = 3_600_000;

/** The SQL that takes and releases the lock, per dialect (SQLite's is a transaction, below). */
const LOCKS: Record<Exclude<Dialect, 'sqlite'>, { take: string; release: string; ok(rows: Array<Record<string, unknown>>): boolean }> = {
  postgres: {
    take: `SELECT pg_advisory_lock(${PG_LOCK_CLASS}, hashtext(current_schema())) AS ok`,
    release: `SELECT pg_advisory_unlock(${PG_LOCK_CLASS}, hashtext(current_schema())) AS ok`,
    ok: () => true,
  },
  mysql: {
    // lock names are at most 64 characters; a digest of the database name keeps them short
    take: `SELECT GET_LOCK(CONCAT('plm:', SHA1(DATABASE())), ${MYSQL_WAIT_S}) AS ok`,
    release: `SELECT RELEASE_LOCK(CONCAT('plm:', SHA1(DATABASE()))) AS ok`,
    ok: (rows) => Number(rows[0]?.ok) === 1,
  },
  mssql: {
    take: `DECLARE @r int; EXEC @r = sp_getapplock @Resource = N'${LOCK_NAME}', @LockMode = N'Exclusive', @LockOwner = N'Session', @LockTimeout = -1; SELECT @r AS ok`,
    release: `EXEC sp_releaseapplock @Resource = N'${LOCK_NAME}', @LockOwner = N'Session'`,
    // 0 granted at once, 1 granted after waiting; negative: timeout, deadlock, error
    ok: (rows) => Number(rows[0]?.ok) >= 0,
  },
};

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function isSqliteBusy(err: unknown): boolean {
  const e = err as { code?: string; message?: string } | undefined;
  return e?.code === 'SQLITE_BUSY' || /database is locked|SQLITE_BUSY/i.test(String(e?.message ?? ''));
}

/**
 * Runs `fn` holding the migration lock on `runner`'s connection. `fn` must run its statements on
 * that same runner. On SQLite `fn` runs inside one exclusive transaction: it must not start its own.
 */
export async function withMigrationLock<T>(runner: QueryRunner, fn: () => Promise<T>): Promise<T> {
  const dialect = dialectOf(runner);
  if (dialect === 'sqlite') return withSqliteExclusive(runner, fn);
  const lock = LOCKS[dialect];
  const rows: Array<Record<string, unknown>> = await runner.query(lock.take);
  if (!lock.ok(rows)) throw new Error(`could not take the migration lock (${JSON.stringify(rows[0] ?? null)}); is another plan-ledger migrate stuck?`);
  try {
    return await fn();
  } finally {
    await runner.query(lock.release).catch(() => undefined); // the lock also ends with the session
  }
}

async function withSqliteExclusive<T>(runner: QueryRunner, fn: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + SQLITE_WAIT_MS;
  for (;;) {
    try {
      await runner.query('BEGIN EXCLUSIVE');
      break;
    } catch (err) {
      if (!isSqliteBusy(err) || Date.now() >= deadline) throw err;
      await sleep(100);
    }
  }
  try {
    const result = await fn();
    await runner.query('COMMIT');
    return result;
  } catch (err) {
    await runner.query('ROLLBACK').catch(() => undefined);
    throw err;
  }
}
