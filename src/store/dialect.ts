import type { TableColumnOptions } from 'typeorm';

/**
 * The four SQL families plan-ledger supports. MariaDB and MySQL share one family: same types,
 * same driver (mysql2), TypeORM only differs in the `type` string.
 */
export type Dialect = 'sqlite' | 'postgres' | 'mysql' | 'mssql';

/**
 * Logical column kinds used by migrations and entities. The TypeORM Table API writes type names
 * verbatim (STACK-NOTES), so each kind maps to a name that is valid on its dialect.
 *
 * Frozen: migrations import this map, so a mapping that exists must never change meaning;
 * add a new kind instead.
 */
export type ColumnKind =
  | 'uuid' // a UUID kept as text (event ids, derived row ids)
  | 'externalId' // an id chosen by the executor (`plan_abc123`, UUIDs): 1..64 ASCII chars
  | 'longText' // unbounded text, also JSON documents
  | 'timestamp' // UTC instant, millisecond precision
  | 'boolean'
  | 'int'
  | 'bigint'; // 64-bit counts (plan token totals: sums of per-step int32 counts)

interface KindSpec {
  type: string;
  length?: string;
  precision?: number;
}

/**
 * Why these choices:
 * - SQL Server ids are nvarchar, not uniqueidentifier (which comes back UPPERCASE) nor varchar: the
 *   mssql driver sends JS strings as nvarchar, and an nvarchar parameter against a varchar column
 *   forces an implicit conversion that turns index seeks into scans.
 * - PostgreSQL keeps `uuid` (16 bytes, validated by the server); event ids are lower-cased upstream.
 * - `nvarchar(MAX)`/`text`/`longtext`: SQL Server's `text`/`ntext` are deprecated; MySQL `text` stops
 *   at 64 KiB, too small for step outputs and checkpoint state.
 * - Timestamps are UTC with milliseconds: `datetime2(3)` (a bare `datetime` rounds to 3.33 ms),
 *   `timestamptz(3)`, `datetime(3)`; SQLite stores TypeORM's text form.
 */
const KINDS: Record<Dialect, Record<ColumnKind, KindSpec>> = {
  mssql: {
    uuid: { type: 'nvarchar', length: '36' },
    externalId: { type: 'nvarchar', length: '64' },
    longText: { type: 'nvarchar', length: 'MAX' },
    timestamp: { type: 'datetime2', precision: 3 },
    boolean: { type: 'bit' },
    int: { type: 'int' },
    bigint: { type: 'bigint' },
  },
  postgres: {
    uuid: { type: 'uuid' },
    externalId: { type: 'varchar', length: '64' },
    longText: { type: 'text' },
    timestamp: { type: 'timestamptz', precision: 3 },
    boolean: { type: 'boolean' },
    int: { type: 'int' },
    bigint: { type: 'bigint' },
  },
  mysql: {
    uuid: { type: 'char', length: '36' },
    externalId: { type: 'varchar', length: '64' },
    longText: { type: 'longtext' },
    timestamp: { type: 'datetime', precision: 3 },
    boolean: { type: 'tinyint' },
    int: { type: 'int' },
    bigint: { type: 'bigint' },
  },
  sqlite: {
    uuid: { type: 'varchar', length: '36' },
    externalId: { type: 'varchar', length: '64' },
    longText: { type: 'text' },
    timestamp: { type: 'datetime' },
    boolean: { type: 'boolean' },
    int: { type: 'integer' },
    bigint: { type: 'integer' }, // SQLite's integers are 64-bit
  },
};

/** A bounded string column (`nvarchar(n)` on SQL Server so non-ASCII text survives). */
function varchar(dialect: Dialect, length: number): KindSpec {
  return { type: dialect === 'mssql' ? 'nvarchar' : 'varchar', length: String(length) };
}

/** SQL that yields "now" in UTC, for column defaults. */
export function nowExpression(dialect: Dialect): string {
  switch (dialect) {
    case 'mssql':
      return 'SYSUTCDATETIME()';
    case 'postgres':
      return 'CURRENT_TIMESTAMP';
    case 'mysql':
      return 'CURRENT_TIMESTAMP(3)';
    case 'sqlite':
      return "(STRFTIME('%Y-%m-%d %H:%M:%f', 'NOW'))";
  }
}

/** Literal for a boolean default: SQL Server and MySQL have no `false`, only 0/1. */
export function booleanLiteral(dialect: Dialect, value: boolean): string {
  if (dialect === 'postgres') return value ? 'true' : 'false';
  return value ? '1' : '0';
}

/** Column options for the migration Table API; pass `varchar: n` for a bounded string. */
export function columnTypeFor(
  dialect: Dialect,
  kind: ColumnKind | { varchar: number },
): Pick<TableColumnOptions, 'type' | 'length' | 'precision'> {
  const spec = typeof kind === 'string' ? KINDS[dialect][kind] : varchar(dialect, kind.varchar);
  const out: Pick<TableColumnOptions, 'type' | 'length' | 'precision'> = { type: spec.type };
  if (spec.length !== undefined) out.length = spec.length;
  if (spec.precision !== undefined) out.precision = spec.precision;
  return out;
}
