import { DataSource, MssqlParameter, QueryRunner } from 'typeorm';

/**
 * SQL Server caches one query plan per statement text *and* parameter declaration. A bare string
 * parameter is declared by the driver as `nvarchar(<length of this value>)`, so the same statement
 * with ids of other lengths compiles again and again (and a Date is declared as the legacy
 * `datetime`, which rounds to 3.33 ms). Every parameter therefore gets a declared type that depends
 * on its kind, not its value:
 *
 * | value                       | declared as       | why                                          |
 * |-----------------------------|-------------------|----------------------------------------------|
 * | string up to 4,000 chars    | nvarchar(4000)    | one declaration for every id and short text; compares with nvarchar(64) id columns without conversion, so index seeks stay seeks |
 * | longer string               | nvarchar(MAX)     | step outputs, checkpoint state, payloads      |
 * | Date                        | datetime2(3)      | the columns' type: UTC with milliseconds      |
 * | integer in int32            | int               |                                               |
 * | other integer               | bigint            | token totals                                  |
 * | other number                | float             |                                               |
 * | boolean                     | bit               |                                               |
 * | MssqlParameter              | as given          | statements that type a column precisely keep it (row-statements) |
 *
 * Applied in one place, the query runner of every SQL Server DataSource, so QueryBuilder, raw
 * queries, migrations, retention and reads all bind alike.
 */
export function typedMssqlParameter(value: unknown): unknown {
  if (value instanceof MssqlParameter) return value;
  if (typeof value === 'string')
    return new MssqlParameter(value, 'nvarchar', value.length <= 4000 ? 4000 : NVARCHAR_MAX);
  if (value instanceof Date) return new MssqlParameter(value, 'datetime2', 3);
  if (typeof value === 'number') {
    if (!Number.isInteger(value)) return new MssqlParameter(value, 'float');
    return value >= -2147483648 && value <= 2147483647
      ? new MssqlParameter(value, 'int')
      : new MssqlParameter(value, 'bigint');
  }
  if (typeof value === 'boolean') return new MssqlParameter(value, 'bit');
  return value;
}

/** The mssql driver's `MAX` length (declared as `nvarchar(MAX)`). */
const NVARCHAR_MAX = 65535;

/** A text parameter declared `nvarchar(MAX)` whatever its length: one declaration, so one plan, for every size. */
export function nvarcharMax(value: string): MssqlParameter {
  return new MssqlParameter(value, 'nvarchar', NVARCHAR_MAX);
}

type QueryFn = QueryRunner['query'];

/**
 * Make every query runner of a SQL Server DataSource bind typed parameters. The driver builds its
 * runners in `createQueryRunner`; each runner's `query` maps its parameters on the way in.
 */
export function typeMssqlParameters(ds: DataSource): DataSource {
  const driver = ds.driver as unknown as { createQueryRunner(mode: string): QueryRunner };
  const create = driver.createQueryRunner.bind(driver);
  driver.createQueryRunner = (mode: string) => {
    const runner = create(mode);
    const query: QueryFn = runner.query.bind(runner);
    runner.query = ((sql: string, parameters?: unknown[], structured?: boolean) =>
      query(sql, parameters?.map(typedMssqlParameter), structured as never)) as QueryFn;
    return runner;
  };
  return ds;
}
