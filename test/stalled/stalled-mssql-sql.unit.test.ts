import { parseDatabaseUrl } from '../../src/config/database-url';
import { listPlans, planStatusFilter } from '../../src/queries';
import { expireApprovals } from '../../src/stalled/approval-expiry';
import { countStalledPlans, markStalledPlans, watchUnwatchedPlans } from '../../src/stalled/stall-check';
import type { PlanHeadRow } from '../../src/store/entities';
import { writeHeads } from '../../src/store/ledger/plan-heads';
import { migrationSql } from '../../src/store/migrator';
import { sqlDialectOf } from '../../src/store/sql/dialects';
import { jsonIdList, paramValue, paramValues, type Recorded, recordingMssql } from '../support/recording-mssql';
import { judge, passes, TsqlParser } from '../support/tsql-gate';

/**
 * No SQL Server runs here: the stall check's statements (the due scan, the head locks, the mark),
 * the apply path's head write with the stall columns, the stalled-plan reads and the migration's
 * DDL are recorded on a SQL Server DataSource that never connects, checked for what SQL Server
 * needs, and parsed by both T-SQL parsers of the syntax gate.
 */
const NOW = new Date('2026-03-01T12:00:00.000Z');
const DUE = new Date('2026-03-01T11:45:00.000Z');
const PLANS = ['plan-b', "plan-a'; DROP TABLE plan_heads --"];
const TRANSACTION_MARKERS = new Set(['BEGIN TRANSACTION', 'COMMIT', 'ROLLBACK']);

/** A head row as TypeORM reads it from `SELECT ... FROM "plan_heads" "r"` (aliases `r_<column>`). */
const headRow = (planId: string) => ({
  r_plan_id: planId,
  r_session_id: 'sess-1',
  r_version: 3,
  r_event_count: 4,
  r_last_seq: 4,
  r_applied_seq: 4,
  r_pending_events: 0,
  r_gap_since: null,
  r_updated_at: DUE,
  r_restored_at: null,
  r_deadline_ms: null,
  r_stall_due_at: DUE,
  r_stall_check_at: DUE,
  r_stalled_at: null,
  r_deleted_at: null,
});

const head = (planId: string): PlanHeadRow => ({
  planId,
  sessionId: 'sess-1',
  version: 4,
  eventCount: 5,
  lastSeq: 5,
  appliedSeq: 5,
  pendingEvents: 0,
  gapSince: null,
  updatedAt: NOW,
  restoredAt: null,
  deadlineMs: 60_000,
  stallDueAt: new Date(NOW.getTime() + 60_000),
  stallCheckAt: new Date(NOW.getTime() + 60_000),
  stalledAt: null,
  deletedAt: null,
});

/** An approval row as TypeORM reads it from `SELECT ... FROM "approvals" "r"`: requested, undecided, expired. */
const approvalRow = (approvalId: string, planId: string) => ({
  r_approval_id: approvalId,
  r_plan_id: planId,
  r_session_id: 'sess-1',
  r_step_id: 'a',
  r_tool: 'send_email',
  r_args_digest: 'd'.repeat(64),
  r_expires_at: DUE,
  r_assignee: 'ops',
  r_reason: null,
  r_requested_at: DUE,
  r_request_seq: 2,
  r_request_event_id: '0190c0de-7a1b-7c3d-8e4f-5a6b7c8d9e0f',
  r_decision: null,
  r_decided_by: null,
  r_feedback: null,
  r_edited_args_digest: null,
  r_decided_at: null,
  r_consumed_at: null,
  r_consumed_by: null,
  r_expired_at: null,
});
const SUBSCRIPTIONS = async () => [{ id: 'sub-1', eventTypes: '*' }];
const INSERT_DELIVERIES = /^INSERT INTO "webhook_deliveries"/;

const sqlOf = (recorded: Recorded[]) => recorded.map((r) => r.sql).filter((sql) => !TRANSACTION_MARKERS.has(sql));

describe('stalled plans: the SQL sent to SQL Server (generated, no server)', () => {
  let parser: TsqlParser;
  beforeAll(() => {
    parser = new TsqlParser();
  });
  afterAll(() => parser.close());

  /** Every statement parses in both T-SQL parsers and holds no other database's construct. */
  async function expectTsql(statements: string[]): Promise<void> {
    const failing = (await judge(parser, statements))
      .filter((v) => !passes(v))
      .map((v) => ({ sql: v.sql, parseError: v.parseError, second: v.second.parseError, forbidden: v.forbidden }));
    expect(failing).toEqual([]);
  }

  it('marks the due plans under their head locks, ids and times as parameters', async () => {
    const { ds, statements } = await recordingMssql((sql) => {
      if (/^SELECT "h"\."plan_id" AS "planId" FROM "plan_heads" "h"/.test(sql))
        return PLANS.map((planId) => ({ planId }));
      if (/^SELECT .* FROM "plan_heads" "r"/.test(sql)) return PLANS.map(headRow);
      return undefined;
    });
    const result = await markStalledPlans(ds, { now: NOW, batchSize: 10, subscriptions: async () => [] });
    expect({ ...result, planIds: [...result.planIds].sort() }).toEqual({ planIds: [...PLANS].sort(), complete: true });

    const text = sqlOf(statements);
    const [scan, lock, read, mark] = text;
    expect(text).toHaveLength(4);
    // the due scan: one range of IX_plan_heads_stall_check, SQL Server's paging
    expect(scan).toBe(
      'SELECT "h"."plan_id" AS "planId" FROM "plan_heads" "h" WHERE "h"."stall_check_at" <= @0 AND "h"."stalled_at" IS NULL AND "h"."deleted_at" IS NULL ORDER BY "h"."stall_check_at" ASC OFFSET 0 ROWS FETCH NEXT 10 ROWS ONLY',
    );
    // SQL Server has no FOR UPDATE: the heads are locked by a version bump, in the transaction of the mark
    expect(lock).toBe(`UPDATE "plan_heads" SET "version" = "version" + 1 WHERE "plan_id" ${jsonIdList('@0')}`);
    expect(read).toMatch(/^SELECT .* FROM "plan_heads" "r" WHERE "?r"?\."plan_id" IN \(SELECT v FROM OPENJSON\(@0\)/);
    expect(mark).toBe(`UPDATE "plan_heads" SET "stalled_at" = @0 WHERE "plan_id" ${jsonIdList('@1')}`);
    expect(statements.map((s) => s.sql)).toEqual([scan, 'BEGIN TRANSACTION', lock, read, mark, 'COMMIT']);
    const markParams = statements.find((s) => s.sql === mark)!.params;
    const [markedAt, ...marked] = paramValues(markParams);
    expect([markedAt, [...marked].sort()]).toEqual([NOW, [...PLANS].sort()]);
    // the heads are locked in key order (every writer does so: no deadlock between them)
    expect(paramValues(statements.find((s) => s.sql === lock)!.params)).toEqual([...PLANS].sort());
    // timestamps as datetime2(3), not the legacy datetime a bare Date would be
    expect(markParams[0]).toMatchObject({ type: 'datetime2', params: [3] });
    expect(statements.find((s) => s.sql === scan)!.params[0]).toMatchObject({ type: 'datetime2', params: [3] });
    // parameters only: no id or time in any text
    for (const sql of text) {
      expect(sql).not.toContain('plan-');
      expect(sql).not.toContain('2026-');
      expect(sql).not.toMatch(/\bFOR UPDATE\b|\bLIMIT\b/);
    }
    await expectTsql(text);
  });

  it('leaves alone a plan whose event committed between the scan and the lock', async () => {
    const { ds, statements } = await recordingMssql((sql) => {
      if (/^SELECT "h"\."plan_id" AS "planId"/.test(sql)) return [{ planId: 'plan-1' }];
      if (/^SELECT .* FROM "plan_heads" "r"/.test(sql))
        return [{ ...headRow('plan-1'), r_stall_due_at: new Date(NOW.getTime() + 1) }];
      return undefined;
    });
    expect(await markStalledPlans(ds, { now: NOW, subscriptions: async () => [] })).toEqual({
      planIds: [],
      complete: true,
    });
    expect(sqlOf(statements).filter((sql) => /SET "stalled_at"/.test(sql))).toEqual([]);
  });

  it("writes the apply path's heads with their stall columns in one MERGE from OPENJSON", async () => {
    const { ds, statements } = await recordingMssql();
    await ds.transaction((m) => writeHeads(m, sqlDialectOf(ds), [head('plan-1'), head('plan-2')]));
    const text = sqlOf(statements);
    expect(text).toHaveLength(1);
    const [merge] = text;
    expect(merge).toMatch(/^MERGE INTO "plan_heads" AS t USING OPENJSON\(@0\) WITH \(/);
    expect(merge).toContain('"stall_due_at" = s."stall_due_at"');
    expect(merge).toContain('"stalled_at" = s."stalled_at"');
    expect(merge).toContain('"deadline_ms" = s."deadline_ms"');
    // the timestamps read from the JSON as datetime2(3), the deadline as int
    expect(merge).toMatch(/"stall_due_at" datetime2\(3\) '\$\.stallDueAt'/);
    expect(merge).toMatch(/"stalled_at" datetime2\(3\) '\$\.stalledAt'/);
    expect(merge).toMatch(/"deadline_ms" int '\$\.deadlineMs'/);
    const rows = JSON.parse(String(paramValue(statements.find((s) => s.sql === merge)!.params[0]))) as Array<
      Record<string, unknown>
    >;
    expect(rows.map((r) => [r.planId, r.deadlineMs, r.stalledAt])).toEqual([
      ['plan-1', 60_000, null],
      ['plan-2', 60_000, null],
    ]);
    expect(merge).not.toContain('plan-');
    await expectTsql(text);
  });

  it('reads the stalled plans: plans list --status stalled and the gauge', async () => {
    const { ds, statements } = await recordingMssql((sql) => (/COUNT\(\*\) AS "n"/.test(sql) ? [{ n: 2 }] : undefined));
    await listPlans(ds, { ...planStatusFilter('stalled'), limit: 20 });
    await listPlans(ds, { ...planStatusFilter('stalled'), sessionId: 'sess-1', limit: 20, offset: 40 });
    expect(await countStalledPlans(ds)).toBe(2);
    const text = sqlOf(statements);
    const lists = text.filter((sql) => /EXISTS \(SELECT 1 FROM "plan_heads" "h"/.test(sql));
    expect(lists.length).toBeGreaterThanOrEqual(2);
    for (const sql of lists) expect(sql).toMatch(/"h"\."stalled_at" IS NOT NULL/);
    expect(text.join('\n')).toContain('OFFSET 40 ROWS FETCH NEXT');
    expect(text).toContain(
      'SELECT COUNT(*) AS "n" FROM "plan_heads" "h" WHERE "h"."stalled_at" IS NOT NULL AND "h"."deleted_at" IS NULL',
    );
    for (const sql of text) {
      expect(sql).not.toMatch(/'executing'|sess-1|\bLIMIT\b/);
    }
    await expectTsql(text);
  });

  it('adds the stall columns NULL, without a table rewrite, and indexes them; the revert drops them', async () => {
    const target = parseDatabaseUrl('mssql://sa:x@127.0.0.1:1/none');
    const of = async (direction: 'up' | 'down') =>
      (await migrationSql(target, direction)).find((m) => m.migration === 'StalledPlans1795226450000')!.statements;
    const up = await of('up');
    const adds = up.filter((sql) => /^ALTER TABLE "plan_heads" ADD /.test(sql));
    const added = adds.flatMap((sql) => sql.replace(/^ALTER TABLE "plan_heads" ADD /, '').split(/, (?=")/));
    expect(added).toEqual([
      '"deadline_ms" int NULL',
      '"stall_due_at" datetime2(3) NULL',
      '"stalled_at" datetime2(3) NULL',
    ]);
    expect(up.join('\n')).not.toMatch(/NOT NULL|DEFAULT/);
    expect(up).toContain('CREATE INDEX "IX_plan_heads_stall_due" ON "plan_heads" ("stall_due_at")');
    expect(up).toContain('CREATE INDEX "IX_plan_heads_stalled" ON "plan_heads" ("stalled_at")');
    const down = await of('down');
    expect(down).toEqual([
      'DROP INDEX "IX_plan_heads_stalled" ON "plan_heads"',
      'DROP INDEX "IX_plan_heads_stall_due" ON "plan_heads"',
      'ALTER TABLE "plan_heads" DROP COLUMN "stalled_at"',
      'ALTER TABLE "plan_heads" DROP COLUMN "stall_due_at"',
      'ALTER TABLE "plan_heads" DROP COLUMN "deadline_ms"',
    ]);
    await expectTsql([...up, ...down]);
  });

  it('moves the index to the check time: a NULL column filled from the due time; the revert restores the index', async () => {
    const target = parseDatabaseUrl('mssql://sa:x@127.0.0.1:1/none');
    const of = async (direction: 'up' | 'down') =>
      (await migrationSql(target, direction)).find((m) => m.migration === 'StallCheckTimes1795227200000')!.statements;
    const up = await of('up');
    expect(up).toEqual([
      'ALTER TABLE "plan_heads" ADD "stall_check_at" datetime2(3) NULL',
      'UPDATE "plan_heads" SET "stall_check_at" = "stall_due_at"',
      'CREATE INDEX "IX_plan_heads_stall_check" ON "plan_heads" ("stall_check_at")',
      'DROP INDEX "IX_plan_heads_stall_due" ON "plan_heads"',
    ]);
    const down = await of('down');
    expect(down).toEqual([
      'CREATE INDEX "IX_plan_heads_stall_due" ON "plan_heads" ("stall_due_at")',
      'DROP INDEX "IX_plan_heads_stall_check" ON "plan_heads"',
      'ALTER TABLE "plan_heads" DROP COLUMN "stall_check_at"',
    ]);
    await expectTsql([...up, ...down]);
  });

  it('writes the plan.stalled deliveries in the transaction that marks the plans', async () => {
    const { ds, statements } = await recordingMssql((sql) => {
      if (/^SELECT "h"\."plan_id" AS "planId" FROM "plan_heads" "h"/.test(sql)) return [{ planId: 'plan-1' }];
      if (/^SELECT .* FROM "plan_heads" "r"/.test(sql)) return [headRow('plan-1')];
      return undefined;
    });
    expect((await markStalledPlans(ds, { now: NOW, subscriptions: SUBSCRIPTIONS })).planIds).toEqual(['plan-1']);
    const all = statements.map((s) => s.sql);
    const insert = all.findIndex((sql) => INSERT_DELIVERIES.test(sql));
    expect(insert).toBeGreaterThan(all.indexOf('BEGIN TRANSACTION'));
    expect(all.slice(insert + 1)).toEqual(['COMMIT']);
    expect(all[insert]).not.toContain('plan-1');
    await expectTsql(sqlOf(statements));
  });

  it("finds expired approvals under their plans' head locks, marks them and writes approval.expired", async () => {
    const IDS = ['ap-2', "ap-1'; DROP TABLE approvals --"];
    const { ds, statements } = await recordingMssql((sql) => {
      if (/^SELECT "a"\."approval_id" AS "approvalId"/.test(sql))
        return IDS.map((approvalId) => ({ approvalId, planId: 'plan-1' }));
      if (/^SELECT .* FROM "approvals" "r"/.test(sql)) return IDS.map((id) => approvalRow(id, 'plan-1'));
      return undefined;
    });
    const result = await expireApprovals(ds, { now: NOW, batchSize: 10, subscriptions: SUBSCRIPTIONS });
    expect(result).toEqual({ approvalIds: [...IDS].sort(), complete: true });
    const text = sqlOf(statements);
    const [scan, lock, heads, read, mark, insert] = text;
    expect(text).toHaveLength(6);
    expect(scan).toBe(
      'SELECT "a"."approval_id" AS "approvalId", "a"."plan_id" AS "planId" FROM "approvals" "a" WHERE "a"."expired_at" IS NULL AND "a"."expires_at" <= @0 AND "a"."decision" IS NULL AND "a"."consumed_at" IS NULL ORDER BY "a"."expires_at" ASC, "a"."approval_id" ASC OFFSET 0 ROWS FETCH NEXT 10 ROWS ONLY',
    );
    expect(lock).toBe(`UPDATE "plan_heads" SET "version" = "version" + 1 WHERE "plan_id" ${jsonIdList('@0')}`);
    expect(read).toMatch(
      /^SELECT .* FROM "approvals" "r" WHERE "?r"?\."approval_id" IN \(SELECT v FROM OPENJSON\(@0\)/,
    );
    expect(mark).toBe(`UPDATE "approvals" SET "expired_at" = @0 WHERE "approval_id" ${jsonIdList('@1')}`);
    expect(insert).toMatch(INSERT_DELIVERIES);
    expect(heads).toMatch(/^SELECT .* FROM "plan_heads" "r" WHERE/);
    expect(statements.map((s) => s.sql)).toEqual([
      scan,
      'BEGIN TRANSACTION',
      lock,
      heads,
      read,
      mark,
      insert,
      'COMMIT',
    ]);
    const [expiredAt, ...marked] = paramValues(statements.find((s) => s.sql === mark)!.params);
    expect([expiredAt, [...marked].sort()]).toEqual([NOW, [...IDS].sort()]);
    expect(statements.find((s) => s.sql === mark)!.params[0]).toMatchObject({ type: 'datetime2', params: [3] });
    for (const sql of text) {
      expect(sql).not.toContain('ap-');
      expect(sql).not.toContain('2026-');
    }
    await expectTsql(text);
  });

  it('leaves alone an approval decided between the scan and the lock', async () => {
    const { ds, statements } = await recordingMssql((sql) => {
      if (/^SELECT "a"\."approval_id" AS "approvalId"/.test(sql)) return [{ approvalId: 'ap-1', planId: 'plan-1' }];
      if (/^SELECT .* FROM "approvals" "r"/.test(sql))
        return [{ ...approvalRow('ap-1', 'plan-1'), r_decision: 'approve' }];
      return undefined;
    });
    expect(await expireApprovals(ds, { now: NOW, subscriptions: SUBSCRIPTIONS })).toEqual({
      approvalIds: [],
      complete: true,
    });
    expect(sqlOf(statements).filter((sql) => /SET "expired_at"|INSERT INTO/.test(sql))).toEqual([]);
  });

  it('gives running plans without a due time one from their last event, under their head locks', async () => {
    const { ds, statements } = await recordingMssql((sql) => {
      if (/^SELECT "h"\."plan_id" AS "planId" FROM "plan_heads" "h" INNER JOIN/.test(sql))
        return [{ planId: 'plan-1' }];
      if (/^SELECT .* FROM "plan_heads" "r"/.test(sql)) return [{ ...headRow('plan-1'), r_stall_due_at: null }];
      return undefined;
    });
    expect(await watchUnwatchedPlans(ds, 60_000, { batchSize: 10 })).toEqual({ planIds: ['plan-1'], complete: true });
    const text = sqlOf(statements);
    const [scan, lock, , merge] = text;
    expect(text).toHaveLength(4);
    expect(scan).toBe(
      'SELECT "h"."plan_id" AS "planId" FROM "plan_heads" "h" INNER JOIN "execution_plans" "p" ON "p"."id" = "h"."plan_id" WHERE "p"."status" = @0 AND "h"."stall_due_at" IS NULL AND "h"."stalled_at" IS NULL AND "h"."deleted_at" IS NULL ORDER BY "h"."plan_id" ASC OFFSET 0 ROWS FETCH NEXT 10 ROWS ONLY',
    );
    expect(lock).toBe(`UPDATE "plan_heads" SET "version" = "version" + 1 WHERE "plan_id" ${jsonIdList('@0')}`);
    expect(merge).toMatch(/^MERGE INTO "plan_heads" AS t USING OPENJSON\(@0\) WITH \(/);
    const [row] = JSON.parse(String(paramValue(statements.find((s) => s.sql === merge)!.params[0]))) as Array<
      Record<string, unknown>
    >;
    expect(new Date(String(row.stallDueAt)).getTime()).toBe(DUE.getTime() + 60_000);
    await expectTsql(text);
  });
});
