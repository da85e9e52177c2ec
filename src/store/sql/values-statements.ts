import type { EntityManager } from 'typeorm';
import type { Driver } from 'typeorm/driver/Driver';
import type { ColumnMetadata } from 'typeorm/metadata/ColumnMetadata';
import type { KeepHow, Upsert } from './sql-dialect';

/**
 * Multi-row INSERT statements as SQL text and parameters, built from entity metadata, for the
 * databases that take rows as a VALUES list (MySQL/MariaDB, SQL Server). TypeORM's
 * InsertQueryBuilder re-scans its parameter map for every value (a third of the worker's CPU in a
 * profile at 500-row batches); these build the same statements directly, with the driver's own
 * value preparation: `preparePersistentValue` (dates, booleans per dialect) and, where the
 * dialect asks for it, typed parameters (`parametrizeValue`). Each dialect adds its own upsert
 * clause (mysql.ts, mssql.ts). The SQL Server tests render them on a DataSource that never connects.
 */

export interface Statement {
  sql: string;
  params: unknown[];
}

type ParametrizingDriver = Driver & { parametrizeValue?: (c: ColumnMetadata, v: unknown) => unknown };

/** How a dialect binds row values. */
export interface TupleOptions {
  /**
   * Bind values through the driver's `parametrizeValue` (SQL Server: a JS Date would otherwise bind as legacy
   * `datetime`).
   */
  typed?: boolean;
  /** Bind NULLs as (typed) parameters too instead of the literal NULL. */
  typedNulls?: boolean;
}

/** Column list and one `(...)` tuple per row, with their parameters. */
export function tuplesOf(
  m: EntityManager,
  entity: string,
  rows: object[],
  options: TupleOptions = {},
): { columns: string[]; tuples: string[]; params: unknown[] } {
  const driver = m.connection.driver as ParametrizingDriver;
  const meta = m.connection.getMetadata(entity);
  const typed = options.typed === true && driver.parametrizeValue !== undefined;
  const params: unknown[] = [];
  const tuples = rows.map((row) => {
    const values = meta.columns.map((column) => {
      const value = driver.preparePersistentValue(column.getEntityValue(row as never), column);
      if ((value === null || value === undefined) && !(typed && options.typedNulls)) return 'NULL';
      params.push(typed ? driver.parametrizeValue!(column, value) : value);
      return driver.createParameter(`p${params.length - 1}`, params.length - 1);
    });
    return `(${values.join(', ')})`;
  });
  return { columns: meta.columns.map((c) => driver.escape(c.databaseName)), tuples, params };
}

/** A multi-row INSERT. */
export function insertStatement(
  m: EntityManager,
  entity: string,
  rows: object[],
  options: TupleOptions = {},
): Statement {
  const { columns, tuples, params } = tuplesOf(m, entity, rows, options);
  return {
    sql: `INSERT INTO ${m.connection.driver.escape(m.connection.getMetadata(entity).tableName)} (${columns.join(', ')}) VALUES ${tuples.join(', ')}`,
    params,
  };
}

/** The SET list of an upsert; `lockOnly` when it updates nothing. */
export function setList(
  upsert: Upsert,
  col: (prop: string) => string,
  lockOnly: string,
  overwrite: (c: string) => string,
  keep: (c: string, how: KeepHow) => string,
): string {
  const sets = [
    ...upsert.update.map((p) => overwrite(col(p))),
    ...Object.entries(upsert.keep ?? {}).map(([p, how]) => keep(col(p), how)),
  ];
  return sets.length > 0 ? sets.join(', ') : lockOnly;
}

/** A column of `entity` by property, as the driver quotes it. */
export function columnOf(m: EntityManager, entity: string): (prop: string) => string {
  const meta = m.connection.getMetadata(entity);
  return (prop) => m.connection.driver.escape(meta.findColumnWithPropertyName(prop)!.databaseName);
}
