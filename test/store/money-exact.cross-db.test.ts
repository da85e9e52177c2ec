import { DataSource } from 'typeorm';
import { getPlanHistory, getPlanView, listPlans } from '../../src/queries';
import { ENTITY, type ExecutionPlanRow, type PlanStepRow } from '../../src/store/entities';
import { PlanEventStore } from '../../src/store/plan-event-store';
import { ALL_TEST_DBS, createMigratedDb } from '../support/databases';
import { moneyPlan, shown } from '../support/money-plan';

/**
 * Money round-trips exactly: step costs of up to $10^9 with 12 decimals, stored by the worker one
 * event at a time (each event reads the plan's total back and adds to it), read by the entities,
 * the plan view, the plan list and the session's summed cost.
 */
describe.each(ALL_TEST_DBS)('exact money on %s', (kind) => {
  let ds: DataSource;
  let close: () => Promise<void>;

  beforeAll(async () => {
    ({ ds, close } = await createMigratedDb(kind));
  });
  afterAll(async () => close?.());

  it.each([1, 2, 3, 4])('stores and reads every amount and the total to the last decimal (seed %i)', async (seed) => {
    const plan = moneyPlan(`plan_money_${seed}`, seed);
    // no row cache: every event reads the plan's row, total included, back from the database
    const store = new PlanEventStore(ds, undefined, { rowCacheBytes: 0 });
    for (const e of plan.events) await store.persist([e]);

    const steps = await ds.getRepository<PlanStepRow>(ENTITY.step).findBy({ planId: plan.planId });
    expect(Object.fromEntries(steps.map((s) => [s.stepKey, s.cost]))).toEqual(plan.costs);
    expect(Object.fromEntries(steps.map((s) => [s.stepKey, s.reportedCost]))).toEqual(plan.costs);
    const row = await ds.getRepository<ExecutionPlanRow>(ENTITY.plan).findOneByOrFail({ id: plan.planId });
    expect(row.totalCost).toBe(plan.total);

    const view = await getPlanView(ds, plan.planId);
    expect(view.plan.cost).toBe(shown(plan.total));
    expect(Object.fromEntries(view.steps.map((s) => [s.stepId, s.cost]))).toEqual(
      Object.fromEntries(Object.entries(plan.costs).map(([k, c]) => [k, shown(c)])),
    );
    const page = await listPlans(ds, { sessionId: plan.sessionId, limit: 5 });
    expect(page.plans.map((p) => p.cost)).toEqual([shown(plan.total)]);
    expect((await getPlanHistory(ds, plan.sessionId)).cost).toBe(shown(plan.total));
  });
});
