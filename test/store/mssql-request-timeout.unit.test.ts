import * as mssqlPackage from 'mssql';
import type { DataSource } from 'typeorm';
import { parseDatabaseUrl } from '../../src/config/database-url';
import { createDataSource } from '../../src/store/data-source';
import { mssql } from '../../src/store/sql/mssql';
import { runRetention } from '../../src/retention/retention.service';
import { retentionPolicy } from '../../src/retention/retention-config';
import { eraseSession } from '../../src/retention/session-erasure';

/**
 * Retention's own request timeout on SQL Server. No server here: TypeORM's real query runner runs
 * over a stand-in pool, and the mssql package's Request.query is replaced so that each request's
 * per-request options (what the package hands to tedious as the request's timeout) are recorded.
 */
describe('request timeouts of retention and erasure on SQL Server (no server)', () => {
  let ds: DataSource;
  let sent: Array<{ sql: string; requestTimeout: number | undefined }>;
  let query: jest.SpyInstance;

  beforeEach(() => {
    ds = createDataSource(parseDatabaseUrl('mssql://sa:x@127.0.0.1:1/none?requestTimeout=15000'));
    const transaction = () => ({
      begin: (...args: unknown[]) => (args[args.length - 1] as (err?: Error) => void)(),
      commit: (done: (err?: Error) => void) => done(),
      rollback: (done: (err?: Error) => void) => done(),
    });
    // a connected driver's pool, as far as TypeORM's query runner uses it
    (ds.driver as unknown as { master: object }).master = { transaction };
    sent = [];
    query = jest.spyOn(mssqlPackage.Request.prototype, 'query').mockImplementation(function (
      this: { overrides: { requestTimeout?: number } },
      sql: unknown,
    ) {
      sent.push({ sql: String(sql), requestTimeout: this.overrides.requestTimeout });
      return Promise.resolve({ recordset: [], recordsets: [], rowsAffected: [0], output: {} }) as never;
    });
  });
  afterEach(() => query.mockRestore());

  it('sends every statement of a retention run with the policy’s timeout, and the worker’s with none of its own', async () => {
    await runRetention(ds, retentionPolicy({ requestTimeoutSeconds: 600 }), { now: new Date('2030-06-01T00:00:00Z') });
    expect(sent.length).toBeGreaterThan(3);
    expect(new Set(sent.map((s) => s.requestTimeout))).toEqual(new Set([600_000]));

    sent.length = 0;
    await ds.query('SELECT 1');
    // outside a retention run the request keeps the connection's timeout (DATABASE_URL's requestTimeout)
    expect(sent).toEqual([{ sql: 'SELECT 1', requestTimeout: undefined }]);
  });

  it('a statement sent meanwhile from elsewhere in the process keeps the connection’s timeout', async () => {
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    const scoped = mssql.withRequestTimeout(120_000, async () => {
      await held;
      return ds.query('SELECT 2');
    });
    const outside = ds.query('SELECT 3');
    await outside;
    release();
    await scoped;
    expect(sent).toEqual([
      { sql: 'SELECT 3', requestTimeout: undefined },
      { sql: 'SELECT 2', requestTimeout: 120_000 },
    ]);
  });

  it('erasure sends its statements with its own timeout too; 0 is no limit', async () => {
    await eraseSession(ds, 'sess-1', { dryRun: true, requestTimeoutSeconds: 0 }).catch(() => undefined);
    expect(sent.length).toBeGreaterThan(0);
    expect(new Set(sent.map((s) => s.requestTimeout))).toEqual(new Set([0]));
  });
});
