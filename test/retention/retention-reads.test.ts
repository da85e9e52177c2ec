import type { DataSource } from 'typeorm';
import { ALL_TEST_DBS, createMigratedDb } from '../support/databases';
import {
  agentUsage,
  costUsage,
  exportPlanTemplate,
  getActivePlan,
  getPlanHistory,
  getPlanView,
  getResumePoint,
  getStepOutput,
  handoffPatterns,
  listPlans,
  NotFoundError,
  plansPerDay,
  tokenUsage,
} from '../../src/queries';
import { PLAN_TABLES } from '../../src/store/plan-tables';
import { runRetention } from '../../src/retention/retention.service';
import { retentionPolicy } from '../../src/retention/retention-config';
import { ago, DAY, expectedRows, insertPlans, NOW, PlanSpec, planRows, wipe, zero } from './plan-fixtures';

/**
 * Soft-deleted rows are invisible to every read and aggregate: once retention retired a plan, the
 * read side answers exactly as if only the kept plans had ever been stored.
 */
describe.each(ALL_TEST_DBS)('reads after retention on %s', (kind) => {
  let ds: DataSource;
  let close: () => Promise<void>;

  beforeAll(async () => {
    ({ ds, close } = await createMigratedDb(kind));
  });
  afterAll(async () => close?.());

  const reads = async () => ({
    list: await listPlans(ds, { limit: 100 }),
    perDay: await plansPerDay(ds),
    agents: await agentUsage(ds),
    handoffs: await handoffPatterns(ds),
    tokens: await tokenUsage(ds),
    costByModel: await costUsage(ds, {}, 'model'),
    costByAgent: await costUsage(ds, {}, 'agent'),
  });

  /** Every column of every row the plan owns, in key order: what an UPDATE would change. */
  const rowsOf = async (planId: string) => {
    const out: Record<string, unknown[]> = {};
    for (const spec of PLAN_TABLES) {
      const meta = ds.getMetadata(spec.entity);
      const key = meta.primaryColumns.map((c) => `t.${c.propertyName}`);
      const qb = ds.createQueryBuilder().select('t').from(spec.entity, 't').withDeleted();
      qb.where(`t.${spec.planKey} = :planId`, { planId });
      for (const k of key) qb.addOrderBy(k, 'ASC');
      out[spec.table] = await qb.getMany();
    }
    return out;
  };

  /** PostgreSQL: each row's xmin, the transaction that last wrote it. */
  const xminsOf = async (planId: string) => {
    const out: Record<string, string[]> = {};
    for (const spec of PLAN_TABLES) {
      const meta = ds.getMetadata(spec.entity);
      const planColumn = meta.findColumnWithPropertyName(spec.planKey)!.databaseName;
      const order = meta.primaryColumns.map((c) => `"${c.databaseName}"`).join(', ');
      const rows: Array<{ x: string }> = await ds.query(
        `SELECT xmin::text AS x FROM "${meta.tableName}" WHERE "${planColumn}" = $1 ORDER BY ${order}`,
        [planId],
      );
      out[spec.table] = rows.map((r) => r.x);
    }
    return out;
  };

  it('list, timeline, per-day, agent, handoff and token analytics exclude the retired plan', async () => {
    const kept: PlanSpec = { id: 'reads-kept', status: 'completed', completedAt: ago(2 * DAY, ago(DAY)), steps: 2 };
    const retired: PlanSpec = {
      id: 'reads-retired',
      status: 'completed',
      completedAt: ago(40 * DAY, ago(DAY)),
      steps: 4,
    };
    await insertPlans(ds, [kept]);
    const keptOnly = await reads();
    await insertPlans(ds, [retired]);
    expect(await reads()).not.toEqual(keptOnly);
    await getPlanView(ds, retired.id);

    expect(await runRetention(ds, retentionPolicy({ dagTtlMinutes: 0 }), { now: NOW })).toMatchObject({
      plans: { softDeleted: 1 },
    });
    expect(await reads()).toEqual(keptOnly);
    await expect(getPlanView(ds, retired.id)).rejects.toBeInstanceOf(NotFoundError);
  });

  it('a soft delete writes the plan row and head only, and every read hides the rest through the plan', async () => {
    await wipe(ds);
    const kept: PlanSpec = { id: 'quiet-kept', status: 'completed', completedAt: ago(2 * DAY, ago(DAY)), steps: 2 };
    const retired: PlanSpec = { id: 'quiet-retired', status: 'failed', completedAt: ago(100 * DAY), steps: 5 };
    await insertPlans(ds, [kept]);
    const keptOnly = await reads();
    await insertPlans(ds, [retired]);
    expect(await reads()).not.toEqual(keptOnly);
    const rowsBefore = await rowsOf(retired.id);
    const xminsBefore = kind === 'postgres' ? await xminsOf(retired.id) : null;

    const report = await runRetention(ds, retentionPolicy({ dagTtlMinutes: 0 }), { now: NOW });
    expect(report.plans.softDeleted).toBe(1);
    // the report counts the rows the plan hid, every table, as before
    expect(Object.fromEntries(Object.entries(report.tables).map(([t, c]) => [t, c.softDeleted]))).toEqual(
      expectedRows(retired),
    );

    // no row but the plan row and head was written: same values, and on PostgreSQL the same xmin
    expect(await planRows(ds, retired.id, 'stamped')).toEqual({ ...zero(), execution_plans: 1, plan_heads: 1 });
    const rowsAfter = await rowsOf(retired.id);
    for (const spec of PLAN_TABLES) {
      if (spec.table === 'execution_plans' || spec.table === 'plan_heads') continue;
      expect({ [spec.table]: rowsAfter[spec.table] }).toEqual({ [spec.table]: rowsBefore[spec.table] });
    }
    if (xminsBefore) {
      const xminsAfter = await xminsOf(retired.id);
      for (const spec of PLAN_TABLES) {
        const same = spec.table !== 'execution_plans' && spec.table !== 'plan_heads';
        expect({ [spec.table]: same }).toEqual({
          [spec.table]: xminsAfter[spec.table].every((x, i) => x === xminsBefore[spec.table][i]),
        });
      }
    }

    // every read answers as if the plan had never been stored
    expect(await reads()).toEqual(keptOnly);
    for (const read of [
      () => getPlanView(ds, retired.id),
      () => getStepOutput(ds, retired.id, '0'),
      () => exportPlanTemplate(ds, retired.id),
    ])
      await expect(read()).rejects.toBeInstanceOf(NotFoundError);
    expect(await getResumePoint(ds, retired.id)).toMatchObject({
      resumable: false,
      reason: 'it was deleted by retention',
    });
    expect((await getPlanHistory(ds, `sess-${retired.id}`)).plans).toEqual([]);
    expect(await getActivePlan(ds, `sess-${retired.id}`)).toMatchObject({ activePlan: null });
    expect((await getPlanHistory(ds, `sess-${kept.id}`)).plans.map((p) => p.planId)).toEqual([kept.id]);
  });
});
