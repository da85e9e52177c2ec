import { DataSource, MssqlParameter } from 'typeorm';
import { dialectOf } from '../store/dialect-of';

/**
 * The few places where portable QueryBuilder SQL is not enough. Everything else (pagination as
 * LIMIT/OFFSET or OFFSET/FETCH, quoting, parameters) is TypeORM's per-driver job.
 */

/**
 * SQL for the UTC calendar day of a timestamp expression (seed 000's `CAST(created_at AS DATE)`).
 * Text where the database allows it, so the driver cannot shift the day into a local time zone:
 * pg parses DATE as local midnight, hence `to_char` of the UTC wall time. Neither the session's
 * time zone nor the process's may move a plan to another day (test/queries/analytics-utc-days):
 * - PostgreSQL: `timestamptz` renders and casts in the session's TimeZone (a database or role
 *   default, or `options=-c TimeZone=...`), so seed 000's cast would group by local day there;
 *   `AT TIME ZONE 'UTC'` gives the UTC wall time whatever the session says;
 * - MySQL/MariaDB `datetime(3)` and SQL Server `datetime2(3)` hold no zone and are written as UTC
 *   wall time (mysql2 `timezone: 'Z'`, tedious `useUTC`); the session `time_zone` converts only
 *   MySQL `TIMESTAMP` columns, which this schema does not use.
 */
export function utcDayExpression(ds: DataSource, column: string): string {
  switch (dialectOf(ds)) {
    case 'mssql':
      return `CAST(${column} AS DATE)`; // the mssql driver runs with useUTC: a Date at UTC midnight
    case 'postgres':
      return `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD')`;
    case 'mysql':
      return `DATE_FORMAT(${column}, '%Y-%m-%d')`; // stored as UTC wall time (timezone 'Z')
    case 'sqlite':
      return `substr(${column}, 1, 10)`; // TypeORM stores 'YYYY-MM-DD HH:MM:SS.SSS' in UTC
  }
}

/**
 * A timestamp parameter. SQL Server: a bare Date is sent as legacy `datetime` (3.33 ms steps), so
 * it is typed `datetime2(3)` like the columns. Elsewhere TypeORM and the drivers convert a Date
 * to the column's representation (SQLite: the same UTC text it stores).
 */
export function instantParam(ds: DataSource, value: Date): unknown {
  return dialectOf(ds) === 'mssql' ? new MssqlParameter(value, 'datetime2', 3) : value;
}

/**
 * SUM of an int column. SQL Server sums `int` into `int` and overflows past 2^31 (two billion
 * tokens is a plausible billing total), so it sums as BIGINT there; PostgreSQL already returns
 * bigint, MySQL DECIMAL, SQLite 64-bit integers.
 */
export function sumOf(ds: DataSource, column: string): string {
  return dialectOf(ds) === 'mssql' ? `SUM(CAST(${column} AS BIGINT))` : `SUM(${column})`;
}
