import fc from 'fast-check';
import type { DataSource } from 'typeorm';
import { createMigratedDb, type TestDb } from '../support/databases';
import {
  agentUsage,
  costUsage,
  getPlanHistory,
  getPlanView,
  handoffPatterns,
  listPlans,
  NotFoundError,
  plansPerDay,
  tokenUsage,
} from '../../src/queries';
import { DEFAULT_RETENTION_POLICY, runRetention } from '../../src/retention';
import { ENTITY } from '../../src/store/entities';
import { ago, DAY, insertPlans, NOW, PlanSpec, wipe } from './plan-fixtures';

/**
 * Reads agree with and without retention: a store whose due plans were soft-deleted by a run
 * (their plan row and head stamped, every other row left as it was) answers every read as a
 * store that only ever held the plans kept.
 */
const KINDS: TestDb[] = ['sqlite', 'postgres'];
const RUNS = 8;
const SESSIONS = ['sess-a', 'sess-b', 'sess-c'];
const STATUSES = ['completed', 'failed', 'cancelled', 'executing'] as const;
const AGE_DAYS = [2, 45, 120];

const planArb = fc.record({
  status: fc.constantFrom(...STATUSES),
  ageDays: fc.constantFrom(...AGE_DAYS),
  steps: fc.integer({ min: 1, max: 5 }),
  session: fc.nat(SESSIONS.length - 1),
});

type Drawn = { status: (typeof STATUSES)[number]; ageDays: number; steps: number; session: number };

function specOf(p: Drawn, i: number): PlanSpec {
  const ended = ago(p.ageDays * DAY);
  return {
    id: `prop-${i}`,
    status: p.status,
    completedAt: p.status === 'executing' ? null : ended,
    createdAt: ago(p.ageDays * DAY + 3_600_000),
    steps: p.steps,
    sessionId: SESSIONS[p.session],
  };
}

/** What the default policy retires at NOW: terminal plans ended longer ago than their status keeps them. */
function due(p: Drawn): boolean {
  const days = { completed: 30, failed: 90, cancelled: 30, executing: Infinity }[p.status];
  return p.ageDays > days;
}

describe.each(KINDS)('reads with and without retention on %s', (kind) => {
  let ds: DataSource;
  let close: () => Promise<void>;

  beforeAll(async () => {
    ({ ds, close } = await createMigratedDb(kind));
  });
  afterAll(async () => close?.());

  /** Every plan table, sessions and the analytics rollups emptied. */
  const empty = async () => {
    await wipe(ds);
    await ds.createQueryBuilder().delete().from(ENTITY.rollup).where('1 = 1').execute();
  };

  const reads = async () => ({
    list: await listPlans(ds, { limit: 100 }),
    perDay: await plansPerDay(ds),
    agents: await agentUsage(ds),
    handoffs: await handoffPatterns(ds),
    tokens: await tokenUsage(ds),
    costByModel: await costUsage(ds, {}, 'model'),
    costByAgent: await costUsage(ds, {}, 'agent'),
    // a session with no plan kept still exists (its row goes with the purge)
    histories: await Promise.all(SESSIONS.map((s) => getPlanHistory(ds, s).catch((e: Error) => e.name))),
  });

  it(`a retention run leaves reads as if only the kept plans were stored (${RUNS} runs)`, async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(planArb, { minLength: 1, maxLength: 6 }), async (drawn) => {
        const specs = drawn.map(specOf);
        const kept = specs.filter((_, i) => !due(drawn[i]));
        const retired = specs.filter((_, i) => due(drawn[i]));
        await empty();
        await insertPlans(ds, kept);
        const keptOnly = await reads();

        await empty();
        await insertPlans(ds, specs);
        const report = await runRetention(ds, DEFAULT_RETENTION_POLICY, { now: NOW });
        expect(report.plans.softDeleted).toBe(retired.length);
        const after = await reads();
        expect(after.list).toEqual(keptOnly.list);
        expect(after.perDay).toEqual(keptOnly.perDay);
        expect(after.agents).toEqual(keptOnly.agents);
        expect(after.handoffs).toEqual(keptOnly.handoffs);
        expect(after.tokens).toEqual(keptOnly.tokens);
        expect(after.costByModel).toEqual(keptOnly.costByModel);
        expect(after.costByAgent).toEqual(keptOnly.costByAgent);
        for (const [i, h] of after.histories.entries()) {
          const want = keptOnly.histories[i];
          // a session only retired plans were in is known here (until the purge), with no plan
          if (typeof want === 'string' && typeof h !== 'string') expect(h).toMatchObject({ plans: [] });
          else expect(h).toEqual(want);
        }
        for (const p of retired) await expect(getPlanView(ds, p.id)).rejects.toBeInstanceOf(NotFoundError);
        for (const p of kept) expect((await getPlanView(ds, p.id)).plan.planId).toBe(p.id);
      }),
      { numRuns: RUNS },
    );
  });
});
