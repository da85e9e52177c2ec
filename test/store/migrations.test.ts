import { DataSource } from 'typeorm';
import { openDataSource } from '../../src/store/data-source';
import { derivedId } from '../../src/store/projection/derived-id';
import { revertAllMigrations, runMigrations } from '../../src/store/migrator';
import { ALL_TEST_DBS, createThrowawayDb, ThrowawayDb } from '../support/databases';

/** Tables and the columns of the product's schema they must carry, plus what the other uses add. */
const EXPECTED_COLUMNS: Record<string, string[]> = {
  sessions: ['id', 'created_at', 'updated_at'],
  execution_plans: [
    'id',
    'session_id',
    'query',
    'status',
    'summary',
    'failure_reason',
    'total_steps',
    'completed_steps',
    'failed_steps',
    'total_input_tokens',
    'total_output_tokens',
    'total_cost',
    'unpriced_steps',
    'parent_plan_id',
    'fork_kind',
    'fork_layer',
    'fork_checkpoint',
    'created_at',
    'updated_at',
    'completed_at',
    'deleted_at',
  ],
  plan_steps: [
    'id',
    'plan_id',
    'step_index',
    'agent_id',
    'task',
    'expected_output',
    'status',
    'result',
    'error',
    'input_tokens',
    'output_tokens',
    'started_at',
    'completed_at',
    'created_at',
    'output_content',
    'output_event_id',
    'deleted_at',
    'cost',
    'cost_source',
    'price_ref',
  ],
  plan_handoffs: [
    'id',
    'plan_id',
    'step_id',
    'step_key',
    'from_agent_id',
    'to_agent_id',
    'reason',
    'explanation',
    'timestamp',
    'deleted_at',
  ],
  plan_decisions: ['id', 'plan_id', 'decision', 'modified_steps', 'feedback', 'decided_by', 'decided_at', 'deleted_at'],
  workflow_dags: ['workflow_id', 'dag', 'intent', 'created_at', 'expires_at', 'deleted_at'],
  workflow_checkpoints: ['id', 'workflow_id', 'layer', 'state', 'created_at', 'deleted_at'],
  plan_events: ['event_id', 'plan_id', 'session_id', 'type', 'seq', 'occurred_at', 'payload', 'deleted_at'],
  price_overrides: [
    'id',
    'model_pattern',
    'provider',
    'effective_from',
    'input_per_mtok',
    'output_per_mtok',
    'currency',
  ],
  price_reprices: ['id', 'ran_at', 'from_at', 'to_at', 'model', 'steps', 'plans', 'old_total', 'new_total', 'diff'],
  plan_agents: ['id', 'plan_id', 'agent_id', 'created_at'],
  analytics_rollups: [
    'id',
    'day',
    'kind',
    'session_id',
    'agent_id',
    'model',
    'status',
    'items',
    'input_tokens',
    'cost',
  ],
  webhook_subscriptions: ['id', 'url', 'secret', 'event_types', 'enabled', 'created_at'],
  webhook_deliveries: [
    'id',
    'subscription_id',
    'event_type',
    'event_id',
    'plan_id',
    'payload',
    'status',
    'attempts',
    'next_attempt_at',
    'lease_owner',
    'lease_until',
    'last_error',
    'created_at',
    'delivered_at',
  ],
  approvals: ['approval_id', 'plan_id', 'args_digest', 'expires_at', 'decision', 'consumed_at', 'consumed_by'],
  plan_heads: [
    'plan_id',
    'version',
    'event_count',
    'last_seq',
    'applied_seq',
    'pending_events',
    'gap_since',
    'restored_at',
    'deadline_ms',
    'stall_due_at',
    'stall_check_at',
    'stalled_at',
    'deleted_at',
  ],
};

const ALL_MIGRATIONS = [
  'InitialSchema1795219200000',
  'IndexHandoffStep1795219300000',
  'IncrementalStore1795219400000',
  'DatabasesAlike1795219500000',
  'PlanRestoredAt1795219600000',
  'StepCost1795219700000',
  'PriceOverrides1795219800000',
  'PlanLineage1795219900000',
  'IdentifierCollations1795220000000',
  'PlanList1795221000000',
  'AnalyticsRollups1795224400000',
  'RollupSessionTokens1795224800000',
  'Webhooks1795225000000',
  'Approvals1795225100000',
  'OutputsStoredOnce1795225200000',
  'StalledPlans1795226450000',
  'ApprovalExpired1795227060000',
  'ReportedCostSteps1795227080000',
  'HandoffRollups1795227090000',
  'TokenPages1795227120000',
  'ExactPlanAgents1795227130000',
  'SessionTotalRollups1795227140000',
  'PlanStepParts1795227141000',
  'StoredTokenTotals1795227170000',
  'StallCheckTimes1795227200000',
  'RollupHotUpdates1795227210000',
  'HotPlanStepUpdates1795227220000',
];

/** Seed 000, section 6, verbatim. */
const PRD_ANALYTICS = [
  `SELECT
    CAST(created_at AS DATE) as date,
    COUNT(*) as total_plans,
    SUM(CASE WHEN status = 'completed' THEN 1 ELSE 0 END) as completed,
    SUM(CASE WHEN status = 'failed' THEN 1 ELSE 0 END) as failed
FROM execution_plans
GROUP BY CAST(created_at AS DATE)
ORDER BY date DESC;`,
  `SELECT
    agent_id,
    COUNT(*) as total_steps,
    SUM(CASE WHEN status = 'completed' THEN 1 ELSE 0 END) as completed,
    AVG(CAST(output_tokens AS FLOAT)) as avg_tokens
FROM plan_steps
GROUP BY agent_id
ORDER BY total_steps DESC;`,
  `SELECT
    from_agent_id,
    to_agent_id,
    reason,
    COUNT(*) as count
FROM plan_handoffs
GROUP BY from_agent_id, to_agent_id, reason
ORDER BY count DESC;`,
];

const TABLES_SQL: Record<string, string> = {
  sqlite: `SELECT name AS t FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`,
  postgres: `SELECT table_name AS t FROM information_schema.tables WHERE table_schema = current_schema()`,
  mariadb: `SELECT table_name AS t FROM information_schema.tables WHERE table_schema = DATABASE()`,
  mssql: `SELECT name AS t FROM sys.tables`,
};

async function tableNames(ds: DataSource, kind: string): Promise<string[]> {
  const rows: Array<{ t?: string; T?: string; TABLE_NAME?: string }> = await ds.query(TABLES_SQL[kind]);
  return rows.map((r) => String(r.t ?? r.T ?? r.TABLE_NAME)).sort();
}

/**
 * The columns and index names of a table as its database's catalog lists them. TypeORM's table
 * reader looks the computed columns `total_tokens` of execution_plans and analytics_rollups (MySQL/MariaDB, SQL Server) up
 * in a `typeorm_metadata` table the migrations do not create, so those two are read here.
 */
/** From the catalogs: TypeORM's getTable reads a table with generated columns from its own `typeorm_metadata`. */
const CATALOG_SQL: Record<string, { columns: string; indexes: string }> = {
  postgres: {
    columns: `SELECT column_name AS n FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1`,
    indexes: `SELECT indexname AS n FROM pg_indexes WHERE schemaname = current_schema() AND tablename = $1`,
  },
  mariadb: {
    columns: `SELECT column_name AS n FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = ?`,
    indexes: `SELECT DISTINCT index_name AS n FROM information_schema.statistics WHERE table_schema = DATABASE() AND table_name = ?`,
  },
  mssql: {
    columns: `SELECT name AS n FROM sys.columns WHERE object_id = OBJECT_ID(@0)`,
    indexes: `SELECT name AS n FROM sys.indexes WHERE object_id = OBJECT_ID(@0) AND name IS NOT NULL`,
  },
};

async function catalogNames(
  ds: DataSource,
  kind: string,
  what: 'columns' | 'indexes',
  table: string,
): Promise<string[]> {
  const rows: Array<Record<string, unknown>> = await ds.query(CATALOG_SQL[kind][what], [table]);
  return rows.map((r) => String(r.n ?? r.N));
}

async function columnNames(ds: DataSource, kind: string, table: string): Promise<string[]> {
  if (CATALOG_SQL[kind]) return catalogNames(ds, kind, 'columns', table);
  const runner = ds.createQueryRunner();
  try {
    const t = await runner.getTable(table);
    return t ? t.columns.map((c) => c.name) : [];
  } finally {
    await runner.release();
  }
}

describe.each(ALL_TEST_DBS)('migrations on %s', (kind) => {
  let db: ThrowawayDb;
  let ds: DataSource;

  beforeAll(async () => {
    db = await createThrowawayDb(kind);
    ds = await openDataSource(db.target, { poolSize: 2 });
  });
  afterAll(async () => {
    if (ds?.isInitialized) await ds.destroy();
    await db?.drop();
  });

  it("creates every table with the columns of the product's schema", async () => {
    const report = await runMigrations(ds);
    expect(report.applied).toEqual(ALL_MIGRATIONS);
    expect(await tableNames(ds, kind)).toEqual([...Object.keys(EXPECTED_COLUMNS), 'migrations'].sort());
    for (const [table, expected] of Object.entries(EXPECTED_COLUMNS)) {
      expect(await columnNames(ds, kind, table)).toEqual(expect.arrayContaining(expected));
    }
  });

  it('is idempotent: a second run applies nothing', async () => {
    expect((await runMigrations(ds)).applied).toEqual([]);
  });

  it('names the PRD indexes and the unique step index', async () => {
    const runner = ds.createQueryRunner();
    try {
      // PostgreSQL's plan_steps has a generated column (reported_plan_id): its tables from the catalog
      const pg = kind === 'postgres';
      const steps = pg ? undefined : await runner.getTable('plan_steps');
      const indexNames = CATALOG_SQL[kind]
        ? await catalogNames(ds, kind, 'indexes', 'execution_plans')
        : (await runner.getTable('execution_plans'))!.indices.map((i) => i.name);
      if (kind !== 'mariadb')
        expect(
          pg
            ? await catalogNames(ds, kind, 'indexes', 'plan_handoffs')
            : (await runner.getTable('plan_handoffs'))!.indices.map((i) => i.name),
        ).toEqual(expect.arrayContaining(['IX_plan_handoffs_plan', 'IX_plan_handoffs_step']));
      expect(indexNames).toEqual(
        expect.arrayContaining([
          'IX_execution_plans_session',
          'IX_execution_plans_status',
          'IX_execution_plans_created_id',
          'IX_execution_plans_status_created',
          'IX_execution_plans_deleted',
          'IX_execution_plans_tokens',
        ]),
      );
      const stepIndexes = steps
        ? [...steps.uniques.map((u) => u.name), ...steps.indices.filter((i) => i.isUnique).map((i) => i.name)]
        : await catalogNames(ds, kind, 'indexes', 'plan_steps');
      expect(stepIndexes).toContain('UQ_plan_step_index');
      if (pg) {
        // the reported steps by a generated column that is NULL for every other step (HotPlanStepUpdates)
        const [{ def }] = await ds.query(
          `SELECT indexdef AS def FROM pg_indexes WHERE schemaname = current_schema() AND indexname = 'IX_plan_steps_cost_source'`,
        );
        expect(def).toContain('(reported_plan_id) WHERE (reported_plan_id IS NOT NULL)');
      } else {
        const costIndex = steps!.indices.find((i) => i.name === 'IX_plan_steps_cost_source');
        // TypeORM's table reader may list an index's columns out of their order
        expect([...(costIndex?.columnNames ?? [])].sort()).toEqual(['cost_source', 'plan_id']);
      }
    } finally {
      await runner.release();
    }
  });

  if (kind !== 'sqlite') {
    it("runs the product's analytics SQL unmodified", async () => {
      await ds.query(`INSERT INTO sessions (id) VALUES ('s1')`);
      await ds.query(
        `INSERT INTO execution_plans (id, session_id, query, status, total_steps) VALUES ('p1', 's1', 'q', 'completed', 1)`,
      );
      await ds.query(
        `INSERT INTO plan_steps (id, plan_id, step_key, step_index, agent_id, task, status, output_tokens) VALUES ('00000000-0000-4000-8000-000000000001', 'p1', 'a', 0, 'coder', 't', 'completed', 10)`,
      );
      await ds.query(
        `INSERT INTO plan_handoffs (id, plan_id, handoff_key, from_agent_id, to_agent_id, reason) VALUES ('00000000-0000-4000-8000-000000000002', 'p1', 'h1', 'planner', 'coder', 'delegation')`,
      );
      const [daily, agents, handoffs] = await Promise.all(PRD_ANALYTICS.map((sql) => ds.query(sql)));
      expect(daily).toHaveLength(1);
      expect(Number(daily[0].total_plans)).toBe(1);
      expect(Number(daily[0].completed)).toBe(1);
      expect(agents).toEqual([expect.objectContaining({ agent_id: 'coder' })]);
      expect(Number(agents[0].avg_tokens)).toBe(10);
      expect(handoffs).toEqual([
        expect.objectContaining({ from_agent_id: 'planner', to_agent_id: 'coder', reason: 'delegation' }),
      ]);
      expect(Number(handoffs[0].count)).toBe(1);
    });
  }

  it('reverts everything, leaving only the migrations table, then migrates again', async () => {
    const report = await revertAllMigrations(ds);
    expect(report.reverted).toEqual([...ALL_MIGRATIONS].reverse());
    expect(await tableNames(ds, kind)).toEqual(['migrations']);
    expect((await runMigrations(ds)).applied).toEqual(ALL_MIGRATIONS);
    expect(await tableNames(ds, kind)).toHaveLength(Object.keys(EXPECTED_COLUMNS).length + 1);
  });

  it('upgrades stored plans: a plan with rows has every stored event applied, a handoff gets its step key', async () => {
    // back to the schema of IndexHandoffStep1795219300000
    for (let i = 0; i < ALL_MIGRATIONS.length - 2; i++) await ds.undoLastMigration({ transaction: 'each' });
    const at = kind === 'sqlite' ? "'2026-01-01 00:00:00.000'" : "'2026-01-01 00:00:00'";
    await ds.query(`INSERT INTO sessions (id) VALUES ('up_s')`);
    await ds.query(
      `INSERT INTO execution_plans (id, session_id, query, status, total_steps) VALUES ('up_p', 'up_s', 'q', 'executing', 1)`,
    );
    await ds.query(
      `INSERT INTO plan_steps (id, plan_id, step_key, step_index, agent_id, task, status) VALUES ('00000000-0000-4000-8000-00000000000a', 'up_p', 'a', 0, 'coder', 't', 'pending'), ('00000000-0000-4000-8000-00000000000d', 'up_p', 'b', 1, 'coder ', 't', 'pending'), ('00000000-0000-4000-8000-00000000000e', 'up_p', 'c', 2, 'coder', 't', 'pending')`,
    );
    await ds.query(
      `INSERT INTO plan_handoffs (id, plan_id, step_id, handoff_key, from_agent_id, to_agent_id, reason) VALUES ('00000000-0000-4000-8000-00000000000b', 'up_p', '00000000-0000-4000-8000-00000000000a', 'h1', 'x', 'y', 'r'), ('00000000-0000-4000-8000-00000000000c', 'up_p', NULL, 'h2', 'x', 'y', 'r')`,
    );
    await ds.query(
      `INSERT INTO plan_heads (plan_id, session_id, version, event_count, last_seq, updated_at) VALUES ('up_p', 'up_s', 3, 4, 3, ${at}), ('up_orphan', 'up_s', 1, 2, 7, ${at})`,
    );
    expect((await runMigrations(ds)).applied).toEqual(ALL_MIGRATIONS.slice(2));
    // a plan stored before costs existed: no cost is made up for it
    const [plan] = await ds.query(`SELECT total_cost, unpriced_steps FROM execution_plans WHERE id = 'up_p'`);
    expect([Number(plan.total_cost), Number(plan.unpriced_steps)]).toEqual([0, 0]);
    const [step] = await ds.query(
      `SELECT cost, cost_source, price_ref, cache_read_tokens FROM plan_steps WHERE plan_id = 'up_p'`,
    );
    expect([step.cost, step.cost_source, step.price_ref, Number(step.cache_read_tokens)]).toEqual([
      null,
      null,
      null,
      0,
    ]);
    const heads = await ds.query(
      `SELECT plan_id, applied_seq, pending_events, gap_since FROM plan_heads WHERE plan_id LIKE 'up_%' ORDER BY plan_id`,
    );
    expect(heads).toEqual([
      { plan_id: 'up_orphan', applied_seq: null, pending_events: 2, gap_since: null },
      { plan_id: 'up_p', applied_seq: 3, pending_events: 0, gap_since: null },
    ]);
    const handoffs = await ds.query(
      `SELECT handoff_key, step_key FROM plan_handoffs WHERE plan_id = 'up_p' ORDER BY handoff_key`,
    );
    expect(handoffs).toEqual([
      { handoff_key: 'h1', step_key: 'a' },
      { handoff_key: 'h2', step_key: null },
    ]);
    // each agent of the plan's steps, byte for byte (`coder ` is not `coder`), once
    const agents: Array<{ agent_id: string }> = await ds.query(
      `SELECT agent_id FROM plan_agents WHERE plan_id = 'up_p'`,
    );
    expect(agents.map((a) => `[${a.agent_id}]`).sort()).toEqual(['[coder ]', '[coder]']);
    // the rollups filled from the stored rows: the plan, and its steps per agent (`coder ` apart)
    const sums: Array<{ kind: string; agent_id: string | null; items: unknown }> = await ds.query(
      `SELECT kind, agent_id, items FROM analytics_rollups WHERE session_id = 'up_s' OR agent_id LIKE 'coder%'`,
    );
    expect(sums.map((r) => `${r.kind}:[${r.agent_id ?? ''}]:${Number(r.items)}`).sort()).toEqual([
      'plan:[]:1',
      'session-total:[]:1',
      'step:[coder ]:1',
      'step:[coder]:2',
    ]);
  });

  it("deletes the plan_agents rows of agents none of their plan's steps is given to, byte for byte", async () => {
    // back to before ExactPlanAgents (and the migrations after it)
    const later = ALL_MIGRATIONS.slice(ALL_MIGRATIONS.indexOf('ExactPlanAgents1795227130000'));
    for (let i = 0; i < later.length; i++) await ds.undoLastMigration({ transaction: 'each' });
    const at = kind === 'sqlite' ? "'2026-01-01 00:00:00.000'" : "'2026-01-01 00:00:00'";
    await ds.query(`INSERT INTO sessions (id) VALUES ('ex_s')`);
    await ds.query(
      `INSERT INTO execution_plans (id, session_id, query, status, total_steps, created_at) VALUES ('ex_p', 'ex_s', 'q', 'executing', 1, ${at})`,
    );
    await ds.query(
      `INSERT INTO plan_steps (id, plan_id, step_key, step_index, agent_id, task, status) VALUES ('00000000-0000-4000-8000-0000000000e1', 'ex_p', 'a', 0, 'coder', 't', 'in_progress')`,
    );
    // rows left by steps started by another agent: `coder ` and `tester` have no step in ex_p
    const rows = ['coder', 'coder ', 'tester'].map(
      (agent) => `('${derivedId('ex_p', 'agent', agent)}', 'ex_p', '${agent}', ${at})`,
    );
    await ds.query(`INSERT INTO plan_agents (id, plan_id, agent_id, created_at) VALUES ${rows.join(', ')}`);
    expect((await runMigrations(ds)).applied).toEqual(later);
    const agents: Array<{ plan_id: string; agent_id: string }> = await ds.query(
      `SELECT plan_id, agent_id FROM plan_agents WHERE plan_id IN ('ex_p', 'up_p')`,
    );
    expect(agents.map((a) => `${a.plan_id}:[${a.agent_id}]`).sort()).toEqual([
      'ex_p:[coder]',
      'up_p:[coder ]',
      'up_p:[coder]',
    ]);
  });
});
