import { runRetention } from '../../src/retention/retention.service';
import { retentionPolicy } from '../../src/retention/retention-config';
import { jsonIdList, paramValue, paramValues, Recorded, recordingMssql } from '../support/recording-mssql';
import { DAY, NOW } from './plan-fixtures';

/**
 * How many rows (hence row locks) one retention transaction can touch on SQL Server, on recorded
 * SQL: the answer callback plays a database of plans soft-deleted past grace, of the given sizes,
 * answering the scans, the per-table counts and the DELETEs (with the rows they would delete).
 */
const PURGE_AT = new Date(NOW.getTime() + 8 * DAY);
const MAX_ROWS = 5_000;

interface Plan {
  events: number;
  /** Rows left, per table, as the DELETEs remove them. */
  left: Record<string, number>;
}

/** A recording DataSource over plans of these sizes; `changed[i]`: rows statement i deleted. */
async function purgeDatabase(sizes: Record<string, number>, refuse?: (sql: string, rows: number) => boolean) {
  const plans = new Map<string, Plan>(
    Object.entries(sizes).map(([id, events]) => [
      id,
      { events, left: { plan_events: events, execution_plans: 1, plan_heads: 1 } },
    ]),
  );
  const changed: number[] = [];
  const ids = (params: unknown[]) => paramValues(params).filter((v): v is string => plans.has(v as string));
  let scanned = false;
  const recording = await recordingMssql((sql, params) => {
    const at = recording.statements.length - 1;
    // the purge's scan, oldest first: every plan, once
    // (none of them a parent: no fork row names it)
    if (
      /^SELECT "p"."id" AS "id", "p"."created_at" AS "createdAt" FROM "execution_plans" "p" WHERE "p"."deleted_at" <= @0 AND NOT EXISTS \(SELECT 1 FROM "execution_plans" "f" WHERE "f"."parent_plan_id" = "p"."id"\) ORDER BY/.test(
        sql,
      )
    ) {
      if (scanned) return [];
      scanned = true;
      return [...plans.keys()].sort().map((id) => ({ id, createdAt: new Date('2030-01-01T00:00:00.000Z') }));
    }
    // rows per plan and table
    const count = /^SELECT "t"."(?:plan_id|id|workflow_id)" AS "id", COUNT\(\*\) AS "n" FROM "(\w+)"/.exec(sql);
    if (count)
      return ids(params)
        .filter((id) => (plans.get(id)!.left[count[1]] ?? 0) > 0)
        .map((id) => ({ id, n: plans.get(id)!.left[count[1]] }));
    // still due, under the head lock: every plan whose row is still there
    if (
      /^SELECT "p"."id" AS "id", "p"."parent_plan_id" AS "parentId" FROM "execution_plans" "p" WHERE "p"."id" IN/.test(
        sql,
      )
    )
      return ids(params)
        .filter((id) => plans.get(id)!.left.execution_plans > 0)
        .map((id) => ({ id }));
    // any row of a plan left in a table
    const probe = /^SELECT 1 AS "one" FROM "(\w+)" "t" WHERE "t"."\w+" = @0/.exec(sql);
    if (probe) return (plans.get(ids(params)[0])?.left[probe[1]] ?? 0) > 0 ? [{ one: 1 }] : [];
    const del = /^DELETE (?:TOP \(@1\) )?FROM "(\w+)"/.exec(sql);
    if (del) {
      const table = del[1];
      const limit = sql.startsWith('DELETE TOP') ? (paramValue(params[1]) as number) : Infinity;
      let n = 0;
      for (const id of ids(params)) {
        const take = Math.min(limit - n, plans.get(id)!.left[table] ?? 0);
        n += take;
      }
      if (refuse?.(sql, n))
        throw Object.assign(new Error('cannot obtain a LOCK resource at this time'), { number: 1204 });
      let left = n;
      for (const id of ids(params)) {
        const take = Math.min(left, plans.get(id)!.left[table] ?? 0);
        plans.get(id)!.left[table] = (plans.get(id)!.left[table] ?? 0) - take;
        left -= take;
      }
      changed[at] = n;
      return Array.from({ length: n }, () => ({}));
    }
    return undefined;
  });
  return { ...recording, plans, changed };
}

/** The committed transactions: their statements' indexes, BEGIN to COMMIT. */
function transactions(statements: Recorded[]): number[][] {
  const out: number[][] = [];
  let current: number[] | null = null;
  statements.forEach((s, i) => {
    if (s.sql === 'BEGIN TRANSACTION') current = [];
    else if (s.sql === 'COMMIT') {
      out.push(current!);
      current = null;
    } else if (s.sql === 'ROLLBACK') current = null;
    else current?.push(i);
  });
  return out;
}

const planIds = (n: number) => Array.from({ length: n }, (_, i) => `plan-${String(i).padStart(4, '0')}`);

describe('rows per retention transaction on SQL Server (recorded, no server)', () => {
  it('400 plans of 1,000 events: no transaction deletes more than 5,000 rows or holds more than 4 plans', async () => {
    const db = await purgeDatabase(Object.fromEntries(planIds(400).map((id) => [id, 1_000])));
    const report = await runRetention(db.ds, retentionPolicy({ maxRowsPerTransaction: MAX_ROWS }), { now: PURGE_AT });

    expect(report.plans.purged).toBe(400);
    expect(report.tables.plan_events.purged).toBe(400_000);
    const txs = transactions(db.statements);
    expect(txs).toHaveLength(100); // 4 plans of 1,002 rows each: a fifth would pass 5,000
    expect(report.batches).toBe(100);
    for (const tx of txs) {
      const rows = tx.reduce((n, i) => n + (db.changed[i] ?? 0), 0);
      expect(rows).toBeLessThanOrEqual(MAX_ROWS);
      const deletes = tx.map((i) => db.statements[i]).filter((s) => s.sql.startsWith('DELETE'));
      for (const d of deletes) expect(d.params.length).toBeLessThanOrEqual(4);
      // the head locks come first, then the re-check, both over the same plans
      expect(db.statements[tx[0]].sql).toMatch(
        /^UPDATE "plan_heads" SET "version" = "version" \+ 1 WHERE "plan_id" IN /,
      );
    }
    expect([...db.plans.values()].every((p) => Object.values(p.left).every((n) => n === 0))).toBe(true);
  });

  it('a plan of 50,000 events is purged in chunks of at most 5,000 rows, its plan row with the last', async () => {
    const db = await purgeDatabase({ 'huge-plan': 50_000 });
    const report = await runRetention(db.ds, retentionPolicy({ maxRowsPerTransaction: MAX_ROWS }), { now: PURGE_AT });

    expect(report.plans.purged).toBe(1);
    expect(report.tables.plan_events.purged).toBe(50_000);
    expect(report.tables.execution_plans.purged).toBe(1);
    const txs = transactions(db.statements);
    expect(txs).toHaveLength(Math.ceil(50_000 / (MAX_ROWS - 2))); // 2 rows kept for the plan row and head
    txs.forEach((tx, k) => {
      const sql = tx.map((i) => db.statements[i].sql);
      expect(tx.reduce((n, i) => n + (db.changed[i] ?? 0), 0)).toBeLessThanOrEqual(MAX_ROWS);
      // each chunk: the head lock, what the plan adds to the rollups (nothing: it is soft-deleted), then
      // the plan still due, then at most the budget of rows
      expect(sql[0]).toBe(`UPDATE "plan_heads" SET "version" = "version" + 1 WHERE "plan_id" ${jsonIdList('@0')}`);
      expect(sql[1]).toMatch(
        /^SELECT "p"."id" AS "p_id", .* FROM "execution_plans" "p" WHERE .*"p"."id".* AND \( "p"."deleted_at" IS NULL \)$/,
      );
      expect(sql[2]).toBe(
        `SELECT "p"."id" AS "id", "p"."parent_plan_id" AS "parentId" FROM "execution_plans" "p" WHERE "p"."id" ${jsonIdList('@0')} AND "p"."deleted_at" <= @1 AND NOT EXISTS (SELECT 1 FROM "execution_plans" "f" WHERE "f"."parent_plan_id" = "p"."id")`,
      );
      expect(sql).toContain('DELETE TOP (@1) FROM "plan_events" WHERE "plan_id" = @0');
      const last = k === txs.length - 1;
      expect(sql.some((s) => s.startsWith('DELETE FROM "execution_plans"'))).toBe(last);
      expect(sql.some((s) => s.startsWith('DELETE FROM "plan_heads"'))).toBe(last);
    });
    const limits = db.statements
      .filter((s) => s.sql.startsWith('DELETE TOP (@1) FROM "plan_events"'))
      .map((s) => paramValue(s.params[1]));
    expect(new Set(limits)).toEqual(new Set([MAX_ROWS - 2]));
  });

  it('a transaction refused for its locks (1204) runs again over fewer plans, not the same ones', async () => {
    // the server refuses any DELETE of more than 2,500 rows
    const db = await purgeDatabase(Object.fromEntries(planIds(8).map((id) => [id, 1_000])), (_sql, n) => n > 2_500);
    const report = await runRetention(db.ds, retentionPolicy({ maxRowsPerTransaction: MAX_ROWS }), { now: PURGE_AT });

    expect(report.plans.purged).toBe(8);
    expect(report.tables.plan_events.purged).toBe(8_000);
    const rolledBack = db.statements.filter((s) => s.sql === 'ROLLBACK').length;
    expect(rolledBack).toBe(2); // the two batches of 4 plans, once each
    const txs = transactions(db.statements);
    expect(txs).toHaveLength(4); // each as two halves of 2 plans
    for (const tx of txs)
      for (const i of tx.filter((j) => db.statements[j].sql.startsWith('DELETE FROM "plan_events"')))
        expect(paramValues(db.statements[i].params)).toHaveLength(2);
  });

  it('a chunk refused for its locks (1204) runs again at half the rows', async () => {
    const db = await purgeDatabase({ 'huge-plan': 12_000 }, (sql, n) => sql.startsWith('DELETE TOP') && n > 3_000);
    const report = await runRetention(db.ds, retentionPolicy({ maxRowsPerTransaction: MAX_ROWS }), { now: PURGE_AT });

    expect(report.tables.plan_events.purged).toBe(12_000);
    expect(report.plans.purged).toBe(1);
    const limits = db.statements
      .filter((s) => s.sql.startsWith('DELETE TOP (@1) FROM "plan_events"'))
      .map((s) => paramValue(s.params[1]));
    // 4,998 refused; then chunks of 2,500 rows, 2,498 of them events (the plan row and head kept room for)
    expect(limits[0]).toBe(MAX_ROWS - 2);
    expect(new Set(limits.slice(1))).toEqual(new Set([2_498]));
    expect(db.statements.filter((s) => s.sql === 'ROLLBACK')).toHaveLength(1);
  });
});
