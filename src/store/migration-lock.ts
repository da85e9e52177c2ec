/**
 * One `migrate` at a time per database: two runs started together (two deploys, an init container
 * on every replica) serialise on a database lock held by the connection that runs the migrations,
 * so the second finds them applied instead of creating the same tables again. Each dialect names
 * its lock (`migrations.lock`: an advisory, named or application lock of the session), or asks for
 * one exclusive transaction around every migration (SQLite: `BEGIN EXCLUSIVE`; its DDL is
 * transactional, so a failed run leaves nothing behind).
 *
 * Session and transaction locks end with their connection: a `migrate` killed mid-run releases its
 * lock. Where the driver sends each statement on whichever pooled connection is free (SQL Server),
 * the lock is held by a transaction of its own on another connection of the same DataSource, so
 * that DataSource needs a pool of at least two connections.
 */
import type { QueryRunner } from 'typeorm';
import { sqlDialectOf } from './sql/dialects';
import type { MigrationLockSql } from './sql/sql-dialect';

/** How long SQLite waits for another `migrate` (each attempt waits the driver's busy timeout). @defaultValue 1 hour */
const SQLITE_WAIT_MS = 3_600_000;

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
  const lock = sqlDialectOf(runner).migrations.lock;
  if (lock === 'exclusive-transaction') return withExclusiveTransaction(runner, fn);
  if (lock.holder === 'own-transaction') return withLockTransaction(runner, lock, fn);
  const rows: Array<Record<string, unknown>> = await runner.query(lock.take);
  if (!lock.ok(rows)) throw lockRefused(rows);
  try {
    return await fn();
  } finally {
    await runner.query(lock.release).catch(() => undefined); // the lock also ends with the session
  }
}

async function withLockTransaction<T>(runner: QueryRunner, lock: MigrationLockSql, fn: () => Promise<T>): Promise<T> {
  const holder = runner.connection.createQueryRunner();
  try {
    await holder.startTransaction();
    const rows: Array<Record<string, unknown>> = await holder.query(lock.take);
    if (!lock.ok(rows)) throw lockRefused(rows);
    return await fn();
  } finally {
    // the rollback ends the transaction-owned lock (and nothing else: the transaction wrote nothing)
    if (holder.isTransactionActive) await holder.rollbackTransaction().catch(() => undefined);
    await holder.release().catch(() => undefined);
  }
}

function lockRefused(rows: Array<Record<string, unknown>>): Error {
  return new Error(
    `could not take the migration lock (${JSON.stringify(rows[0] ?? null)}); is another plan-ledger migrate stuck?`,
  );
}

async function withExclusiveTransaction<T>(runner: QueryRunner, fn: () => Promise<T>): Promise<T> {
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
