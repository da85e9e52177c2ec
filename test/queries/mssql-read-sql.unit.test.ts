import { DataSource, MssqlParameter } from 'typeorm';
import { parseDatabaseUrl } from '../../src/config/database-url';
import { createDataSource } from '../../src/store/data-source';
import { buildPlanListQuery } from '../../src/queries/plan-list.query';
import {
  buildAgentUsageQuery,
  buildHandoffPatternsQuery,
  buildPlansPerDayQuery,
} from '../../src/queries/analytics.query';
import {
  buildPlanTokensPageQuery,
  buildPlanTokensQuery,
  buildSessionTokensPageQuery,
  buildSessionTokensQuery,
  buildSessionTotalsQuery,
  buildStepTokensQuery,
} from '../../src/queries/token-usage.query';
import { buildLatestCheckpointQuery } from '../../src/queries/workflow-resume.query';
import { buildLedgerUsageQuery } from '../../src/queries/reconcile.query';

/**
 * No SQL Server runs here: the read queries are built on an mssql DataSource that never connects
 * (entity metadata only) and their SQL is checked as text.
 */
describe('read queries on SQL Server (generated SQL)', () => {
  let ds: DataSource;
  const range = { from: new Date('2026-02-01T00:00:00Z'), to: new Date('2026-03-01T00:00:00Z') };

  beforeAll(async () => {
    ds = createDataSource(parseDatabaseUrl('mssql://sa:x@127.0.0.1:1/none'));
    // what initialize() does first, without the connection
    await (ds as unknown as { buildMetadatas(): Promise<void> }).buildMetadatas();
  });

  const sqlOf = (qb: { getQueryAndParameters(): [string, unknown[]] }) => qb.getQueryAndParameters();

  it('pages plan lists with ORDER BY ... OFFSET n ROWS FETCH NEXT m ROWS ONLY, never LIMIT', () => {
    const [sql, params] = sqlOf(
      buildPlanListQuery(ds, { sessionId: 's-1', statuses: ['completed', 'failed'], limit: 20, offset: 40 }),
    );
    expect(sql).toMatch(/ORDER BY "p"\."created_at" DESC, "p"\."id" DESC OFFSET 40 ROWS FETCH NEXT 20 ROWS ONLY$/);
    expect(sql).not.toMatch(/\bLIMIT\b/);
    expect(sql).toContain('"p"."session_id" = @0');
    // padded to every status's count: one statement text for any number of statuses
    expect(sql).toContain('"p"."status" IN (@1, @2, @3, @4, @5)');
    expect(sql).toContain('"p"."deleted_at" IS NULL');
    expect(params).toEqual(['s-1', 'completed', 'failed', 'completed', 'failed', 'completed']);
  });

  it("filters plan lists by agent through plan_agents' index alone and by creation time, all as parameters", () => {
    const [sql, params] = sqlOf(
      buildPlanListQuery(ds, {
        agentId: "o'brien",
        created: { from: new Date('2025-01-01T00:00:00Z'), to: new Date('2025-02-01T00:00:00Z') },
        limit: 20,
      }),
    );
    expect(sql).toContain(
      'INNER JOIN "plan_agents" "a" ON "a"."plan_id" = "p"."id" AND ("a"."agent_id" = @0 AND DATALENGTH("a"."agent_id") = DATALENGTH(@0))',
    );
    // plan_agents is exact (the writer deletes an agent's row with its last step): no step is read
    expect(sql).not.toContain('plan_steps');
    expect(sql).toMatch(/ORDER BY "a"\."created_at" DESC, "a"\."plan_id" DESC OFFSET 0 ROWS FETCH NEXT 20 ROWS ONLY$/);
    expect(sql).toContain('"p"."created_at" >= @');
    expect(sql).toContain('"p"."created_at" < @');
    expect(sql).not.toContain("o'brien");
    expect(params).toContain("o'brien");
  });

  it('pages by cursor with a bounded (created_at, id) range, as parameters', () => {
    const [sql, params] = sqlOf(
      buildPlanListQuery(ds, {
        statuses: ['failed'],
        cursor: { createdAt: new Date('2026-01-15T00:00:00Z'), planId: "p'1" },
        limit: 20,
      }),
    );
    expect(sql).toContain('"p"."created_at" <= @5 AND ("p"."created_at" < @5 OR "p"."id" < @6)');
    expect(sql).not.toContain("p'1");
    expect(params).toContain("p'1");
  });

  it("pages the tokens report's plans by the indexed computed column total_tokens, after a cursor, as parameters", () => {
    const [sql, params] = sqlOf(buildPlanTokensPageQuery(ds, range, 101, [1234, "p'1"]));
    expect(sql).toContain('p.total_tokens <= @2 AND (p.total_tokens < @2 OR "p"."id" > @3)');
    expect(sql).toMatch(/ORDER BY p\.total_tokens DESC, "p"\."id" ASC OFFSET 0 ROWS FETCH NEXT 101 ROWS ONLY$/);
    expect(sql).toContain('"p"."deleted_at" IS NULL');
    expect(sql).not.toContain("p'1");
    expect(params).toContain("p'1");
  });

  it('reads the sessions largest of all time by the indexed computed column total_tokens of the rollups', () => {
    const [sql, params] = sqlOf(buildSessionTotalsQuery(ds, 202));
    expect(sql).toContain('"r"."kind" = @0');
    expect(sql).toMatch(/ORDER BY r\.total_tokens DESC OFFSET 0 ROWS FETCH NEXT 202 ROWS ONLY$/);
    expect(params).toEqual(['session-total']);
  });

  it("pages the tokens report's sessions from the rollups, sorted and cut by the database, ids kept apart by length", () => {
    const [sql, params] = sqlOf(
      buildSessionTokensPageQuery(ds, { from: '2026-02-01', to: '2026-03-01' }, 101, [1234, "s'1"]),
    );
    const total = 'SUM(CAST("r"."input_tokens" AS BIGINT)) + SUM(CAST("r"."output_tokens" AS BIGINT))';
    expect(sql).toContain('GROUP BY "r"."session_id", DATALENGTH("r"."session_id")');
    expect(sql).toContain('HAVING SUM(CAST("r"."items" AS BIGINT)) <> 0');
    expect(sql).toMatch(
      /ORDER BY SUM\(CAST\("r"\."input_tokens" AS BIGINT\)\) \+ SUM\(CAST\("r"\."output_tokens" AS BIGINT\)\) DESC, "r"\."session_id" ASC, DATALENGTH\("r"\."session_id"\) ASC OFFSET 0 ROWS FETCH NEXT 101 ROWS ONLY$/,
    );
    expect(sql).toContain(`${total} < @`);
    expect(sql).toContain('"r"."session_id" = @');
    expect(sql).not.toContain("s'1");
    expect(params).toContain("s'1");
  });

  it('reads the latest checkpoint as one row with OFFSET 0 ROWS FETCH NEXT 1', () => {
    const [sql] = sqlOf(buildLatestCheckpointQuery(ds, 'wf-1'));
    expect(sql).toMatch(
      /ORDER BY "c"\."layer" DESC, "c"\."created_at" DESC, "c"\."id" DESC OFFSET 0 ROWS FETCH NEXT 1 ROWS ONLY$/,
    );
    expect(sql).toContain('"c"."deleted_at" IS NULL');
  });

  it('sums steps for a reconciliation per UTC day of their completion, provider and model, sums in bigint and as text', () => {
    const [sql, params] = sqlOf(buildLedgerUsageQuery(ds, range));
    const at = 'COALESCE("s"."completed_at", "s"."started_at", "s"."created_at")';
    expect(sql).toContain(`CAST(${at} AS DATE) AS "day"`);
    expect(sql).toContain('SUM(CAST("s"."cache_read_tokens" AS BIGINT)) AS "cacheRead"');
    expect(sql).toContain('CONVERT(varchar(40), SUM("s"."cost")) AS "cost"');
    expect(sql).toContain(`${at} >= @0 AND ${at} < @1`);
    expect(sql).toContain(
      `GROUP BY "s"."provider", DATALENGTH("s"."provider"), "s"."model", DATALENGTH("s"."model"), CAST(${at} AS DATE)`,
    );
    expect(sql).toContain('"p"."deleted_at" IS NULL');
    for (const p of params) expect(p).toMatchObject({ type: 'datetime2', params: [3] });
  });

  it('buckets plans per day with CAST(created_at AS DATE) and datetime2 range parameters', () => {
    const [sql, params] = sqlOf(buildPlansPerDayQuery(ds, range));
    expect(sql).toContain('SELECT CAST("p"."created_at" AS DATE) AS "day", COUNT(*) AS "total"');
    expect(sql).toContain('SUM(CASE WHEN "p"."status" = \'completed\' THEN 1 ELSE 0 END) AS "completed"');
    expect(sql).toContain('GROUP BY CAST("p"."created_at" AS DATE)');
    expect(sql).toContain('"p"."created_at" >= @0');
    expect(sql).toContain('"p"."created_at" < @1');
    for (const p of params) {
      expect(p).toBeInstanceOf(MssqlParameter);
      expect(p).toMatchObject({ type: 'datetime2', params: [3] });
    }
  });

  it('joins steps and handoffs only to live plans, and every aggregate skips deleted rows', () => {
    const queries = [
      buildAgentUsageQuery(ds, range),
      buildHandoffPatternsQuery(ds, range),
      buildStepTokensQuery(ds, range, 'agent'),
      buildStepTokensQuery(ds, range, 'model'),
      buildSessionTokensQuery(ds, range),
      buildPlanTokensQuery(ds, range),
    ];
    for (const qb of queries) {
      const [sql] = sqlOf(qb);
      expect(sql).toMatch(/"(s|h|p)"\."deleted_at" IS NULL/);
      if (sql.includes('INNER JOIN'))
        expect(sql).toMatch(/INNER JOIN "execution_plans" "p" ON .*"p"\."deleted_at" IS NULL/);
      expect(sql).not.toMatch(/\bLIMIT\b|`/);
    }
    expect(sqlOf(buildAgentUsageQuery(ds, {}))[0]).toContain('GROUP BY "s"."agent_id"');
    // SUM(int) is int on SQL Server and overflows past 2^31 tokens
    expect(sqlOf(buildStepTokensQuery(ds, {}, 'model'))[0]).toContain(
      'SUM(CAST("s"."input_tokens" AS BIGINT)) AS "inputTokens"',
    );
    expect(sqlOf(buildSessionTokensQuery(ds, {}))[0]).toContain('SUM(CAST("p"."total_output_tokens" AS BIGINT))');
    expect(sqlOf(buildHandoffPatternsQuery(ds, {}))[0]).toContain(
      'GROUP BY "h"."from_agent_id", DATALENGTH("h"."from_agent_id"), "h"."to_agent_id", DATALENGTH("h"."to_agent_id"), "h"."reason", DATALENGTH("h"."reason")',
    );
  });
});
