/**
 * `migrate` on SQL Server, checked on recorded SQL (no server here): the migration lock lives in a
 * transaction of its own on a connection the migrations do not use, and `migrate` runs with no
 * request timeout, so a second run waits its turn and long DDL is not cancelled.
 */
import { parseDatabaseUrl } from '../../src/config/database-url';
import { dataSourceOptions } from '../../src/store/data-source';
import { runMigrations } from '../../src/store/migrator';
import { recordingMssql } from '../support/recording-mssql';

const URL = 'mssql://sa:x@127.0.0.1:1/none';

/** What a fresh database answers to the questions TypeORM asks while migrating. */
function freshDatabase(lock: number) {
  return (sql: string): Array<Record<string, unknown>> | undefined => {
    if (sql.includes('sp_getapplock')) return [{ ok: lock }];
    if (sql.includes('SCHEMA_NAME()')) return [{ schema_name: 'dbo' }];
    if (sql.includes('DB_NAME()')) return [{ db_name: 'none' }];
    return undefined;
  };
}

describe('SQL Server migrate', () => {
  it('takes the lock in a transaction of its own, on another connection, and ends it after the last migration', async () => {
    const { ds, statements } = await recordingMssql(freshDatabase(0));
    await runMigrations(ds);
    const take = statements.findIndex((s) => s.sql.includes('sp_getapplock'));
    expect(take).toBeGreaterThan(0);
    const lock = statements[take];
    expect(lock.sql).toContain("@LockOwner = N'Transaction'");
    expect(lock.sql).toContain('@LockTimeout = -1');
    // the lock's runner opened a transaction just before, and rolls it back once at the very end
    const own = statements.filter((s) => s.runner === lock.runner).map((s) => s.sql);
    expect(own[0]).toBe('BEGIN TRANSACTION');
    expect(own[own.length - 1]).toBe('ROLLBACK');
    expect(own).toHaveLength(3);
    // every migration ran on another connection, between the lock and its release
    const ddl = statements.filter((s) => /^CREATE TABLE/.test(s.sql));
    expect(ddl.length).toBeGreaterThan(5);
    expect(ddl.every((s) => s.runner !== lock.runner)).toBe(true);
    const end = statements.findIndex((s) => s.runner === lock.runner && s.sql === 'ROLLBACK');
    const lastDdl = statements.lastIndexOf(ddl[ddl.length - 1]);
    expect(take).toBeLessThan(statements.indexOf(ddl[0]));
    expect(end).toBeGreaterThan(lastDdl);
  });

  it('a lock refused (timeout, deadlock) fails the run before any migration', async () => {
    const { ds, statements } = await recordingMssql(freshDatabase(-3));
    await expect(runMigrations(ds)).rejects.toThrow(/could not take the migration lock \(\{"ok":-3\}\)/);
    expect(statements.some((s) => /^CREATE TABLE/.test(s.sql))).toBe(false);
    expect(statements[statements.length - 1].sql).toBe('ROLLBACK');
  });

  it('a request timeout of 0 (none) can be asked for; otherwise the URL decides, else 15 s', () => {
    const options = (url: string, requestTimeoutMs?: number) =>
      dataSourceOptions(parseDatabaseUrl(url), requestTimeoutMs === undefined ? {} : { requestTimeoutMs }) as {
        requestTimeout?: number;
      };
    expect(options(URL, 0).requestTimeout).toBe(0);
    expect(options(`${URL}?requestTimeout=60000`, 0).requestTimeout).toBe(0);
    expect(options(`${URL}?requestTimeout=60000`).requestTimeout).toBe(60_000);
    expect(options(URL).requestTimeout).toBe(15_000);
  });
});
