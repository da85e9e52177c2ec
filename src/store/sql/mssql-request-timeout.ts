import { AsyncLocalStorage } from 'node:async_hooks';
import type { DataSource } from 'typeorm';

/** The request timeout (ms) of the statements sent from inside `withRequestTimeout`'s work. */
const scopedTimeout = new AsyncLocalStorage<number>();

/** Runs `work`; every SQL Server request it makes (through a DataSource prepared below) gets `timeoutMs`. */
export function withRequestTimeout<T>(timeoutMs: number, work: () => Promise<T>): Promise<T> {
  return scopedTimeout.run(timeoutMs, work);
}

type Overrides = { requestTimeout?: number };
type RequestClass = new (parent?: unknown, overrides?: Overrides) => object;

/**
 * TypeORM makes each SQL Server request as `new mssql.Request(connection)`, without the per-request
 * options the mssql package takes (`requestTimeout`, which overrides the pool's for that request
 * only), so every statement gets the connection's timeout: the worker's, from DATABASE_URL. This
 * gives the DataSource's driver its own view of the mssql package whose Request takes the timeout of
 * the enclosing `withRequestTimeout`, if any; everything else is the package's own. Statements sent
 * outside such a scope (the worker's) keep the connection's timeout.
 */
export function scopeRequestTimeouts(ds: DataSource): DataSource {
  const driver = ds.driver as unknown as { mssql?: { Request: RequestClass } };
  const mssql = driver.mssql;
  if (!mssql) return ds;
  const Request = mssql.Request;
  class ScopedTimeoutRequest extends Request {
    constructor(parent?: unknown, overrides?: Overrides) {
      const timeoutMs = scopedTimeout.getStore();
      super(
        parent,
        timeoutMs === undefined || overrides?.requestTimeout !== undefined
          ? overrides
          : { ...overrides, requestTimeout: timeoutMs },
      );
    }
  }
  driver.mssql = Object.create(mssql, { Request: { value: ScopedTimeoutRequest, enumerable: true } });
  return ds;
}
