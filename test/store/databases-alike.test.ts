import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { parsePlanEvent, PlanEvent } from '../../src/contracts';
import { openDataSource } from '../../src/store/data-source';
import { runMigrations } from '../../src/store/migrator';
import { PlanEventStore } from '../../src/store/plan-event-store';
import { getPlanView } from '../../src/queries/plan-timeline.query';
import { agentUsage } from '../../src/queries/analytics.query';
import { parseDatabaseUrl } from '../../src/config/database-url';
import { ALL_TEST_DBS, createMigratedDb, MARIADB_ADMIN_URL, MSSQL_ONLY } from '../support/databases';

// Issue 13: what the databases used to disagree on, checked on each real server alike.

const MAX_INT32 = 2 ** 31 - 1;

function ev(planId: string, seq: number, type: string, payload: object, sessionId: string): PlanEvent {
  const parsed = parsePlanEvent({
    specVersion: 1,
    eventId: randomUUID(),
    type,
    planId,
    sessionId,
    seq,
    occurredAt: new Date(Date.UTC(2026, 0, 1, 10, 0, seq)).toISOString(),
    payload,
  });
  if (!parsed.ok) throw parsed.error;
  return parsed.event;
}

function plan(planId: string, sessionId: string, agentId: string, tokens = 1, query = 'q'): PlanEvent[] {
  return [
    ev(
      planId,
      1,
      'plan.created',
      {
        query,
        steps: [
          { stepId: 'a', index: 0, agentId, task: 't' },
          { stepId: 'b', index: 1, agentId, task: 't' },
        ],
      },
      sessionId,
    ),
    ev(planId, 2, 'step.completed', { stepId: 'a', inputTokens: tokens, outputTokens: tokens }, sessionId),
    ev(planId, 3, 'step.completed', { stepId: 'b', inputTokens: tokens, outputTokens: 1 }, sessionId),
  ];
}

describe.each(ALL_TEST_DBS)('databases alike on %s', (kind) => {
  let ds: DataSource;
  let close: () => Promise<void>;
  let store: PlanEventStore;

  beforeAll(async () => {
    ({ ds, close } = await createMigratedDb(kind));
    store = new PlanEventStore(ds);
  });
  afterAll(async () => close?.());

  it('keeps ids that differ only in case apart: plans, sessions, steps and agents', async () => {
    // one batch, then the other case in a later batch: both paths (new ids together, a stored id found by a lookalike)
    const outcome = await store.persist([...plan('plan_a', 'S1', 'Coder'), ...plan('Plan_A', 's1', 'coder')]);
    expect(outcome).toMatchObject({ inserted: 6, plans: 2 });
    await store.persist(plan('PLAN_A', 'S1', 'CODER'));
    const plans = await ds.query(`SELECT id, session_id FROM execution_plans ORDER BY id`);
    expect(plans.map((p: { id: string }) => p.id).sort()).toEqual(['PLAN_A', 'Plan_A', 'plan_a']);
    const sessions = await ds.query(`SELECT id FROM sessions`);
    expect(sessions.map((s: { id: string }) => s.id).sort()).toEqual(['S1', 's1']);
    const lower = await ds.query(`SELECT id FROM execution_plans WHERE id = 'plan_a'`);
    expect(lower).toEqual([{ id: 'plan_a' }]);
    for (const id of ['plan_a', 'Plan_A', 'PLAN_A']) expect((await getPlanView(ds, id)).plan.completedSteps).toBe(2);
    const agents = (await agentUsage(ds)).map((a) => [a.agentId, a.totalSteps]);
    expect(agents.sort()).toEqual([
      ['CODER', 2],
      ['Coder', 2],
      ['coder', 2],
    ]);
  });

  it('adds token totals past 2^31 exactly, in the rows and on the read side', async () => {
    await store.persist(plan('plan_tokens', 'S_tokens', 'coder', MAX_INT32));
    // a later event applied to the stored totals (the incremental path reads them back)
    await store.persist([ev('plan_tokens', 4, 'plan.finalized', { status: 'completed' }, 'S_tokens')]);
    const [row] = await ds.query(
      `SELECT total_input_tokens, total_output_tokens FROM execution_plans WHERE id = 'plan_tokens'`,
    );
    expect(String(row.total_input_tokens)).toBe(String(2 * MAX_INT32));
    expect(String(row.total_output_tokens)).toBe(String(MAX_INT32 + 1));
    const view = await getPlanView(ds, 'plan_tokens');
    expect(view.plan).toMatchObject({ status: 'completed', inputTokens: 2 * MAX_INT32, outputTokens: MAX_INT32 + 1 });
  });
});

// MariaDB itself: not part of a SQL Server-only run (`npm run test:mssql`)
(MSSQL_ONLY ? describe.skip : describe)('MariaDB', () => {
  it('stores emoji and CJK text in a database created as latin1, and checks statuses as the others do', async () => {
    const name = `pl_latin1_${Date.now().toString(36)}`;
    const admin = await openDataSource(parseDatabaseUrl(MARIADB_ADMIN_URL), { poolSize: 1 });
    await admin.query(`CREATE DATABASE \`${name}\` CHARACTER SET latin1 COLLATE latin1_swedish_ci`);
    const url = new URL(MARIADB_ADMIN_URL);
    url.pathname = `/${name}`;
    const ds = await openDataSource(parseDatabaseUrl(url.toString()), { poolSize: 2 });
    try {
      await runMigrations(ds);
      const text = '计划 😀 Ünïcødé';
      await new PlanEventStore(ds).persist(plan('plan_utf8', 'S_utf8', 'agent_😀', 1, text));
      const [row] = await ds.query(`SELECT query FROM execution_plans WHERE id = 'plan_utf8'`);
      expect(row.query).toBe(text);
      const tables: Array<{ TABLE_NAME: string; TABLE_COLLATION: string }> = await ds.query(
        `SELECT TABLE_NAME, TABLE_COLLATION FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME <> 'migrations'`,
        [name],
      );
      expect(tables.length).toBe(16); // the ten of the plans (plan_agents included), price overrides and their audit, analytics_rollups, approvals, the two of webhooks
      for (const t of tables) expect(`${t.TABLE_NAME} ${t.TABLE_COLLATION}`).toBe(`${t.TABLE_NAME} utf8mb4_unicode_ci`);
      await expect(ds.query(`UPDATE execution_plans SET status = 'bogus' WHERE id = 'plan_utf8'`)).rejects.toThrow(
        /CK_execution_plans_status/,
      );
      await expect(ds.query(`UPDATE plan_steps SET status = 'bogus'`)).rejects.toThrow(/CK_plan_steps_status/);
    } finally {
      await ds.destroy();
      await admin.query(`DROP DATABASE IF EXISTS \`${name}\``);
      await admin.destroy();
    }
  });
});
