import type { SqlDialect } from './sql-dialect';

/**
 * How many rows one statement may carry: the dialect's row cap, and its parameter cap divided by
 * the table's columns (each dialect says why its caps are what they are).
 */
export function rowsPerStatement(dialect: Pick<SqlDialect, 'maxParams' | 'maxRows'>, columns: number): number {
  return Math.max(1, Math.min(dialect.maxRows, Math.floor(dialect.maxParams / Math.max(1, columns))));
}

/** Values per `IN (...)` list. */
export function valuesPerInList(dialect: Pick<SqlDialect, 'maxParams'>): number {
  return Math.min(dialect.maxParams, 1_000);
}

export function chunk<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
