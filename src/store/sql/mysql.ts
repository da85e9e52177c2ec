import type { DataSource, DataSourceOptions, EntityManager, QueryRunner } from 'typeorm';
import { appendEventRows, bumpHeadsByUpdate, eventPlansByFind, lockHeadsByUpsert } from './ledger-rows';
import { limitedTarget, runLimited } from './limited-changes';
import { ValuesRows } from './row-stores';
import type { SqlDialect, Upsert } from './sql-dialect';
import { columnOf, insertStatement, setList, Statement } from './values-statements';
import { moneyFromColumn } from '../../pricing';

/**
 * GET_LOCK's wait in seconds: long enough to outlast any migration; a negative value is not portable across MySQL and
 * MariaDB.
 */
const MIGRATION_LOCK_WAIT_S = 7 * 86_400;

/**
 * MySQL and MariaDB (mysql2; TypeORM's `mysql` and `mariadb` types).
 * - Multi-row VALUES statements; the upsert is `ON DUPLICATE KEY UPDATE`. The client inlines
 *   values (no parameter cap; the limit is `max_allowed_packet`), so rows are capped instead.
 * - `datetime(3)` holds UTC wall time (`timezone: 'Z'`); tables are `utf8mb4`.
 * - Every DDL statement commits on its own: a `migrate` killed halfway is completed by the next
 *   run, which skips a statement whose object already exists (`prepareRunner`).
 * - The migration lock is `GET_LOCK`, named after the database (locks are server-wide).
 */
export const mysql: SqlDialect = {
  name: 'mysql',
  columnKinds: {
    uuid: { type: 'char', length: '36' },
    externalId: { type: 'varchar', length: '64' },
    longText: { type: 'longtext' },
    timestamp: { type: 'datetime', precision: 3 },
    boolean: { type: 'tinyint' },
    int: { type: 'int' },
    bigint: { type: 'bigint' },
    money: { type: 'decimal', precision: 24, scale: 12 },
  },
  boundedText: 'varchar',
  entityBoolean: 'boolean',
  nowExpression: 'CURRENT_TIMESTAMP(3)',
  booleanLiteral: (value) => (value ? '1' : '0'),
  maxParams: 20_000,
  maxRows: 2_000,
  maxIdsPerStatement: 50_000, // no parameter cap: only max_allowed_packet

  dataSourceOptions(target, common, poolSize): DataSourceOptions {
    return {
      ...common,
      type: target.driver as 'mysql' | 'mariadb',
      host: target.host,
      port: target.port,
      username: target.username,
      password: target.password,
      database: target.database,
      timezone: 'Z',
      charset: 'utf8mb4_unicode_ci',
      poolSize,
    } as DataSourceOptions;
  },
  prepareDataSource: (ds) => ds,
  afterOpen: async () => undefined,
  serializesWrites: false,
  // READ COMMITTED: MySQL's default REPEATABLE READ would not show, after a plan_heads lock is
  // granted, what the previous holder committed
  transaction: <T>(ds: DataSource, work: (m: EntityManager) => Promise<T>) => ds.transaction('READ COMMITTED', work),

  instant: (value) => value,
  utcDay: (column) => `DATE_FORMAT(${column}, '%Y-%m-%d')`, // stored as UTC wall time (timezone 'Z')
  sumInt: (column) => `SUM(${column})`,
  sumMoney: (column) => `SUM(${column})`,
  summedMoney: (value) => moneyFromColumn(value) ?? 0n,
  textGroupKeys: (column) => [column, `LENGTH(${column})`],
  sameText: (column, param) => `(${column} = ${param} AND LENGTH(${column}) = LENGTH(${param}))`,

  deliveryClaim: { kind: 'steps' },
  changeSome(m, c) {
    const t = limitedTarget(m, c);
    return c.stamp === undefined
      ? runLimited(m, `DELETE FROM ${t.table} WHERE ${t.key} = ? LIMIT ?`, [c.planId, c.limit])
      : runLimited(
          m,
          `UPDATE ${t.table} SET ${t.deletedAt} = ? WHERE ${t.key} = ? AND ${t.deletedAt} IS NULL LIMIT ?`,
          [t.stamp, c.planId, c.limit],
        );
  },
  withRequestTimeout: (_timeoutMs, work) => work(),

  rows: (m) => new ValuesRows(m, mysql, onDuplicateKeyStatement),
  updatesChangedColumnsOnly: false,
  lockHeads: (m, sorted) => lockHeadsByUpsert(m, mysql, sorted),
  bumpHeads: (m, ids) => bumpHeadsByUpdate(m, mysql, ids),
  eventPlans: (m, ids) => eventPlansByFind(m, mysql, ids),
  appendEvents: (m, rows) => appendEventRows(m, mysql, rows),
  errorsEndTransaction: false,
  skipsStoredEvents: false,

  identifierCollation: 'utf8mb4_bin',
  async textColumns(ds) {
    const rows: Array<{ table: string; column: string; collation: string }> = await ds.query(
      'SELECT TABLE_NAME AS `table`, COLUMN_NAME AS `column`, COLLATION_NAME AS `collation` FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND COLLATION_NAME IS NOT NULL',
    );
    return rows.map((r) => ({ ...r, comparesBytes: r.collation === 'utf8mb4_bin' }));
  },

  migrations: {
    lock: {
      holder: 'migrating-connection',
      // lock names are at most 64 characters; a digest of the database name keeps them short
      take: `SELECT GET_LOCK(CONCAT('plm:', SHA1(DATABASE())), ${MIGRATION_LOCK_WAIT_S}) AS ok`,
      release: `SELECT RELEASE_LOCK(CONCAT('plm:', SHA1(DATABASE()))) AS ok`,
      ok: (rows) => Number(rows[0]?.ok) === 1,
    },
    transaction: 'each',
    prepareRunner: rerunnableDdl,
  },

  /**
   * Deadlock (1213), lock wait timeout (1205), too many connections (1040), server shutdown (1053), a lost
   * connection.
   */
  transient: {
    codes: [
      'ER_LOCK_DEADLOCK',
      'ER_LOCK_WAIT_TIMEOUT',
      'PROTOCOL_CONNECTION_LOST',
      'ER_CON_COUNT_ERROR',
      'ER_SERVER_SHUTDOWN',
    ],
    errnos: new Set([1213, 1205, 1040, 1053]),
    // ER_LOCK_TABLE_FULL: the transaction's row locks filled the buffer pool's lock table
    tooManyLocks: { codes: ['ER_LOCK_TABLE_FULL'], errnos: new Set([1206]) },
  },
  standingFaults: [
    {
      kind: 'missing table, column or function',
      codes: ['ER_NO_SUCH_TABLE', 'ER_BAD_FIELD_ERROR', 'ER_SP_DOES_NOT_EXIST'],
      errnos: new Set([1146, 1054, 1305]),
    },
    {
      kind: 'permission denied',
      codes: ['ER_TABLEACCESS_DENIED_ERROR', 'ER_COLUMNACCESS_DENIED_ERROR'],
      errnos: new Set([1142, 1143]),
    },
    // "Illegal mix of collations"
    { kind: 'collation conflict', codes: ['ER_CANT_AGGREGATE_2COLLATIONS'], errnos: new Set([1267]) },
  ],
  isDuplicateKey: (f) => f.code === 'ER_DUP_ENTRY' || f.errno === 1062,
};

/** A multi-row upsert: `ON DUPLICATE KEY UPDATE`, the new row's values as `VALUES(column)`. */
export function onDuplicateKeyStatement(m: EntityManager, entity: string, rows: object[], upsert: Upsert): Statement {
  const col = columnOf(m, entity);
  const key = col(upsert.key);
  const fresh = (c: string) => `VALUES(${c})`;
  const sets = setList(
    upsert,
    col,
    `${key} = ${fresh(key)}`,
    (c) => `${c} = ${fresh(c)}`,
    (c, how) =>
      how === 'add' ? `${c} = ${c} + ${fresh(c)}` : `${c} = ${how === 'min' ? 'LEAST' : 'GREATEST'}(${c}, ${fresh(c)})`,
  );
  const { sql, params } = insertStatement(m, entity, rows);
  return { sql: `${sql} ON DUPLICATE KEY UPDATE ${sets}`, params };
}

/**
 * MySQL/MariaDB commit every DDL statement at once, so a migration killed halfway leaves its first
 * tables, columns or indexes behind while it is still recorded as pending; the rerun would stop at
 * "already exists". Each such statement is atomic, so on a rerun an object that exists was made by
 * that very statement: the error is skipped and the migration goes on. The data steps of the
 * migrations are written to be idempotent (an UPDATE that sets the same value twice).
 */
const ALREADY_DONE = new Set([
  1050, // ER_TABLE_EXISTS_ERROR: CREATE TABLE
  1060, // ER_DUP_FIELDNAME: ADD COLUMN
  1061, // ER_DUP_KEYNAME: CREATE INDEX, ADD UNIQUE
  1068, // ER_MULTIPLE_PRI_KEY: ADD PRIMARY KEY
  1826, // ER_FK_DUP_NAME: ADD CONSTRAINT ... FOREIGN KEY (MySQL 8)
  1051, // ER_BAD_TABLE_ERROR: DROP TABLE (a rerun of a revert)
  1091, // ER_CANT_DROP_FIELD_OR_KEY: DROP COLUMN / INDEX / FOREIGN KEY (a rerun of a revert)
]);
const DDL = /^\s*(CREATE|ALTER|DROP)\s/i;

function alreadyDone(err: unknown, sql: string): boolean {
  if (!DDL.test(sql)) return false;
  const e = err as { errno?: number; driverError?: { errno?: number }; message?: string };
  const errno = e?.errno ?? e?.driverError?.errno;
  if (errno !== undefined && ALREADY_DONE.has(errno)) return true;
  // MariaDB reports a duplicate foreign key name as errno 1005 with "Duplicate key on write" (errno 121)
  return errno === 1005 && /errno: 121/.test(e?.message ?? '');
}

function rerunnableDdl(runner: QueryRunner): void {
  const query = runner.query.bind(runner) as (sql: string, ...rest: unknown[]) => Promise<unknown>;
  runner.query = (async (sql: string, ...rest: unknown[]) => {
    try {
      return await query(sql, ...rest);
    } catch (err) {
      if (alreadyDone(err, sql)) return undefined;
      throw err;
    }
  }) as QueryRunner['query'];
}
