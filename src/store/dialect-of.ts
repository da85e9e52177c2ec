import type { DataSource, QueryRunner } from 'typeorm';
import type { Dialect } from './dialect';

/** The dialect family of a live DataSource or QueryRunner (MariaDB counts as mysql). */
export function dialectOf(source: DataSource | QueryRunner): Dialect {
  const type = ('connection' in source ? source.connection : source).options.type;
  switch (type) {
    case 'better-sqlite3':
      return 'sqlite';
    case 'postgres':
      return 'postgres';
    case 'mysql':
    case 'mariadb':
      return 'mysql';
    case 'mssql':
      return 'mssql';
    default:
      throw new Error(`unsupported database type "${type}"`);
  }
}
