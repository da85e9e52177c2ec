import type { DataSource } from 'typeorm';
import { ALL_TEST_DBS, createMigratedDb } from '../support/databases';
import {
  agentUsage,
  getPlanView,
  handoffPatterns,
  listPlans,
  NotFoundError,
  plansPerDay,
  tokenUsage,
} from '../../src/queries';
import { runRetention } from '../../src/retention/retention.service';
import { retentionPolicy } from '../../src/retention/retention-config';
import { ago, DAY, insertPlans, NOW, PlanSpec } from './plan-fixtures';

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
  });

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
});
