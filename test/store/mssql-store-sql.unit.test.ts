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
import { insertStatement } from '../../src/store/sql/values-statements';
import { mergeStatement, mssql } from '../../src/store/sql/mssql';
import { rowsPerStatement } from '../../src/store/sql/batch-limits';
import { parsePlanEvent } from '../../src/contracts';
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
  model: null,
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
  beforeAll(() => {
    ds = createDataSource(parseDatabaseUrl('mssql://sa:x@127.0.0.1:1/none'));
    // entity metadata without connecting
    (ds as unknown as { buildMetadatas(): void }).buildMetadatas();
  });

  // The MERGE takes the row's exclusive lock at once (WHEN MATCHED updates a column to itself),
  // HOLDLOCK makes a concurrent insert of the same key wait instead of failing with 2627.
  it('creates or locks heads with one MERGE that never updates the key', () => {
    const { sql, params } = mergeStatement(
      ds.manager,
      ENTITY.head,
      [newHead('p1', 's1', new Date()), newHead('p2', 's1', new Date())],
      { key: 'planId', update: [] },
    );
    expect(sql).toMatch(/^MERGE INTO "plan_heads" WITH \(HOLDLOCK\) AS t USING \(VALUES \(@0, @1, /);
    expect(sql).toContain(
      'ON t."plan_id" = s."plan_id" WHEN MATCHED THEN UPDATE SET "session_id" = t."session_id" WHEN NOT MATCHED THEN INSERT ("plan_id", "session_id"',
    );
    expect(sql).toMatch(/;$/);
    // NULLs are typed parameters: a bare NULL in a VALUES source is an int, which datetime2 refuses
    expect(sql).not.toContain('NULL');
    const columns = ds.getMetadata(ENTITY.head).columns.length;
    expect(params).toHaveLength(2 * columns);
    const gapSince = params[ds.getMetadata(ENTITY.head).columns.findIndex((c) => c.propertyName === 'gapSince')] as {
      type: string;
      value: unknown;
    };
    expect(gapSince).toMatchObject({ type: 'datetime2', value: null });
  });

  it('keeps the earliest and latest times of a session with CASE (GREATEST/LEAST need SQL Server 2022)', () => {
    const { sql } = mergeStatement(
      ds.manager,
      ENTITY.session,
      [{ id: 's1', createdAt: new Date(), updatedAt: new Date() }],
      { key: 'id', update: [], keep: { createdAt: 'min', updatedAt: 'max' } },
    );
    expect(sql).toContain(
      'WHEN MATCHED THEN UPDATE SET "created_at" = CASE WHEN s."created_at" < t."created_at" THEN s."created_at" ELSE t."created_at" END, "updated_at" = CASE WHEN s."updated_at" > t."updated_at" THEN s."updated_at" ELSE t."updated_at" END',
    );
  });

  it('updates only the columns events change', () => {
    const { sql } = mergeStatement(ds.manager, ENTITY.step, [step], { key: 'id', update: ['status', 'outputContent'] });
    expect(sql).toContain(
      'WHEN MATCHED THEN UPDATE SET "status" = s."status", "output_content" = s."output_content" WHEN NOT MATCHED',
    );
  });

  it('locks and reads heads and logs with statements T-SQL accepts', () => {
    const [lock, params] = lockHeadsStatement(ds.manager, ['p1', 'p2']).getQueryAndParameters();
    expect(lock).toBe('UPDATE "plan_heads" SET "version" = "version" + 1 WHERE "plan_id" IN (@0, @1)');
    expect(params).toHaveLength(2);
    const [page] = logPageStatement(
      ds.manager,
      'p1',
      { after: { seq: 3, eventId: 'e' } },
      1000,
    ).getQueryAndParameters();
    expect(page).toContain('("e"."seq" > @1 OR ("e"."seq" = @1 AND "e"."event_id" > @2))');
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

  it('keeps multi-row inserts and merges under 2,100 parameters and 1,000 rows', () => {
    const columns = ds.getMetadata(ENTITY.step).columns.length;
    const rows = rowsPerStatement(mssql, columns);
    expect(rows * columns).toBeLessThan(2100);
    const many = Array.from({ length: rows }, (_, i) => ({ ...step, stepIndex: i }));
    const { sql, params } = insertStatement(ds.manager, ENTITY.step, many, { typed: true });
    expect(params.length).toBeLessThan(2100);
    expect(sql).toMatch(/^INSERT INTO "plan_steps" \("id", "plan_id", /);
    expect(sql).toContain('(@0, @1, @2, @3, @4, @5, NULL, NULL, @6, @7');
    // typed parameters: dates bind as datetime2, not the legacy datetime a bare Date would get
    const created = params.find((p) => (p as { value?: unknown }).value instanceof Date) as { type: string };
    expect(created.type).toBe('datetime2');
    expect(mergeStatement(ds.manager, ENTITY.step, many, { key: 'id', update: ['status'] }).params.length).toBe(
      rows * columns,
    );
    expect(rowsPerStatement(mssql, 2)).toBe(1000);
  });
});

// Issue 13, item 2: two plans of one session in two transactions must not deadlock on SQL Server.
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
