import type { Dialect } from './dialect';

/**
 * How many bound parameters one statement may carry, with headroom. TypeORM does not chunk.
 * SQL Server: 2,100 per request and 1,000 rows per VALUES. PostgreSQL: 65,535. SQLite: 32,766
 * (better-sqlite3's build). MySQL has no parameter cap (the client inlines values); its limit is
 * max_allowed_packet, so rows are capped instead.
 */
const MAX_PARAMS: Record<Dialect, number> = { mssql: 2_000, postgres: 60_000, sqlite: 30_000, mysql: 20_000 };
const MAX_ROWS: Record<Dialect, number> = { mssql: 1_000, postgres: 5_000, sqlite: 5_000, mysql: 2_000 };

/** Rows per multi-row INSERT for a table with `columns` columns. */
export function rowsPerStatement(dialect: Dialect, columns: number): number {
  return Math.max(1, Math.min(MAX_ROWS[dialect], Math.floor(MAX_PARAMS[dialect] / Math.max(1, columns))));
}

/** Values per `IN (...)` list. */
export function valuesPerInList(dialect: Dialect): number {
  return Math.min(MAX_PARAMS[dialect], 1_000);
}

export function chunk<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
