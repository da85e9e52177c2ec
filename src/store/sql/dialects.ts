import type { DataSource, EntityManager, QueryRunner, TableColumnOptions } from 'typeorm';
import { ColumnKind, columnType } from './column-kinds';
import { mssql } from './mssql';
import { mysql } from './mysql';
import { postgres } from './postgres';
import type { Dialect, SqlDialect } from './sql-dialect';
import { sqlite } from './sqlite';

export type { Dialect, SqlDialect } from './sql-dialect';
export type { ColumnKind } from './column-kinds';

/** Every supported database's dialect, by name. */
export const DIALECTS: Readonly<Record<Dialect, SqlDialect>> = { sqlite, postgres, mysql, mssql };

/** TypeORM driver types and the dialect each one speaks (MariaDB counts as mysql). */
const BY_DRIVER: Readonly<Record<string, SqlDialect>> = {
  'better-sqlite3': sqlite,
  postgres,
  mysql,
  mariadb: mysql,
  mssql,
};

/** The dialect of a live DataSource, QueryRunner or EntityManager. */
export function sqlDialectOf(source: DataSource | QueryRunner | EntityManager): SqlDialect {
  const type = ('connection' in source ? source.connection : source).options.type;
  const dialect = BY_DRIVER[type];
  if (!dialect) throw new Error(`unsupported database type "${type}"`);
  return dialect;
}

/** The dialect family's name of a live DataSource or QueryRunner (MariaDB counts as mysql). */
export function dialectOf(source: DataSource | QueryRunner | EntityManager): Dialect {
  return sqlDialectOf(source).name;
}

/** Column options for the migration Table API; pass `varchar: n` for a bounded string. */
export function columnTypeFor(
  dialect: Dialect,
  kind: ColumnKind | { varchar: number },
): Pick<TableColumnOptions, 'type' | 'length' | 'precision' | 'scale'> {
  return columnType(DIALECTS[dialect], kind);
}

/** SQL that yields "now" in UTC, for column defaults. */
export function nowExpression(dialect: Dialect): string {
  return DIALECTS[dialect].nowExpression;
}

/** Literal for a boolean default. */
export function booleanLiteral(dialect: Dialect, value: boolean): string {
  return DIALECTS[dialect].booleanLiteral(value);
}
