import { DataSource, DataSourceOptions, EntityManager, MssqlParameter } from 'typeorm';
import type { DatabaseTarget } from '../../config/database-url';
import { appendEventRows } from './ledger-rows';
import { limitedTarget, runLimited } from './limited-changes';
import { bumpHeadsJson, eventPlansJson, idsParam, jsonIdsIn, JsonRows, lockHeadsJson } from './mssql-json';
import { ID_COLLATION } from './mssql-collation';
import { moneyText, selectMoneyAsText } from './mssql-money';
import { typeMssqlParameters } from './mssql-parameters';
import { scopeRequestTimeouts, withRequestTimeout } from './mssql-request-timeout';
import type { SqlDialect } from './sql-dialect';
import { moneyFromColumn } from '../../pricing';
import { isGranted, missingRowPrivileges, ROW_PRIVILEGES } from './table-privileges';
import { pushAll } from '../../shared/arrays';

const MIGRATION_LOCK_NAME = 'plan-ledger:migrate';

/**
 * SQL Server (mssql over tedious).
 * - Rows and id lists go as one JSON parameter read with OPENJSON (mssql-json.ts): one statement
 *   text per table and kind of write, whatever the rows, so each compiles once; the upsert is a
 *   MERGE (WITH (HOLDLOCK) for keys two plans' writers may insert at once). Elsewhere (retention,
 *   reads) its caps apply: 2,100 parameters per request (2,000 with headroom), 1,000 rows per VALUES.
 * - Every parameter is declared by its kind, not its value (mssql-parameters.ts), so one
 *   statement compiles once; instants bind as `datetime2(3)`, like the columns.
 * - Ids are `nvarchar` with a binary collation (the migrations'); `datetime2(3)` timestamps.
 * - The migration lock is `sp_getapplock` owned by a transaction of its own on a connection of its
 *   own (application locks are per database); `migrate` runs with no request timeout.
 */
export const mssql: SqlDialect = {
  name: 'mssql',
  columnKinds: {
    uuid: { type: 'nvarchar', length: '36' },
    externalId: { type: 'nvarchar', length: '64' },
    longText: { type: 'nvarchar', length: 'MAX' },
    timestamp: { type: 'datetime2', precision: 3 },
    boolean: { type: 'bit' },
    int: { type: 'int' },
    bigint: { type: 'bigint' },
    money: { type: 'decimal', precision: 24, scale: 12 },
  },
  boundedText: 'nvarchar',
  entityBoolean: 'bit',
  nowExpression: 'SYSUTCDATETIME()',
  booleanLiteral: (value) => (value ? '1' : '0'),
  maxParams: 2_000,
  maxRows: 1_000,
  maxIdsPerStatement: 2_000, // ids plus at most 4 other values under 2,100 parameters per request
  // one JSON array parameter read with OPENJSON, in the ids' collation (mssql-json.ts)
  idList: { condition: (column, param) => jsonIdsIn(column, `:${param}`), value: idsParam },

  dataSourceOptions(target, common, poolSize, connection = {}): DataSourceOptions {
    return {
      ...common,
      type: 'mssql',
      host: target.host!,
      port: target.port,
      username: target.username,
      password: target.password,
      database: target.database,
      pool: { max: poolSize, min: 0 },
      // the driver's default is 15 s; a long retention batch or a busy server may need more; 0: none
      requestTimeout: connection.requestTimeoutMs ?? timeoutParam(target, 'requestTimeout', 15_000),
      connectionTimeout: timeoutParam(target, 'connectionTimeout', 15_000),
      options: {
        // TypeORM sets useUTC:false unless told; every instant here is UTC
        useUTC: true,
        // SET XACT_ABORT ON at login: an error or a cancelled request (request timeout) rolls the
        // whole transaction back on the server, instead of leaving it open, holding its locks, on a
        // connection the pool hands to the next caller
        abortTransactionOnError: true,
        // encrypted and verified unless the URL says otherwise (docker-compose's self-signed
        // server says trustServerCertificate=true; production servers should not need it)
        encrypt: target.params.encrypt !== 'false',
        trustServerCertificate: target.params.trustServerCertificate === 'true',
        // after a failover to another subnet, a connect tries every address of the listener in
        // parallel instead of spending its whole timeout on the dead one first
        multiSubnetFailover: target.params.multiSubnetFailover === 'true',
      },
    } as DataSourceOptions;
  },
  // declared parameter types that do not vary with the values (mssql-parameters.ts); retention's
  // own request timeout (mssql-request-timeout.ts); money selected as text (mssql-money.ts)
  prepareDataSource: (ds) => selectMoneyAsText(scopeRequestTimeouts(typeMssqlParameters(ds))),
  afterOpen: async () => undefined,
  serializesWrites: false,
  transaction: <T>(ds: DataSource, work: (m: EntityManager) => Promise<T>) => ds.transaction('READ COMMITTED', work),

  // a bare Date would bind as legacy `datetime` (3.33 ms steps)
  instant: (value) => new MssqlParameter(value, 'datetime2', 3),
  utcDay: (column) => `CAST(${column} AS DATE)`, // the mssql driver runs with useUTC: a Date at UTC midnight
  // SQL Server sums `int` into `int` and overflows past 2^31 (two billion tokens is a plausible billing total)
  sumInt: (column) => `SUM(CAST(${column} AS BIGINT))`,
  // the driver reads DECIMAL as a JS number (a binary float): the sum travels as text
  sumMoney: (column) => moneyText(`SUM(${column})`),
  summedMoney: (value) => moneyFromColumn(value) ?? 0n,
  textGroupKeys: (column) => [column, `DATALENGTH(${column})`],
  sameText: (column, param) => `(${column} = ${param} AND DATALENGTH(${column}) = DATALENGTH(${param}))`,

  deliveryClaim: { kind: 'output' },
  changeSome(m, c) {
    const t = limitedTarget(m, c);
    return c.stamp === undefined
      ? runLimited(m, `DELETE TOP (@1) FROM ${t.table} WHERE ${t.key} = @0`, [c.planId, c.limit])
      : runLimited(
          m,
          `UPDATE TOP (@1) ${t.table} SET ${t.deletedAt} = @2 WHERE ${t.key} = @0 AND ${t.deletedAt} IS NULL`,
          [c.planId, c.limit, t.stamp],
        );
  },
  withRequestTimeout,

  rows: (m) => new JsonRows(m, mssql),
  updatesChangedColumnsOnly: false,
  lockHeads: (m, sorted) => lockHeadsJson(m, mssql, sorted),
  bumpHeads: (m, ids) => bumpHeadsJson(m, ids),
  eventPlans: (m, ids) => eventPlansJson(m, ids),
  appendEvents: (m, rows) => appendEventRows(m, mssql, rows),
  errorsEndTransaction: true,
  skipsStoredEvents: false,

  identifierCollation: ID_COLLATION,
  async textColumns(ds) {
    const rows: Array<{ table: string; column: string; collation: string }> = await ds.query(
      `SELECT t.name AS "table", c.name AS "column", c.collation_name AS "collation" FROM sys.columns c JOIN sys.tables t ON t.object_id = c.object_id WHERE t.schema_id = SCHEMA_ID() AND c.collation_name IS NOT NULL`,
    );
    return rows.map((r) => ({ ...r, comparesBytes: r.collation === ID_COLLATION }));
  },

  migrations: {
    lock: {
      // TypeORM sends each statement outside a transaction on whichever pooled connection is free,
      // so a session-owned lock would live on a connection the migrations may not use (or that the
      // pool reaps while idle); a transaction of its own pins one connection until it ends
      holder: 'own-transaction',
      take: `DECLARE @r int; EXEC @r = sp_getapplock @Resource = N'${MIGRATION_LOCK_NAME}', @LockMode = N'Exclusive', @LockOwner = N'Transaction', @LockTimeout = -1; SELECT @r AS ok`,
      release: `EXEC sp_releaseapplock @Resource = N'${MIGRATION_LOCK_NAME}', @LockOwner = N'Transaction'`,
      // 0 granted at once, 1 granted after waiting; negative: timeout, deadlock, error
      ok: (rows) => Number(rows[0]?.ok) >= 0,
    },
    transaction: 'each',
  },

  transient: {
    /**
     * tedious: connection lost, timed out, instance lookup failed. `ELOGIN`: a login refused at
     * connect time, raised as a ConnectionError with the server's message and no number: what a
     * database still recovering from a restart or a failover answers (4060 "Cannot open database",
     * 18456 "Login failed", Azure's 40613 "not currently available"); a wrong password answers
     * the same, and the retry budget bounds it, as for 18456 below. `ENOTOPEN`: the mssql pool is
     * not open yet, or is closing. `EINVALIDSTATE`: a request sent on a connection tedious was
     * still closing or resetting (what a connection dropped by a failover answers).
     */
    codes: ['ESOCKET', 'ETIMEOUT', 'ECONNCLOSED', 'EINSTLOOKUP', 'ELOGIN', 'ENOTOPEN', 'EINVALIDSTATE'],
    /** The pool found no connection in time (tarn's TimeoutError, as mssql words it): the server is slow to accept logins. */
    messages: [/^Failed to acquire a connection from the pool/],
    /**
     * Error numbers (tedious `number`) after which the same transaction may succeed: the server
     * is busy, recovering, or out of a resource an operator or autogrowth restores. Azure SQL's
     * are its documented transient errors (reconfiguration, throttling, failover).
     */
    numbers: new Map<number, string>([
      [1205, 'chosen as deadlock victim'],
      [1222, 'lock request time-out'],
      [1204, 'cannot obtain a lock resource (lock memory exhausted)'],
      [701, 'insufficient system memory to run this query'],
      [8645, 'timeout waiting for memory resources to run the query'],
      [4060, 'cannot open the database (still recovering after a restart or failover)'],
      [
        18456,
        'login failed (the database is recovering; a bad password also gives this, and the retry budget bounds it)',
      ],
      [9002, 'transaction log full (until a log backup or autogrowth frees space)'],
      [596, 'cannot continue: the session is in the kill state (a failover or an operator ended it)'],
      [976, 'the database is not accessible: an Always On secondary not yet readable'],
      [978, 'the database is accessible only by read-intent connections (a failover moved the primary)'],
      [983, 'the availability replica is not in the primary or secondary role yet'],
      [3906, 'the database is read-only (a replica still becoming primary)'],
      [8628, 'timeout waiting to optimize the query (memory for compilation)'],
      [8651, 'could not perform the operation: the minimum query memory is not available'],
      [1105, 'filegroup full (until space is added)'],
      [40197, 'Azure SQL: service error while processing the request (reconfiguration)'],
      [40501, 'Azure SQL: service busy (throttling)'],
      [40613, 'Azure SQL: database not currently available (failover)'],
      [49918, 'Azure SQL: not enough resources to process the request'],
      [49919, 'Azure SQL: too many create or update operations in progress'],
      [49920, 'Azure SQL: too many operations in progress'],
      [10928, 'Azure SQL: resource limit reached (requests, sessions)'],
      [10929, 'Azure SQL: minimum resource guarantee not available'],
    ]),
    // a transaction with fewer rows takes fewer locks (retention and erasure retry with fewer)
    tooManyLocks: { numbers: new Set([1204]) },
  },
  capabilities: {
    // no OPENJSON here: it is what an old compatibility level lacks
    statement: (_purpose, tables) => ({
      sql:
        'SELECT d.compatibility_level AS compatibility_level, d.containment_desc AS containment, ' +
        'd.collation_name AS collation_name, d.is_read_committed_snapshot_on AS rcsi, ' +
        "HAS_PERMS_BY_NAME(DB_NAME(), N'DATABASE', N'CREATE TABLE') AS can_create_table, " +
        "HAS_PERMS_BY_NAME(SCHEMA_NAME(), N'SCHEMA', N'ALTER') AS can_alter_schema, " +
        't.name AS table_name, ' +
        ROW_PRIVILEGES.map(
          (p) =>
            `HAS_PERMS_BY_NAME(QUOTENAME(SCHEMA_NAME(t.schema_id)) + N'.' + QUOTENAME(t.name), N'OBJECT', N'${p}') AS can_${p.toLowerCase()}`,
        ).join(', ') +
        ' FROM sys.databases d LEFT JOIN sys.tables t ON t.schema_id = SCHEMA_ID() AND t.name IN (' +
        tables.map((_, i) => `@${i}`).join(', ') +
        ') WHERE d.database_id = DB_ID()',
      params: tables,
    }),
    read: (rows, purpose) => {
      const [d] = rows;
      if (!d) return { missing: ['sys.databases shows no row for the current database'], notes: [] };
      const missing: string[] = [];
      const level = Number(d.compatibility_level);
      if (level < 130)
        missing.push(
          `compatibility level ${level} is below 130, which OPENJSON needs (ALTER DATABASE CURRENT SET COMPATIBILITY_LEVEL = 160)`,
        );
      if (purpose === 'migrate') {
        if (!isGranted(d.can_create_table)) missing.push('the login has no CREATE TABLE permission');
        if (!isGranted(d.can_alter_schema)) missing.push('the login has no ALTER permission on its default schema');
      } else pushAll(missing, missingRowPrivileges(rows));
      const notes = [
        `containment ${String(d.containment)}`,
        `collation ${String(d.collation_name)}`,
        isGranted(d.rcsi)
          ? 'READ_COMMITTED_SNAPSHOT on'
          : 'READ_COMMITTED_SNAPSHOT off: readers wait for writers (ALTER DATABASE CURRENT SET READ_COMMITTED_SNAPSHOT ON)',
      ];
      return { missing, notes };
    },
  },
  standingFaults: [
    // invalid object name, invalid column name, could not find stored procedure
    { kind: 'missing table, column or function', numbers: new Set([208, 207, 2812]) },
    // permission denied on an object, on a column
    { kind: 'permission denied', numbers: new Set([229, 230]) },
    // cannot resolve the collation conflict
    { kind: 'collation conflict', numbers: new Set([468]) },
  ],
  isDuplicateKey: (f) => f.number === 2627 || f.number === 2601, // primary key / unique index
};

/** `?requestTimeout=` / `?connectionTimeout=` of an mssql:// URL, in milliseconds (checked by parseDatabaseUrl). */
function timeoutParam(target: DatabaseTarget, name: string, fallback: number): number {
  const v = target.params[name];
  return v === undefined ? fallback : Number(v);
}

export { ID_COLLATION };
