import type { DataSource, QueryRunner } from 'typeorm';
import { createDataSource } from '../../src/store/data-source';
import { parseDatabaseUrl } from '../../src/config/database-url';
import { runRetention } from '../../src/retention/retention.service';
import { restorePlan } from '../../src/retention/plan-restore';
import { retentionPolicy } from '../../src/retention/retention-config';
import { deleteRows, lockHeads, maxIdsPerStatement, PLAN_TABLES, stampRows } from '../../src/retention/retention-sql';
import { DIALECTS } from '../../src/store/sql/dialects';
import { jsonIdList, paramValues } from '../support/recording-mssql';
import { DAY, NOW } from './plan-fixtures';

/** `text` matched literally inside a RegExp. */
const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * No SQL Server runs here: the statements are generated on an mssql DataSource that is never
 * connected (metadata built, queries recorded by a stand-in QueryRunner that answers the scans
 * with canned rows), and their text and parameters are checked against SQL Server's rules.
 */
const MSSQL_PARAMETER_LIMIT = 2_100;

interface Recorded {
  sql: string;
  params: unknown[];
}

async function mssqlDataSource(): Promise<DataSource> {
  const ds = createDataSource(parseDatabaseUrl('mssql://sa:x@127.0.0.1:1/none'));
  await (ds as unknown as { buildMetadatas(): Promise<void> }).buildMetadatas();
  return ds;
}

/** Routes every query of `ds` to `answer`, recording it; transactions are no-ops. */
function recordQueries(ds: DataSource, answer: (sql: string, params: unknown[]) => object[]): Recorded[] {
  const recorded: Recorded[] = [];
  const runner: { isTransactionActive: boolean; manager?: unknown; [key: string]: unknown } = {
    connection: ds,
    isReleased: false,
    isTransactionActive: false,
    data: {},
    async query(sql: string, params: unknown[] = [], structured = false) {
      recorded.push({ sql, params });
      const records = answer(sql, params);
      return structured
        ? {
            records,
            raw: records,
            affected: /^(UPDATE|DELETE)/.test(sql)
              ? paramValues(params).filter((p) => typeof p === 'string').length
              : undefined,
          }
        : records;
    },
    async connect() {},
    async startTransaction() {
      runner.isTransactionActive = true;
    },
    async commitTransaction() {
      runner.isTransactionActive = false;
    },
    async rollbackTransaction() {
      runner.isTransactionActive = false;
    },
    async release() {},
  };
  runner.manager = ds.createEntityManager(runner as unknown as QueryRunner);
  (ds as unknown as { createQueryRunner(): QueryRunner }).createQueryRunner = () => runner as unknown as QueryRunner;
  return recorded;
}

const ids = (n: number, prefix = 'plan') =>
  Array.from({ length: n }, (_, i) => `${prefix}-${String(i).padStart(5, '0')}`);

describe('retention SQL on SQL Server (generated, no server)', () => {
  it('caps a batch at 2,000 plan ids and stays under 2,100 parameters in every statement of a run', async () => {
    const ds = await mssqlDataSource();
    const batch = ids(2_000);
    const pages = { retire: 0, purge: 0 };
    const recorded = recordQueries(ds, (sql) => {
      if (!/FROM "execution_plans" "p"/.test(sql)) return [];
      const recheck = /"p"."id" IN \(/.test(sql);
      // one full page for the first scan of each phase, then nothing; re-checks under lock confirm it
      if (/"p"."status" = @/.test(sql)) {
        if (recheck) return batch.map((id) => ({ id }));
        return pages.retire++ === 0 ? batch.map((id) => ({ id, endedAt: new Date(NOW.getTime() - 40 * DAY) })) : [];
      }
      if (/"p"."deleted_at" <= @/.test(sql)) {
        if (recheck) return batch.map((id) => ({ id }));
        return pages.purge++ === 0 ? batch.map((id) => ({ id, createdAt: new Date(NOW.getTime() - 60 * DAY) })) : [];
      }
      return [];
    });
    // rows are not what bounds these batches: a budget far above 2,000 plans of a few rows each
    const report = await runRetention(ds, retentionPolicy({ batchSize: 50_000, maxRowsPerTransaction: 1_000_000 }), {
      now: NOW,
    });
    expect(report.batchSize).toBe(maxIdsPerStatement(DIALECTS.mssql));
    expect(report.plans).toEqual({ softDeleted: 2_000, purged: 2_000 });

    for (const q of recorded) expect(q.params.length).toBeLessThanOrEqual(MSSQL_PARAMETER_LIMIT);
    const text = recorded.map((q) => q.sql);
    // the purge deletes children first, every table, with the ids as parameters
    const deletes = text.filter((s) => s.startsWith('DELETE'));
    expect(deletes.map((s) => /DELETE FROM "(\w+)"/.exec(s)![1])).toEqual(PLAN_TABLES.map((t) => t.table));
    // the ids as one JSON array parameter, whatever their number
    expect(deletes[0]).toContain(`"plan_id" ${jsonIdList('@0')}`);
    // every batch starts by locking the plans' heads, and the soft delete only stamps live rows
    const lock = lockHeads(ds.manager, batch).getQueryAndParameters()[0];
    expect(lock).toBe(`UPDATE "plan_heads" SET "version" = "version" + 1 WHERE "plan_id" ${jsonIdList('@0')}`);
    expect(text.filter((s) => s === lock)).toHaveLength(2); // the purge batch and the soft-delete batch
    // the soft delete stamps the plan rows and heads, one statement each, and writes no other table
    const stamps = text.filter((s) => /^UPDATE "\w+" SET "deleted_at" = @0 /.test(s));
    expect(stamps.map((s) => /^UPDATE "(\w+)"/.exec(s)![1])).toEqual(['execution_plans', 'plan_heads']);
    expect(stamps[0]).toContain(`WHERE ("id" ${jsonIdList('@1')} AND "deleted_at" IS NULL)`);
    expect(stamps[1]).toContain(`WHERE ("plan_id" ${jsonIdList('@1')} AND "deleted_at" IS NULL)`);
    expect(text.filter((s) => s.startsWith('UPDATE') && s !== lock && !stamps.includes(s))).toEqual([]);
    // pagination is SQL Server's OFFSET/FETCH, never LIMIT
    expect(text.filter((s) => s.startsWith('SELECT')).every((s) => !/\bLIMIT\b/.test(s))).toBe(true);
    expect(text.join('\n')).toContain('OFFSET 0 ROWS FETCH NEXT 2000 ROWS ONLY');
  });

  it('sends every timestamp as datetime2(3), not the legacy datetime a bare Date would be', async () => {
    const ds = await mssqlDataSource();
    const recorded = recordQueries(ds, () => []);
    await runRetention(ds, retentionPolicy(), { now: NOW });
    const [, params] = stampRows(ds.manager, PLAN_TABLES[4], ['a'], NOW).getQueryAndParameters();
    expect(params[0]).toMatchObject({ type: 'datetime2', params: [3] });
    const [, purgeParams] = deleteRows(ds.manager, PLAN_TABLES[3], ['a'], NOW).getQueryAndParameters();
    expect(purgeParams[1]).toMatchObject({ type: 'datetime2', params: [3] });
    const dates = recorded.flatMap((q) => q.params).filter((p) => p instanceof Date);
    expect(dates).toEqual([]);
  });

  it('restores through the same locked statements, a soft-deleted parent with its fork', async () => {
    const ds = await mssqlDataSource();
    const value = (p: unknown) => (p !== null && typeof p === 'object' && 'value' in p ? p.value : p);
    const recorded = recordQueries(ds, (sql, params) => {
      if (/AS "parentId"/.test(sql)) return [{ parentId: value(params[0]) === 'plan-1' ? 'plan-0' : null }];
      // what the plans add to the rollups, read before and after the restore
      if (/AS "p_id"/.test(sql)) return [];
      return /FROM "execution_plans" "p"/.test(sql) ? [{ deletedAt: new Date(NOW.getTime() - DAY) }] : [];
    });
    const outcome = await restorePlan(ds, 'plan-1', { graceDays: 7 }, { now: NOW });
    expect(outcome).toMatchObject({ status: 'restored', ancestors: [{ planId: 'plan-0' }] });
    // the chain of parents is read first (a plan's parent never changes), then every head locked, in key order
    expect(recorded.slice(0, 2).map((q) => q.sql)).toEqual([
      'SELECT "p"."parent_plan_id" AS "parentId" FROM "execution_plans" "p" WHERE "p"."id" = @0',
      'SELECT "p"."parent_plan_id" AS "parentId" FROM "execution_plans" "p" WHERE "p"."id" = @0',
    ]);
    expect(recorded[2].sql).toBe(
      `UPDATE "plan_heads" SET "version" = "version" + 1 WHERE "plan_id" ${jsonIdList('@0')}`,
    );
    expect(paramValues(recorded[2].params)).toEqual(['plan-0', 'plan-1']);
    expect(
      recorded.filter((q) =>
        new RegExp(
          `^UPDATE "\\w+" SET "deleted_at" = @0 WHERE \\("(plan_id|workflow_id|id)" ${escape(jsonIdList('@1'))} AND NOT\\("deleted_at" IS NULL\\)\\)$`,
        ).test(q.sql),
      ),
    ).toHaveLength(2 * PLAN_TABLES.length);
  });
});
