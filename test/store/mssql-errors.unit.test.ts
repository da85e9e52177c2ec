/**
 * SQL Server's transient errors as the drivers raise them: real tedious, mssql and tarn error
 * objects (no server here), the way a restart or a failover of the database reaches the worker.
 * A transient error is retried within the worker's budget; anything else dead-letters the event.
 */
import * as net from 'node:net';
import * as mssql from 'mssql';
import * as tedious from 'tedious';
import { TimeoutError } from 'tarn';
import { QueryFailedError } from 'typeorm';
import { isRetryableDbError, standingFault } from '../../src/store/db-errors';

/** A login the server refused, as tedious raises it at connect time and mssql passes it on. */
const refusedLogin = (message: string) => new mssql.ConnectionError(new tedious.ConnectionError(message, 'ELOGIN'));

describe('SQL Server errors while the database restarts or fails over', () => {
  it('retries a login refused while the database recovers (4060, 18456, 40613 arrive as ELOGIN with no number)', () => {
    for (const message of [
      'Cannot open database "plan_ledger" requested by the login. The login failed.',
      "Login failed for user 'plan_ledger_worker'.",
      "Database 'plan_ledger' on server 'sql-1' is not currently available.  Please retry the connection later.",
    ]) {
      const err = refusedLogin(message);
      expect({ code: err.code, number: (err as { number?: number }).number }).toEqual({
        code: 'ELOGIN',
        number: undefined,
      });
      expect({ message, retryable: isRetryableDbError(err) }).toEqual({ message, retryable: true });
    }
  });

  it("retries a pool that found no connection in time, as mssql words tarn's TimeoutError", () => {
    const err = new TimeoutError('operation timed out for an unknown reason');
    // what mssql's ConnectionPool._acquire does to it before rejecting
    err.message = `Failed to acquire a connection from the pool: ${err.message}`;
    expect(isRetryableDbError(err)).toBe(true);
  });

  it('retries a request on a pool that is not open (ECONNCLOSED) or whose connections are not there yet (ENOTOPEN)', async () => {
    const pool = new mssql.ConnectionPool({
      server: '127.0.0.1',
      port: 1,
      user: 'u',
      password: 'p',
      options: { trustServerCertificate: true },
    });
    const closed = await pool
      .request()
      .query('SELECT 1')
      .catch((e: unknown) => e);
    expect((closed as { code?: string }).code).toBe('ECONNCLOSED');
    expect(isRetryableDbError(closed)).toBe(true);
    // what the pool raises when asked for a connection before it has its pool of them (or while closing)
    const notOpen = await (pool as unknown as { _acquire(): Promise<unknown> })._acquire().catch((e: unknown) => e);
    expect((notOpen as { code?: string }).code).toBe('ENOTOPEN');
    expect(isRetryableDbError(notOpen)).toBe(true);
    // and as TypeORM passes a failed query on (its QueryFailedError keeps the driver's error)
    expect(isRetryableDbError(new QueryFailedError('SELECT 1', [], notOpen as Error))).toBe(true);
  });

  it('retries a server that accepts the connection but never answers the login (ETIMEOUT), and one that refuses it (ESOCKET)', async () => {
    const silent = net.createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as net.AddressInfo).port;
    try {
      const timedOut = await new mssql.ConnectionPool({
        server: '127.0.0.1',
        port,
        user: 'u',
        password: 'p',
        connectionTimeout: 300,
        options: { trustServerCertificate: true },
      })
        .connect()
        .catch((e: unknown) => e);
      expect((timedOut as { code?: string }).code).toBe('ETIMEOUT');
      expect(isRetryableDbError(timedOut)).toBe(true);
    } finally {
      silent.close();
    }
    const refused = await new mssql.ConnectionPool({
      server: '127.0.0.1',
      port,
      user: 'u',
      password: 'p',
      connectionTimeout: 1_000,
      options: { trustServerCertificate: true },
    })
      .connect()
      .catch((e: unknown) => e);
    expect((refused as { code?: string }).code).toBe('ESOCKET');
    expect(isRetryableDbError(refused)).toBe(true);
  });

  it('retries a request sent on a connection a failover left closing (EINVALIDSTATE)', () => {
    // tedious raises it with this code; mssql's typings do not list it
    const err = Object.assign(
      new mssql.RequestError('Requests can only be made in the LoggedIn state, not the Final state'),
      { code: 'EINVALIDSTATE' },
    );
    expect(isRetryableDbError(new QueryFailedError('SELECT 1', [], err))).toBe(true);
  });

  it('does not retry what a retry cannot fix: a value too long, a syntax error, a conversion failure', () => {
    for (const [number, message] of [
      [8152, 'String or binary data would be truncated.'],
      [102, "Incorrect syntax near 'FROM'."],
      [245, "Conversion failed when converting the nvarchar value 'x' to data type int."],
    ] as const) {
      const err = Object.assign(new mssql.RequestError(message, 'EREQUEST'), { number });
      expect({ number, retryable: isRetryableDbError(err) }).toEqual({ number, retryable: false });
    }
  });

  it('reads a missing object, a permission denied and a collation conflict as standing faults (the worker pauses), nothing else', () => {
    const cases = [
      [208, "Invalid object name 'OPENJSON'.", 'missing table, column or function'],
      [207, "Invalid column name 'parent_plan_id'.", 'missing table, column or function'],
      [2812, "Could not find stored procedure 'sp_getapplock'.", 'missing table, column or function'],
      [
        229,
        "The INSERT permission was denied on the object 'plan_events', database 'ledger', schema 'dbo'.",
        'permission denied',
      ],
      [
        230,
        "The SELECT permission was denied on the column 'payload' of the object 'plan_events'.",
        'permission denied',
      ],
      [
        468,
        'Cannot resolve the collation conflict between "Latin1_General_100_BIN2" and "SQL_Latin1_General_CP1_CI_AS" in the equal to operation.',
        'collation conflict',
      ],
      [8152, 'String or binary data would be truncated.', undefined],
      [1205, 'Transaction was deadlocked', undefined],
    ] as const;
    for (const [number, message, kind] of cases) {
      const err = new QueryFailedError(
        'MERGE ...',
        [],
        Object.assign(new mssql.RequestError(message, 'EREQUEST'), { number }),
      );
      expect({ number, fault: standingFault(err) }).toEqual({
        number,
        fault: kind ? { kind, code: String(number), message: expect.stringContaining(message) } : undefined,
      });
    }
  });
});
