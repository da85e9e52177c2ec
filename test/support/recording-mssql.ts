import { DataSource, QueryResult } from 'typeorm';
import { parseDatabaseUrl } from '../../src/config/database-url';
import { createDataSource } from '../../src/store/data-source';
import { typedMssqlParameter } from '../../src/store/sql/mssql-parameters';

/** One statement a SQL Server DataSource sent, with its parameters as the driver would bind them. */
export interface Recorded {
  sql: string;
  params: unknown[];
  /** Which query runner sent it (1, 2, ... in the order they were created): which connection. */
  runner: number;
}

/**
 * What the recording runner answers to a statement (rows), for the reads a code path needs; it may
 * throw, as the server would. `runner` says which query runner (connection) sent it.
 */
export type Answer = (sql: string, params: unknown[], runner: number) => Array<Record<string, unknown>> | undefined;

/**
 * A SQL Server DataSource that never connects: every statement the store, retention or a read
 * sends is recorded (text and typed parameters) and answered by `answer` (no rows by default), and
 * transactions are recorded as BEGIN / COMMIT / ROLLBACK. How SQL Server statements are checked
 * on machines with no SQL Server: their text, their parameters, their number and their order.
 */
export async function recordingMssql(
  answer: Answer = () => undefined,
): Promise<{ ds: DataSource; statements: Recorded[] }> {
  const ds = createDataSource(parseDatabaseUrl('mssql://sa:x@127.0.0.1:1/none'));
  await (ds as unknown as { buildMetadatas(): Promise<void> }).buildMetadatas();
  const statements: Recorded[] = [];
  let runners = 0;
  const create = (
    ds.driver as unknown as { createQueryRunner(mode: string): Record<string, unknown> }
  ).createQueryRunner.bind(ds.driver);
  (ds.driver as unknown as { createQueryRunner(mode: string): unknown }).createQueryRunner = (mode: string) => {
    const runner = create(mode) as Record<string, unknown> & { isTransactionActive: boolean };
    const id = ++runners;
    runner.query = async (sql: string, params: unknown[] = [], structured = false) => {
      const typed = params.map(typedMssqlParameter);
      statements.push({ sql, params: typed, runner: id });
      const rows = answer(sql, typed, id) ?? [];
      if (!structured) return rows;
      const result = new QueryResult();
      result.records = rows;
      result.raw = rows;
      result.affected = rows.length;
      return result;
    };
    runner.connect = async () => undefined;
    runner.release = async () => undefined;
    runner.startTransaction = async () => {
      runner.isTransactionActive = true;
      statements.push({ sql: 'BEGIN TRANSACTION', params: [], runner: id });
    };
    runner.commitTransaction = async () => {
      runner.isTransactionActive = false;
      statements.push({ sql: 'COMMIT', params: [], runner: id });
    };
    runner.rollbackTransaction = async () => {
      runner.isTransactionActive = false;
      statements.push({ sql: 'ROLLBACK', params: [], runner: id });
    };
    return runner;
  };
  return { ds, statements };
}

/** The value of a recorded parameter (typed parameters carry it in `value`). */
export function paramValue(p: unknown): unknown {
  return p !== null && typeof p === 'object' && 'value' in p ? (p as { value: unknown }).value : p;
}

/**
 * The values of recorded parameters, a JSON array of ids (an id list, one parameter) spread into
 * its ids.
 */
export function paramValues(params: unknown[]): unknown[] {
  return params.map(paramValue).flatMap((v) => {
    if (typeof v !== 'string' || !v.startsWith('[')) return [v];
    const parsed: unknown = JSON.parse(v);
    return Array.isArray(parsed) && parsed.every((x) => typeof x === 'string') ? parsed : [v];
  });
}

/** `IN (...)` over an id list sent as the JSON array `param` (`@0`), as SQL Server statements read one. */
export const jsonIdList = (param: string) =>
  `IN (SELECT v FROM OPENJSON(${param}) WITH (v nvarchar(4000) COLLATE Latin1_General_100_BIN2 '$'))`;
