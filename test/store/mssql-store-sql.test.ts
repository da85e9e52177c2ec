import { DataSource } from 'typeorm';
import { parseDatabaseUrl } from '../../src/config/database-url';
import { createDataSource } from '../../src/store/data-source';
import { ENTITY } from '../../src/store/entities';
import { bumpHeadsStatement, recountHeadsStatement, refreshSessionsStatement, upsertStatement, insertStatement } from '../../src/store/plan-event-statements';
import { rowsPerStatement } from '../../src/store/batch-limits';

// No SQL Server here: the event store's statements are rendered on a DataSource that never connects.
describe('event store SQL on SQL Server', () => {
  let ds: DataSource;
  beforeAll(() => {
    ds = createDataSource(parseDatabaseUrl('mssql://sa:x@127.0.0.1:1/none'));
    // entity metadata without connecting
    (ds as unknown as { buildMetadatas(): void }).buildMetadatas();
  });

  // TypeORM leaves out WHEN MATCHED when only the key would be "updated": on SQL Server the MERGE
  // inserts missing heads; the bump UPDATE that follows takes the lock (before anything is read), and a concurrent insert of
  // the same key fails with 2627, which the store retries (isDuplicateKeyError).
  it('upserts heads with a MERGE matching on the primary key', () => {
    const [sql] = upsertStatement(ds.manager, ENTITY.head, 'plan_id', [
      { planId: 'p1', sessionId: 's1', version: 0, eventCount: 0, lastSeq: 0, updatedAt: new Date(), deletedAt: null },
    ]).getQueryAndParameters();
    expect(sql).toMatch(/^MERGE INTO "plan_heads"/);
    expect(sql).toContain('ON ("plan_heads"."plan_id" = "mergeIntoSource"."plan_id")');
    expect(sql).toContain('WHEN NOT MATCHED THEN INSERT');
  });

  it('bumps heads and refreshes sessions with correlated subqueries T-SQL accepts', () => {
    const [bump, params] = bumpHeadsStatement(ds.manager, ['p1', 'p2'], new Date()).getQueryAndParameters();
    expect(bump).toBe('UPDATE "plan_heads" SET "version" = "version" + 1, "updated_at" = @0 WHERE "plan_id" IN (@1, @2)');
    expect(params).toHaveLength(3);
    const [recount] = recountHeadsStatement(ds.manager, ['p1']).getQueryAndParameters();
    expect(recount).toMatch(/^UPDATE "plan_heads" SET "event_count" = \(SELECT COUNT\(\*\) FROM plan_events e WHERE e\.plan_id = plan_heads\.plan_id\), "last_seq" = \(SELECT MAX\(e\.seq\) FROM plan_events e WHERE e\.plan_id = plan_heads\.plan_id\)/);
    expect(recount).toContain('WHERE "plan_id" IN (@0)');
    const [refresh] = refreshSessionsStatement(ds.manager, ['s1']).getQueryAndParameters();
    expect(refresh).toContain('"created_at" = COALESCE((SELECT MIN(p.created_at) FROM execution_plans p WHERE p.session_id = sessions.id), "created_at")');
  });

  it('keeps multi-row inserts under 2,100 parameters and 1,000 rows', () => {
    const columns = ds.getMetadata(ENTITY.step).columns.length;
    const rows = rowsPerStatement('mssql', columns);
    expect(rows * columns).toBeLessThan(2100);
    const step = { id: '00000000-0000-5000-8000-000000000000', planId: 'p', stepKey: 'k', stepIndex: 0, agentId: 'a', task: 't', title: null, expectedOutput: null, dependsOn: '[]', status: 'pending', result: null, error: null, outputContent: null, model: null, inputTokens: 0, outputTokens: 0, startedAt: null, completedAt: null, createdAt: new Date(), deletedAt: null };
    const { sql, params } = insertStatement(ds.manager, ENTITY.step, Array.from({ length: rows }, (_, i) => ({ ...step, stepIndex: i })));
    expect(params.length).toBeLessThan(2100);
    expect(sql).toMatch(/^INSERT INTO "plan_steps" \("id", "plan_id", /);
    expect(sql).toContain('(@0, @1, @2, @3, @4, @5, NULL, NULL, @6, @7');
    // typed parameters: dates bind as datetime2, not the legacy datetime a bare Date would get
    const created = params.find((p) => (p as { value?: unknown }).value instanceof Date) as { type: string };
    expect(created.type).toBe('datetime2');
    expect(rowsPerStatement('mssql', 2)).toBe(1000);
  });
});
