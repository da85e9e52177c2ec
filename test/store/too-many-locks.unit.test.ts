import * as mssql from 'mssql';
import { QueryFailedError } from 'typeorm';
import { isRetryableDbError, isTooManyLocksError } from '../../src/store/db-errors';

/**
 * A transaction the server refuses for the locks it holds fails again if run again as it was:
 * retention and erasure run it again over fewer rows (row-batches.ts), the worker retries as for
 * any transient error. Error objects as the drivers raise them, as TypeORM passes them on.
 */
describe('errors that say a transaction holds too many locks', () => {
  it('SQL Server 1204 (lock memory) is one, and stays retryable for the worker', () => {
    const err = Object.assign(
      new mssql.RequestError(
        'The instance of the SQL Server Database Engine cannot obtain a LOCK resource at this time. Rerun your statement when there are fewer active users.',
        'EREQUEST',
      ),
      { number: 1204 },
    );
    const failed = new QueryFailedError('DELETE FROM "plan_events" WHERE "plan_id" IN (@0)', [], err);
    expect(isTooManyLocksError(failed)).toBe(true);
    expect(isRetryableDbError(failed)).toBe(true);
    // a deadlock is retried as it was
    const deadlock = Object.assign(new mssql.RequestError('chosen as deadlock victim', 'EREQUEST'), { number: 1205 });
    expect(isTooManyLocksError(deadlock)).toBe(false);
  });

  it("MySQL's full lock table (1206) is one", () => {
    const err = Object.assign(new Error('The total number of locks exceeds the lock table size'), {
      code: 'ER_LOCK_TABLE_FULL',
      errno: 1206,
    });
    expect(isTooManyLocksError(new QueryFailedError('DELETE FROM `plan_events` WHERE 1', [], err))).toBe(true);
    expect(isTooManyLocksError(Object.assign(new Error('deadlock'), { code: 'ER_LOCK_DEADLOCK', errno: 1213 }))).toBe(
      false,
    );
  });
});
