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
  | 'bigint'; // 64-bit counts (plan token totals: sums of per-step int32 counts)

/** A column type as the migration Table API takes it. */
export interface KindSpec {
  type: string;
  length?: string;
  precision?: number;
}
