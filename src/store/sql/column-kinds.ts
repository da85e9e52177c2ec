/**
 * Logical column kinds used by migrations and entities. The TypeORM Table API writes type names
 * verbatim, so each dialect maps each kind to a name valid on its database (its `columnKinds`).
 *
 * Frozen: migrations read these maps, so a mapping that exists must never change meaning; add a
 * new kind instead.
 *
 * Why the dialects' choices:
 * - SQL Server ids are nvarchar, not uniqueidentifier (which comes back UPPERCASE) nor varchar: the
 *   mssql driver sends JS strings as nvarchar, and an nvarchar parameter against a varchar column
 *   forces an implicit conversion that turns index seeks into scans.
 * - PostgreSQL keeps `uuid` (16 bytes, validated by the server); event ids are lower-cased upstream.
 * - `nvarchar(MAX)`/`text`/`longtext`: SQL Server's `text`/`ntext` are deprecated; MySQL `text` stops
 *   at 64 KiB, too small for step outputs and checkpoint state.
 * - Timestamps are UTC with milliseconds: `datetime2(3)` (a bare `datetime` rounds to 3.33 ms),
 *   `timestamptz(3)`, `datetime(3)`; SQLite stores TypeORM's text form.
 */
export type ColumnKind =
  | 'uuid' // a UUID kept as text (event ids, derived row ids)
  | 'externalId' // an id chosen by the executor (`plan_abc123`, UUIDs): 1..64 ASCII chars
  | 'longText' // unbounded text, also JSON documents
  | 'timestamp' // UTC instant, millisecond precision
  | 'boolean'
  | 'int'
  | 'bigint' // 64-bit counts (plan token totals: sums of per-step int32 counts)
  | 'money'; // an exact amount in USD, 12 decimals (DECIMAL(24,12); SQLite: text, see its dialect)

/** A column type as the migration Table API takes it. */
export interface KindSpec {
  type: string;
  length?: string;
  precision?: number;
  /** Digits after the decimal point (DECIMAL(precision, scale)). */
  scale?: number;
}

/** How a database names its column types: what migrations and entities need of a dialect. */
export interface ColumnTypes {
  /** Column types per logical kind. */
  readonly columnKinds: Readonly<Record<ColumnKind, KindSpec>>;
  /** The type of a bounded string column (`nvarchar` on SQL Server, so non-ASCII text survives). */
  readonly boundedText: string;
  /** The type an entity declares for a boolean column (TypeORM's `boolean` reads MySQL's tinyint as true/false). */
  readonly entityBoolean: 'bit' | 'boolean';
}

/** A column's type for the migration Table API; pass `varchar: n` for a bounded string. */
export function columnType(types: ColumnTypes, kind: ColumnKind | { varchar: number }): KindSpec {
  const spec: KindSpec =
    typeof kind === 'string' ? types.columnKinds[kind] : { type: types.boundedText, length: String(kind.varchar) };
  const out: KindSpec = { type: spec.type };
  if (spec.length !== undefined) out.length = spec.length;
  if (spec.precision !== undefined) out.precision = spec.precision;
  if (spec.scale !== undefined) out.scale = spec.scale;
  return out;
}
