import { In, MssqlParameter } from 'typeorm';
import { SqlServerQueryRunner } from 'typeorm/driver/sqlserver/SqlServerQueryRunner';
import { loadConfig } from '../../src/config/config';
import { parseDatabaseUrl } from '../../src/config/database-url';
import { createDataSource, dataSourceOptions, openDataSource } from '../../src/store/data-source';
import { isRetryableDbError } from '../../src/store/db-errors';
import { ENTITY } from '../../src/store/entities';
import { createThrowawayDb, MARIADB_ADMIN_URL } from '../support/databases';

// No SQL Server here: the query runner's driver call is replaced, so what reaches it is recorded.
describe('SQL Server parameters', () => {
  const sent: unknown[][] = [];
  beforeAll(() => {
    jest.spyOn(SqlServerQueryRunner.prototype, 'query').mockImplementation((async (
      _sql: string,
      params?: unknown[],
      structured?: boolean,
    ) => {
      sent.push(params ?? []);
      return structured ? { records: [], raw: [] } : [];
    }) as never);
  });
  afterAll(() => jest.restoreAllMocks());

  const declared = (p: unknown) => {
    const m = p as MssqlParameter & { params: unknown[] };
    return `${m.type}(${m.params.join(',')})`;
  };

  it('declares every parameter by its kind, never by the length of its value', async () => {
    const ds = createDataSource(parseDatabaseUrl('mssql://sa:x@127.0.0.1:1/none'));
    await (ds as unknown as { buildMetadatas(): Promise<void> }).buildMetadatas();
    const runner = ds.createQueryRunner();
    const long = 'x'.repeat(4001);
    await runner.query('SELECT @0, @1, @2, @3, @4, @5, @6, @7', [
      'p',
      'plan_with_a_longer_id',
      long,
      new Date(0),
      7,
      2 ** 40,
      true,
      new MssqlParameter('k', 'nvarchar', 64),
    ]);
    expect(sent.at(-1)!.map(declared)).toEqual([
      'nvarchar(4000)',
      'nvarchar(4000)',
      'nvarchar(65535)',
      'datetime2(3)',
      'int()',
      'bigint()',
      'bit()',
      'nvarchar(64)',
    ]);
    // QueryBuilder statements (reads, retention) go through the same runner: ids of two lengths, one declaration
    // (TypeORM types a find's values by their column already; raw statements get the table above)
    await ds.getRepository(ENTITY.plan).find({ where: { id: In(['a', 'plan_0123456789']) } });
    const params = sent.at(-1)!;
    expect(params.length).toBeGreaterThanOrEqual(2);
    expect([...new Set(params.map(declared))]).toEqual(['nvarchar(64)']); // the column's own type
  });
});

describe('SQL Server connection options', () => {
  it('encrypts and verifies the certificate unless the URL says otherwise; timeouts come from the URL', () => {
    const secure = dataSourceOptions(parseDatabaseUrl('mssql://u:p@db:1433/ledger')) as {
      options: Record<string, unknown>;
      requestTimeout: number;
    };
    expect(secure.options).toMatchObject({ encrypt: true, trustServerCertificate: false, useUTC: true });
    expect(secure.requestTimeout).toBe(15_000);
    const compose = dataSourceOptions(
      parseDatabaseUrl('mssql://u:p@db:1433/ledger?trustServerCertificate=true&requestTimeout=60000'),
    ) as typeof secure;
    expect(compose.options).toMatchObject({ encrypt: true, trustServerCertificate: true });
    expect(compose.requestTimeout).toBe(60_000);
    expect(secure.options.multiSubnetFailover).toBe(false);
    const listener = dataSourceOptions(
      parseDatabaseUrl('mssql://u:p@ag-listener:1433/ledger?multiSubnetFailover=true'),
    ) as typeof secure;
    expect(listener.options).toMatchObject({ multiSubnetFailover: true, encrypt: true });
  });

  it('refuses an unknown or malformed mssql:// parameter with one line naming it', () => {
    expect(() => parseDatabaseUrl('mssql://u:p@db/ledger?requestTimout=5')).toThrow(
      /unknown parameter "requestTimout"; mssql:\/\/ takes encrypt, trustServerCertificate, requestTimeout, connectionTimeout, multiSubnetFailover/,
    );
    expect(() => parseDatabaseUrl('mssql://u:p@db/ledger?requestTimeout=15s')).toThrow(
      /requestTimeout must be a number of milliseconds, not "15s"/,
    );
    expect(() => parseDatabaseUrl('mssql://u:secret@db/ledger?encrypt=yes')).toThrow(
      /^"mssql:\/\/u:\*\*\*@db\/ledger\?encrypt=yes": encrypt must be true or false/,
    );
  });

  it('retries what SQL Server and Azure SQL report while recovering, throttling or short of a resource', () => {
    for (const number of [
      1205, 1222, 1204, 701, 8645, 4060, 18456, 9002, 1105, 40197, 40501, 40613, 49918, 49919, 49920, 10928, 10929,
      // an Always On failover: a killed session, a replica not yet primary or readable, compile memory
      596, 976, 978, 983, 3906, 8628, 8651,
    ]) {
      expect([number, isRetryableDbError({ message: 'x', driverError: { number } })]).toEqual([number, true]);
    }
    for (const number of [2627, 515, 8152, 245, 102])
      expect([number, isRetryableDbError({ message: 'x', driverError: { number } })]).toEqual([number, false]);
  });
});

describe('DATABASE_PASSWORD', () => {
  const password = 'p#/?%@:x y';

  it('takes the password as is, so characters a URL would misread work', () => {
    const config = loadConfig({ DATABASE_URL: 'mssql://planledger@db:1433/ledger', DATABASE_PASSWORD: password });
    expect(config.database.password).toBe(password);
    expect(config.database.redacted).toBe('mssql://planledger@db:1433/ledger');
    expect(parseDatabaseUrl(config.database.url).password).toBe(password);
  });

  it('refuses a password in both places, a URL without a user, and SQLite, naming the variable', () => {
    expect(() => loadConfig({ DATABASE_URL: 'postgres://u:a@db/x', DATABASE_PASSWORD: 'b' })).toThrow(
      /DATABASE_PASSWORD: "postgres:\/\/u:\*\*\*@db\/x" holds a password already; put it in DATABASE_URL or DATABASE_PASSWORD, not both/,
    );
    expect(() => loadConfig({ DATABASE_URL: 'postgres://db/x', DATABASE_PASSWORD: 'b' })).toThrow(
      /names no user for DATABASE_PASSWORD/,
    );
    expect(() => loadConfig({ DATABASE_URL: 'sqlite:./x.sqlite', DATABASE_PASSWORD: 'b' })).toThrow(
      /a SQLite database has no password; unset DATABASE_PASSWORD/,
    );
  });

  it('connects to a real MariaDB as a user whose password holds # / ? % @ : and a space', async () => {
    const db = await createThrowawayDb('mariadb');
    const admin = await openDataSource(parseDatabaseUrl(MARIADB_ADMIN_URL), { poolSize: 1 });
    const user = `pl_pw_${Date.now().toString(36)}`;
    const name = db.target.database!;
    try {
      await admin.query(`CREATE USER '${user}'@'%' IDENTIFIED BY '${password}'`);
      await admin.query(`CREATE USER '${user}'@'localhost' IDENTIFIED BY '${password}'`);
      await admin.query(`GRANT ALL ON \`${name}\`.* TO '${user}'@'%', '${user}'@'localhost'`);
      const url = new URL(MARIADB_ADMIN_URL);
      url.username = user;
      url.password = '';
      url.pathname = `/${name}`;
      const config = loadConfig({ DATABASE_URL: url.toString(), DATABASE_PASSWORD: password });
      const ds = await openDataSource(config.database, { poolSize: 1 });
      expect(await ds.query('SELECT CURRENT_USER() AS u')).toEqual([
        { u: expect.stringMatching(new RegExp(`^${user}@`)) },
      ]);
      await ds.destroy();
    } finally {
      await admin.query(`DROP USER IF EXISTS '${user}'@'%', '${user}'@'localhost'`);
      await admin.destroy();
      await db.drop();
    }
  });
});
