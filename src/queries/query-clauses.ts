import type { DataSource, SelectQueryBuilder } from 'typeorm';
import { sqlDialectOf } from '../store/sql/dialects';
import type { DateRange } from './query-args';

/* Clauses the read queries share (the analytics, the rollups, cost, tokens, reconcile, the plans list). */

/** Adds `[from, to)` on the plan alias `p`. */
export function whereCreatedIn<T extends object>(
  ds: DataSource,
  qb: SelectQueryBuilder<T>,
  range: DateRange,
): SelectQueryBuilder<T> {
  if (range.from) qb.andWhere('p.createdAt >= :from', { from: sqlDialectOf(ds).instant(range.from) });
  if (range.to) qb.andWhere('p.createdAt < :to', { to: sqlDialectOf(ds).instant(range.to) });
  return qb;
}

/** Groups by these text columns, values that differ only in trailing spaces apart (the dialect's textGroupKeys). */
export function groupByText<T extends object>(
  ds: DataSource,
  qb: SelectQueryBuilder<T>,
  columns: string[],
): SelectQueryBuilder<T> {
  const keys = columns.flatMap((c) => sqlDialectOf(ds).textGroupKeys(c));
  qb.groupBy(keys[0]);
  for (const key of keys.slice(1)) qb.addGroupBy(key);
  return qb;
}
