import { DataSource } from 'typeorm';
import { parseDatabaseUrl } from '../../src/config/database-url';
import { createDataSource } from '../../src/store/data-source';
import { ENTITY, PlanStepRow } from '../../src/store/entities';
import {
  definingCreatedStatement,
  lockHeadsStatement,
  logPageStatement,
  overdueGapsStatement,
} from '../../src/store/ledger/log-statements';
import { newHead } from '../../src/store/ledger/plan-heads';
import { mssql } from '../../src/store/sql/mssql';
import { jsonInsertStatement, jsonMergeStatement } from '../../src/store/sql/mssql-json';
import { PlanEventStore } from '../../src/store/plan-event-store';
import { manyPlanRuns } from '../support/event-factory';
import { paramValue, recordingMssql } from '../support/recording-mssql';
import { parsePlanEvent, PlanEvent } from '../../src/contracts';
import { foldPlan } from '../../src/store/projection/fold-plan';
import { PlanWrites } from '../../src/store/apply/plan-writes';

const step: PlanStepRow = {
  id: '00000000-0000-5000-8000-000000000000',
  planId: 'p',
  stepKey: 'k',
  stepIndex: 0,
  agentId: 'a',
  task: 't',
  title: null,
  expectedOutput: null,
  dependsOn: '[]',
  status: 'pending',
  result: null,
  error: null,
  outputContent: null,
  outputEventId: null,
  model: null,
  provider: null,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  reasoningTokens: 0,
  reportedCost: null,
  cost: null,
  costSource: null,
  priceRef: null,
  inputTokens: 0,
  outputTokens: 0,
  startedAt: null,
  completedAt: null,
  createdAt: new Date(),
  deletedAt: null,
};

// No SQL Server here: the event store's statements are rendered on a DataSource that never connects.
describe('event store SQL on SQL Server', () => {
  let ds: DataSource;
  beforeAll(async () => {
    ds = createDataSource(parseDatabaseUrl('mssql://sa:x@127.0.0.1:1/none'));
    // entity metadata without connecting
    await (ds as unknown as { buildMetadatas(): Promise<void> }).buildMetadatas();
  });

  // The MERGE takes the row's exclusive lock at once (WHEN MATCHED updates a column to itself),
  // HOLDLOCK makes a concurrent insert of the same key wait instead of failing with 2627.
  it('creates or locks heads with one MERGE that never updates the key, its rows one JSON parameter', () => {
    const { sql, params } = jsonMergeStatement(
      ds.manager,
      ENTITY.head,
      [newHead('p1', 's1', new Date(Date.UTC(2026, 0, 2, 3, 4, 5, 6))), newHead('p2', 's1', new Date())],
      { key: 'planId', update: [], concurrentInserts: true },
    );
    expect(sql).toMatch(
      /^MERGE INTO "plan_heads" WITH \(HOLDLOCK\) AS t USING OPENJSON\(@0\) WITH \("plan_id" nvarchar\(4000\) COLLATE Latin1_General_100_BIN2 '\$\.planId', /,
    );
    expect(sql).toContain(
      'ON t."plan_id" = s."plan_id" WHEN MATCHED THEN UPDATE SET "session_id" = t."session_id" WHEN NOT MATCHED THEN INSERT ("plan_id", "session_id"',
    );
    expect(sql).toContain(`"gap_since" datetime2(3) '$.gapSince'`);
    expect(sql).toMatch(/;$/);
    // no NULL literal: a null is null inside the JSON, read as the column's type
    expect(sql).not.toContain('NULL');
    // one parameter, declared nvarchar(MAX) whatever its length: one plan for every batch
    expect(params).toEqual([expect.objectContaining({ type: 'nvarchar', params: [65535] })]);
    const rows = JSON.parse((params[0] as { value: string }).value);
    expect(rows[0]).toMatchObject({
      planId: 'p1',
      gapSince: null,
      appliedSeq: null,
      updatedAt: '2026-01-02T03:04:05.006',
    });
  });

  it("takes HOLDLOCK only where two plans' writers may insert one key at once (heads, sessions), not on a plan's own rows", () => {
    const merge = (entity: string, rows: object[], concurrentInserts?: boolean) =>
      jsonMergeStatement(ds.manager, entity, rows, { key: 'id', update: ['status'], concurrentInserts }).sql;
    expect(merge(ENTITY.step, [step])).toMatch(/^MERGE INTO "plan_steps" AS t USING OPENJSON/);
    expect(merge(ENTITY.step, [step], true)).toMatch(/^MERGE INTO "plan_steps" WITH \(HOLDLOCK\) AS t/);
  });

  it('keeps the earliest and latest times of a session with CASE (GREATEST/LEAST need SQL Server 2022)', () => {
    const { sql } = jsonMergeStatement(
      ds.manager,
      ENTITY.session,
      [{ id: 's1', createdAt: new Date(), updatedAt: new Date() }],
      { key: 'id', update: [], keep: { createdAt: 'min', updatedAt: 'max' }, concurrentInserts: true },
    );
    expect(sql).toContain(
      'WHEN MATCHED THEN UPDATE SET "created_at" = CASE WHEN s."created_at" < t."created_at" THEN s."created_at" ELSE t."created_at" END, "updated_at" = CASE WHEN s."updated_at" > t."updated_at" THEN s."updated_at" ELSE t."updated_at" END',
    );
  });

  it('updates only the columns events change', () => {
    const { sql } = jsonMergeStatement(ds.manager, ENTITY.step, [step], {
      key: 'id',
      update: ['status', 'outputContent'],
    });
    expect(sql).toContain(
      'WHEN MATCHED THEN UPDATE SET "status" = s."status", "output_content" = s."output_content" WHEN NOT MATCHED',
    );
  });

  it('locks and reads heads and logs with statements T-SQL accepts; a log page seeks from its seq', () => {
    const [lock, params] = lockHeadsStatement(ds.manager, mssql, ['p1', 'p2']).getQueryAndParameters();
    expect(lock).toBe(
      `UPDATE "plan_heads" SET "version" = "version" + 1 WHERE "plan_id" IN (SELECT v FROM OPENJSON(@0) WITH (v nvarchar(4000) COLLATE Latin1_General_100_BIN2 '$'))`,
    );
    // the ids as one JSON array, declared nvarchar(MAX): one text and one declaration for any number
    expect(params.map(paramValue)).toEqual(['["p1","p2"]']);
    const [page] = logPageStatement(
      ds.manager,
      'p1',
      { after: { seq: 3, eventId: 'e' } },
      1000,
    ).getQueryAndParameters();
    // `seq >= @1` bounds the seek on (plan_id, seq); the OR alone would not
    expect(page).toContain('"e"."seq" >= @1 AND ("e"."seq" > @1 OR ("e"."seq" = @1 AND "e"."event_id" > @2))');
    expect(page).toMatch(/ORDER BY "e"\."seq" ASC, "e"\."event_id" ASC OFFSET 0 ROWS FETCH NEXT 1000 ROWS ONLY$/);
    const [created] = definingCreatedStatement(ds.manager, 'p1').getQueryAndParameters();
    expect(created).toMatch(
      /WHERE "e"\."plan_id" = @0 AND "e"\."type" = @1 ORDER BY "e"\."seq" ASC, "e"\."event_id" ASC OFFSET 0 ROWS FETCH NEXT 1 ROWS ONLY$/,
    );
    const [overdue] = overdueGapsStatement(ds.manager, new Date(), 100).getQueryAndParameters();
    expect(overdue).toMatch(
      /WHERE "h"\."gap_since" <= @0 ORDER BY "h"\."gap_since" ASC OFFSET 0 ROWS FETCH NEXT 100 ROWS ONLY$/,
    );
  });

  it('sends a thousand rows in one parameter: no 2,100-parameter or 1,000-row VALUES cap applies', () => {
    const many = Array.from({ length: 1000 }, (_, i) => ({
      ...step,
      id: `00000000-0000-5000-8000-${String(i).padStart(12, '0')}`,
      stepIndex: i,
    }));
    const { sql, params } = jsonInsertStatement(ds.manager, ENTITY.step, many);
    expect(sql).toMatch(
      /^INSERT INTO "plan_steps" \("id", "plan_id", .*\) SELECT "id", "plan_id", .* FROM OPENJSON\(@0\) WITH \(/,
    );
    expect(params).toHaveLength(1);
    expect(JSON.parse((params[0] as { value: string }).value)).toHaveLength(1000);
    expect(jsonInsertStatement(ds.manager, ENTITY.step, many.slice(0, 1)).sql).toBe(sql);
  });
});

describe('the store on SQL Server compiles each statement once', () => {
  /** Heads as a new plan's: what the store reads back after creating them. */
  const newHeads = (sql: string, params: unknown[]) => {
    if (!/^SELECT/.test(sql) || !sql.includes('FROM "plan_heads"')) return undefined;
    return (JSON.parse(String(paramValue(params[0]))) as string[]).map((id) => ({
      r_plan_id: id,
      r_session_id: 's',
      r_version: 1,
      r_event_count: 0,
      r_last_seq: 0,
      r_applied_seq: null,
      r_pending_events: 0,
      r_gap_since: null,
      r_updated_at: new Date(),
      r_restored_at: null,
      r_deleted_at: null,
    }));
  };

  it('sends the same few statement texts whatever the batch: 1 event or 2,000, one plan or hundreds, with nulls or without', async () => {
    const textsOf = async (batches: PlanEvent[][]) => {
      const { ds, statements } = await recordingMssql(newHeads);
      const store = new PlanEventStore(ds, undefined, { rowCacheBytes: 0 });
      for (const batch of batches) await store.persist(batch);
      return new Set(statements.map((s) => s.sql));
    };
    const small = await textsOf([
      manyPlanRuns(1, { seed: 1, steps: 1 }).slice(0, 1),
      manyPlanRuns(3, { seed: 2, steps: 1 }),
    ]);
    const mixed = await textsOf([
      manyPlanRuns(2_000, { seed: 3, steps: 4 }),
      manyPlanRuns(500, { seed: 4, steps: 9 }),
      manyPlanRuns(7, { seed: 5, steps: 2 }),
      manyPlanRuns(50, { seed: 6, steps: 1 }),
    ]);
    // the price overrides and webhook subscriptions read before a transaction; a new plan's rows:
    // heads MERGE, bump, read; events; session MERGE; one INSERT per table; heads written; the rollups MERGE
    expect(mixed.size).toBeLessThanOrEqual(18);
    expect([...mixed].filter((t) => !small.has(t))).toEqual([]);
    for (const text of mixed) expect(text).not.toMatch(/NULL\b(?!\))|VALUES \(@/);
  });

  it('updates of stored rows (steps, plans, handoffs, checkpoints, a DAG) are one text per table whatever the rows', async () => {
    const { ds, statements } = await recordingMssql();
    const rows = mssql.rows(ds.manager);
    for (const n of [1, 17, 1000]) {
      const steps = Array.from({ length: n }, (_, i) => ({
        ...step,
        id: `00000000-0000-5000-8000-${String(i).padStart(12, '0')}`,
        result: i % 2 ? 'x' : null,
      }));
      await rows.update(ENTITY.step, steps, 'id', ['status', 'result']);
      await rows.findIn(
        ENTITY.step,
        'id',
        steps.map((s) => s.id),
      );
      await rows.deleteWhereIn(
        ENTITY.step,
        'planId',
        steps.map((s) => s.planId),
      );
    }
    expect(new Set(statements.map((s) => s.sql)).size).toBe(3);
  });
});

// Two plans of one session in two transactions must not deadlock on SQL Server.
// After the heads (locked in id order), the first rows a transaction writes are its sessions, in
// id order, with a MERGE that updates on match (an exclusive lock at once); no statement before
// them reads another plan's rows.
describe('write order of a transaction', () => {
  it('writes sessions first, in id order, before any plan row', async () => {
    const created = (planId: string, sessionId: string) => {
      const r = parsePlanEvent({
        specVersion: 1,
        eventId: `00000000-0000-4000-8000-0000000000${planId.slice(1).padStart(2, '0')}`,
        type: 'plan.created',
        planId,
        sessionId,
        seq: 1,
        occurredAt: '2026-01-01T00:00:00.000Z',
        payload: { query: 'q', steps: [{ stepId: 'a', index: 0, agentId: 'x', task: 't' }] },
      });
      if (!r.ok) throw r.error;
      return r.event;
    };
    const writes = new PlanWrites();
    for (const [p, s] of [
      ['p3', 'S_b'],
      ['p1', 'S_a'],
      ['p2', 'S_b'],
      ['p4', 'S_A'],
    ])
      writes.addRebuilt(foldPlan([created(p, s)])!, null);
    const calls: Array<{ op: string; entity: string; rows?: Array<{ id?: string }> }> = [];
    const record = (op: string) => async (entity: string, rows?: unknown) => {
      calls.push({ op, entity, rows: Array.isArray(rows) ? (rows as Array<{ id?: string }>) : undefined });
    };
    await writes.write({
      upsert: record('upsert'),
      insert: record('insert'),
      update: record('update'),
      deleteWhereIn: record('delete'),
    } as never);
    expect(calls[0]).toMatchObject({ op: 'upsert', entity: ENTITY.session });
    expect(calls[0].rows!.map((r) => r.id)).toEqual(['S_A', 'S_a', 'S_b']); // binary order, as Latin1_General_100_BIN2 sorts
    expect(calls.slice(1).some((c) => c.entity === ENTITY.session)).toBe(false);
  });
});
