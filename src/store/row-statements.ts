import type { EntityManager } from 'typeorm';
import type { Driver } from 'typeorm/driver/Driver';
import type { ColumnMetadata } from 'typeorm/metadata/ColumnMetadata';
import type { Dialect } from './dialect';
import { pgArrayLiteral } from './postgres-array';

/**
 * Multi-row INSERT, upsert and UPDATE statements as SQL text and parameters, built from entity
 * metadata. TypeORM's InsertQueryBuilder re-scans its parameter map for every value (a third of
 * the worker's CPU in a profile at 500-row batches); these build the same statements directly,
 * with the driver's own value preparation: `preparePersistentValue` (dates, booleans per dialect)
 * and, on SQL Server, typed parameters (`parametrizeValue`: a JS Date would otherwise bind as
 * legacy `datetime`). The SQL Server tests render them on a DataSource that never connects.
 */

export interface Statement {
  sql: string;
  params: unknown[];
}

/**
 * On a duplicate `key` (a primary key): overwrite the `update` properties with the new row's, and
 * for `keep`, keep the smaller ('min') or larger ('max') of the stored and the new value. Nothing
 * to update (both empty) still locks the stored row exclusively at once (`SET key = key`), so two
 * writers never hold a shared lock and then deadlock upgrading it (MySQL's INSERT IGNORE does).
 */
export interface Upsert {
  key: string;
  update: readonly string[];
  keep?: Readonly<Record<string, 'min' | 'max'>>;
}

type ParametrizingDriver = Driver & { parametrizeValue?: (c: ColumnMetadata, v: unknown) => unknown };

/**
 * Column list and one `(...)` tuple per row, with their parameters. `typedNulls`: bind NULLs as
 * typed parameters too (SQL Server's MERGE source: a bare NULL in VALUES is an int, which cannot
 * be assigned to a datetime2 column).
 */
function tuplesOf(m: EntityManager, entity: string, rows: object[], typedNulls = false): { columns: string[]; tuples: string[]; params: unknown[] } {
  const driver = m.connection.driver as ParametrizingDriver;
  const meta = m.connection.getMetadata(entity);
  const typed = driver.options.type === 'mssql' && driver.parametrizeValue;
  const params: unknown[] = [];
  const tuples = rows.map((row) => {
    const values = meta.columns.map((column) => {
      const value = driver.preparePersistentValue(column.getEntityValue(row as never), column);
      if ((value === null || value === undefined) && !(typed && typedNulls)) return 'NULL';
      params.push(typed ? driver.parametrizeValue!(column, value) : value);
      return driver.createParameter(`p${params.length - 1}`, params.length - 1);
    });
    return `(${values.join(', ')})`;
  });
  return { columns: meta.columns.map((c) => driver.escape(c.databaseName)), tuples, params };
}

/** A multi-row INSERT. */
export function insertStatement(m: EntityManager, entity: string, rows: object[]): Statement {
  const { columns, tuples, params } = tuplesOf(m, entity, rows);
  return { sql: `INSERT INTO ${m.connection.driver.escape(m.connection.getMetadata(entity).tableName)} (${columns.join(', ')}) VALUES ${tuples.join(', ')}`, params };
}

/** A multi-row upsert (SQLite, MySQL/MariaDB, SQL Server; PostgreSQL uses unnestInsertStatement). */
export function upsertStatement(m: EntityManager, dialect: Dialect, entity: string, rows: object[], upsert: Upsert): Statement {
  const meta = m.connection.getMetadata(entity);
  const q = (name: string) => m.connection.driver.escape(name);
  const col = (prop: string) => q(meta.findColumnWithPropertyName(prop)!.databaseName);
  if (dialect === 'mssql') return mergeStatement(m, entity, rows, upsert);
  const key = col(upsert.key);
  const fresh = (c: string) => (dialect === 'mysql' ? `VALUES(${c})` : `excluded.${c}`);
  const least = dialect === 'sqlite' ? 'MIN' : 'LEAST';
  const greatest = dialect === 'sqlite' ? 'MAX' : 'GREATEST';
  const sets = setList(upsert, col, `${key} = ${fresh(key)}`, (c) => `${c} = ${fresh(c)}`, (c, how) => `${c} = ${how === 'min' ? least : greatest}(${c}, ${fresh(c)})`);
  const { sql, params } = insertStatement(m, entity, rows);
  const tail = dialect === 'mysql' ? ` ON DUPLICATE KEY UPDATE ${sets}` : ` ON CONFLICT (${key}) DO UPDATE SET ${sets}`;
  return { sql: sql + tail, params };
}

/** SQL Server: MERGE with HOLDLOCK, so a concurrent insert of the same key waits instead of failing. */
function mergeStatement(m: EntityManager, entity: string, rows: object[], upsert: Upsert): Statement {
  const meta = m.connection.getMetadata(entity);
  const q = (name: string) => m.connection.driver.escape(name);
  const col = (prop: string) => q(meta.findColumnWithPropertyName(prop)!.databaseName);
  const { columns, tuples, params } = tuplesOf(m, entity, rows, true);
  const key = col(upsert.key);
  // lock only: a no-op on a column that is not the key (updating a key moves the row)
  const other = q(meta.columns.find((c) => c.propertyName !== upsert.key)!.databaseName);
  const sets = setList(
    upsert,
    col,
    `${other} = t.${other}`,
    (c) => `${c} = s.${c}`,
    (c, how) => `${c} = CASE WHEN s.${c} ${how === 'min' ? '<' : '>'} t.${c} THEN s.${c} ELSE t.${c} END`,
  );
  const sql =
    `MERGE INTO ${q(meta.tableName)} WITH (HOLDLOCK) AS t USING (VALUES ${tuples.join(', ')}) AS s (${columns.join(', ')}) ON t.${key} = s.${key}` +
    ` WHEN MATCHED THEN UPDATE SET ${sets}` +
    ` WHEN NOT MATCHED THEN INSERT (${columns.join(', ')}) VALUES (${columns.map((c) => `s.${c}`).join(', ')});`;
  return { sql, params };
}

/** The SET list of an upsert; `lockOnly` when it updates nothing. */
function setList(upsert: Upsert, col: (prop: string) => string, lockOnly: string, overwrite: (c: string) => string, keep: (c: string, how: 'min' | 'max') => string): string {
  const sets = [...upsert.update.map((p) => overwrite(col(p))), ...Object.entries(upsert.keep ?? {}).map(([p, how]) => keep(col(p), how))];
  return sets.length > 0 ? sets.join(', ') : lockOnly;
}

/**
 * PostgreSQL: the INSERT with one array parameter per column, unnested server-side. The text is
 * the same whatever the number of rows, and the server parses one array per column instead of
 * planning a VALUES list of rows x columns parameters: ~1.7x the rows per second of a multi-row
 * VALUES INSERT here, with less CPU on both sides (BENCHMARKS.md, "End to end"). Row values are
 * the store's own (strings, numbers, booleans, Dates, null); the entities have no transformers.
 * `upsert`: as upsertStatement. `jsonText`: text columns whose row values are still JS values (an
 * event's payload): all rows' values go as one JSON array, which the server splits into each
 * element's JSON text, exactly JSON.stringify's (the json type keeps its input text). That saves a
 * stringify and an escape pass per row on the worker, its busiest process.
 */
export function unnestInsertStatement(m: EntityManager, entity: string, rows: object[], options: { upsert?: Upsert; jsonText?: readonly string[] } = {}): Statement {
  const driver = m.connection.driver;
  const meta = m.connection.getMetadata(entity);
  const json = new Set(options.jsonText);
  const params = meta.columns.map((c) => {
    const values = rows.map((row) => (row as Record<string, unknown>)[c.propertyName]);
    return json.has(c.propertyName) ? JSON.stringify(values) : pgArrayLiteral(values);
  });
  const columns = meta.columns.map((c) => driver.escape(c.databaseName)).join(', ');
  const arrays = meta.columns
    .map((c, i) =>
      json.has(c.propertyName)
        ? `ARRAY(SELECT j.v::text FROM json_array_elements($${i + 1}::json) WITH ORDINALITY AS j(v, n) ORDER BY j.n)`
        : `$${i + 1}::${c.type as string}[]`,
    )
    .join(', ');
  const table = driver.escape(meta.tableName);
  let conflict = '';
  if (options.upsert) {
    const col = (prop: string) => driver.escape(meta.findColumnWithPropertyName(prop)!.databaseName);
    const key = col(options.upsert.key);
    const sets = setList(options.upsert, col, `${key} = EXCLUDED.${key}`, (c) => `${c} = EXCLUDED.${c}`, (c, how) => `${c} = ${how === 'min' ? 'LEAST' : 'GREATEST'}(${table}.${c}, EXCLUDED.${c})`);
    conflict = ` ON CONFLICT (${key}) DO UPDATE SET ${sets}`;
  }
  return { sql: `INSERT INTO ${table} (${columns}) SELECT * FROM unnest(${arrays})${conflict}`, params };
}

/**
 * PostgreSQL: UPDATE of existing rows, matched on `key`, setting only the `update` properties,
 * one array parameter per column. Columns left out are not rewritten (large text stays where it
 * is, and rows whose indexed columns do not change can be updated in place, HOT). The key array
 * also bounds the scan of the table (`= ANY($1)`): joined to the unnest alone, the planner hashes
 * the whole table once it is large next to the batch, a cost that grows with the stored history.
 */
export function unnestUpdateStatement(m: EntityManager, entity: string, rows: object[], key: string, update: readonly string[]): Statement {
  const driver = m.connection.driver;
  const meta = m.connection.getMetadata(entity);
  const columns = [key, ...update].map((prop) => meta.findColumnWithPropertyName(prop)!);
  const params = columns.map((c) => pgArrayLiteral(rows.map((row) => (row as Record<string, unknown>)[c.propertyName])));
  const names = columns.map((c) => driver.escape(c.databaseName));
  const arrays = columns.map((c, i) => `$${i + 1}::${c.type as string}[]`).join(', ');
  const sets = names.slice(1).map((n) => `${n} = v.${n}`).join(', ');
  const table = driver.escape(meta.tableName);
  const k = `${table}.${names[0]}`;
  return { sql: `UPDATE ${table} SET ${sets} FROM unnest(${arrays}) AS v(${names.join(', ')}) WHERE ${k} = ANY($1::${columns[0].type as string}[]) AND ${k} = v.${names[0]}`, params };
}
