import { runRetention } from '../../src/retention/retention.service';
import { retentionPolicy } from '../../src/retention/retention-config';
import { eraseSession } from '../../src/retention/session-erasure';
import { jsonIdList, paramValues, Recorded, recordingMssql } from '../support/recording-mssql';
import { DAY, NOW } from './plan-fixtures';

/**
 * No SQL Server runs here: the statements a SQL Server DataSource would send are recorded. Under
 * READ_COMMITTED_SNAPSHOT a plain read of execution_plans sees no uncommitted plan, so a session
 * row must be locked (UPDLOCK: a worker's upsert of the row waits for it, and it waits for the
 * worker's) before the statement that checks it has no plan left, and that before its DELETE.
 */
const LOCK = `SELECT "s"."id" AS "id" FROM "sessions" "s" WITH (UPDLOCK, ROWLOCK) WHERE "s"."id" ${jsonIdList('@0')} ORDER BY "s"."id" ASC`;

/** The statements of the transaction that contains statement `at`, BEGIN to COMMIT. */
function transactionOf(statements: Recorded[], at: number): string[] {
  let begin = at;
  while (begin > 0 && statements[begin].sql !== 'BEGIN TRANSACTION') begin--;
  let end = at;
  while (end < statements.length - 1 && statements[end].sql !== 'COMMIT') end++;
  return statements.slice(begin, end + 1).map((s) => s.sql);
}

describe('session rows on SQL Server (recorded, no server)', () => {
  it("retention's purge locks a session row WITH (UPDLOCK, ROWLOCK), then checks it is empty, then deletes it", async () => {
    const { ds, statements } = await recordingMssql((sql) => {
      if (
        /^SELECT "p"."id" AS "id"(, "p"."parent_plan_id" AS "parentId"|, "p"."created_at" AS "createdAt")? FROM "execution_plans" "p" WHERE/.test(
          sql,
        ) &&
        /"p"."deleted_at" <= @/.test(sql)
      )
        return [{ id: 'plan-1', createdAt: NOW }];
      if (/^SELECT "p"."session_id" AS "id"/.test(sql)) return [{ id: 'sess-1' }];
      if (/FROM "sessions" "s"/.test(sql)) return [{ id: 'sess-1' }];
      if (/^DELETE FROM "sessions"/.test(sql)) return [{}];
      return undefined;
    });
    const report = await runRetention(ds, retentionPolicy(), { now: new Date(NOW.getTime() + 8 * DAY) });
    expect(report.sessions.purged).toBe(1);

    const lockAt = statements.findIndex((s) => s.sql === LOCK);
    expect(lockAt).toBeGreaterThan(0);
    expect(paramValues(statements[lockAt].params)).toEqual(['sess-1']);
    const tx = transactionOf(statements, lockAt);
    const lock = tx.indexOf(LOCK);
    const check = tx.findIndex((s) =>
      /^SELECT "s"."id" AS "id" FROM "sessions" "s" WHERE .* AND NOT EXISTS \(SELECT 1 FROM "execution_plans" "ep" WHERE "ep"."session_id" = "s"."id"\)$/.test(
        s,
      ),
    );
    const del = tx.findIndex((s) => s.startsWith('DELETE FROM "sessions"'));
    // the plan's own rows go first, under its head lock; then lock, check, delete, in three statements
    expect(tx[1]).toBe(`UPDATE "plan_heads" SET "version" = "version" + 1 WHERE "plan_id" ${jsonIdList('@0')}`);
    expect(tx.findIndex((s) => s.startsWith('DELETE FROM "execution_plans"'))).toBeLessThan(lock);
    expect(lock).toBeLessThan(check);
    expect(check).toBeLessThan(del);
    expect(tx[tx.length - 1]).toBe('COMMIT');
    // the check reads nothing WITH a lock hint of its own: it runs after the lock was granted
    expect(tx[check]).not.toMatch(/WITH \((UPDLOCK|HOLDLOCK|ROWLOCK)/);
  });

  it('erasure locks the session row, checks under that lock that no plan of it is left, then deletes it', async () => {
    const { ds, statements } = await recordingMssql((sql) => {
      if (/FROM "sessions" "s"/.test(sql)) return [{ id: 'sess-1' }];
      if (/^DELETE FROM "sessions"/.test(sql)) return [{}];
      return undefined;
    });
    const report = await eraseSession(ds, 'sess-1');
    expect(report.tables.sessions).toBe(1);

    const lockAt = statements.findIndex((s) => s.sql === LOCK);
    const tx = transactionOf(statements, lockAt);
    expect(tx).toEqual([
      'BEGIN TRANSACTION',
      LOCK,
      'SELECT "p"."id" AS "id" FROM "execution_plans" "p" WHERE "p"."session_id" = @0',
      'SELECT "h"."plan_id" AS "id" FROM "plan_heads" "h" WHERE "h"."session_id" = @0',
      `DELETE FROM "sessions" WHERE "id" ${jsonIdList('@0')}`,
      'COMMIT',
    ]);
  });

  it('erasure does not delete the session row while a plan of it is left: it erases that plan first', async () => {
    let checks = 0;
    const { ds, statements } = await recordingMssql((sql) => {
      // the first check under the lock finds a plan written meanwhile; the second finds none
      if (sql === 'SELECT "p"."id" AS "id" FROM "execution_plans" "p" WHERE "p"."session_id" = @0')
        return statements.some((s) => s.sql === LOCK) && checks++ === 0 ? [{ id: 'late-plan' }] : [];
      if (/FROM "sessions" "s"/.test(sql)) return [{ id: 'sess-1' }];
      if (/^DELETE FROM "sessions"/.test(sql)) return [{}];
      return undefined;
    });
    const report = await eraseSession(ds, 'sess-1');
    expect(report.plans).toBe(1);
    const text = statements.map((s) => s.sql);
    const firstLock = text.indexOf(LOCK);
    const erased = text.findIndex((s) => s.startsWith('DELETE FROM "execution_plans"'));
    const deleted = text.findIndex((s) => s.startsWith('DELETE FROM "sessions"'));
    expect(firstLock).toBeLessThan(erased);
    expect(erased).toBeLessThan(deleted);
    expect(text.filter((s) => s === LOCK)).toHaveLength(2);
    expect(text.filter((s) => s.startsWith('DELETE FROM "sessions"'))).toHaveLength(1);
  });
});
