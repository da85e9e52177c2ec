import type { DataSource } from 'typeorm';
import type { PlanEvent } from '../../src/contracts';
import { costColumn, priceStep } from '../../src/pricing';
import { ENTITY, PlanStepRow, PriceRepriceRow } from '../../src/store/entities';
import { PlanEventStore } from '../../src/store/plan-event-store';
import { addPriceOverride, listPriceOverrides, toPriceOverride } from '../../src/store/price-overrides';
import { repriceSteps } from '../../src/store/price-reprice';
import { ALL_TEST_DBS, createMigratedDb } from '../support/databases';
import { stableUuid } from '../support/event-factory';
import { parsedEvent } from '../support/parsed-event';
import { gpt4oOverride } from '../support/price-fixtures';

jest.setTimeout(180_000);

/**
 * A reprice over more steps than one keyset page (200), their rows stored in an order that mixes
 * the plans: every step is priced once, the counts
 * of steps and plans in the outcome and in the audit row are exact, and each plan's total is the
 * sum of its steps' new costs.
 */

const PLANS = 60;
const STEPS = 5;
const AT = '2025-05-02T00:00:00.000Z';
const RANGE = { from: new Date('2025-05-01T00:00:00.000Z'), to: new Date('2025-06-01T00:00:00.000Z') };

const planId = (p: number) => `pages_${String(p).padStart(3, '0')}`;
function ev(p: number, seq: number, type: string, payload: object): PlanEvent {
  return parsedEvent({
    planId: planId(p),
    sessionId: 'sess_pages',
    seq,
    type,
    payload,
    occurredAt: AT,
    eventId: stableUuid(`${planId(p)}#${seq}`),
  });
}
const plans = Array.from({ length: PLANS }, (_, p) => p);
const created = (p: number) =>
  ev(p, 0, 'plan.created', {
    query: 'q',
    steps: Array.from({ length: STEPS }, (_, i) => ({ stepId: `s${i}`, index: i, agentId: 'a', task: 't' })),
  });
const completed = (p: number, i: number) =>
  ev(p, 1 + i, 'step.completed', { stepId: `s${i}`, inputTokens: 1000 + p, outputTokens: 300 + i, model: 'gpt-4o' });

describe.each(ALL_TEST_DBS)('reprice over several pages, on %s', (kind) => {
  let ds: DataSource;
  let close: () => Promise<void>;

  beforeAll(async () => {
    ({ ds, close } = await createMigratedDb(kind));
    const store = new PlanEventStore(ds, undefined, { overridesRefreshMs: 0, rowCacheBytes: 0 });
    await store.persist(plans.map(created));
    // one step of every plan per round: the plans' rows are written interleaved
    for (let i = 0; i < STEPS; i++) await store.persist(plans.map((p) => completed(p, i)));
    // and stored again step by step across the plans, so a scan in storage order mixes them
    const rows = await ds.getRepository<PlanStepRow>(ENTITY.step).find();
    rows.sort((a, b) => Number(a.stepIndex) - Number(b.stepIndex) || a.planId.localeCompare(b.planId));
    await ds.createQueryBuilder().delete().from(ENTITY.step).execute();
    for (let i = 0; i < rows.length; i += 50)
      await ds
        .createQueryBuilder()
        .insert()
        .into(ENTITY.step)
        .values(rows.slice(i, i + 50))
        .updateEntity(false)
        .execute();
  });
  afterAll(async () => close?.());

  it('prices every step once and counts the steps and plans exactly', async () => {
    const dry = await repriceSteps(ds, { ...RANGE, apply: false });
    expect(dry).toMatchObject({ applied: false, steps: PLANS * STEPS, changedSteps: 0, plans: 0 });

    await addPriceOverride(ds, gpt4oOverride(RANGE.from));
    const applied = await repriceSteps(ds, { ...RANGE, apply: true });
    expect(applied).toMatchObject({ applied: true, steps: PLANS * STEPS, changedSteps: PLANS * STEPS, plans: PLANS });
    const audit = await ds
      .getRepository<PriceRepriceRow>(ENTITY.priceReprice)
      .findOneByOrFail({ id: applied.auditId! });
    expect({ steps: Number(audit.steps), plans: Number(audit.plans) }).toEqual({ steps: PLANS * STEPS, plans: PLANS });

    const overrides = (await listPriceOverrides(ds)).map(toPriceOverride);
    const rows: Array<Record<string, unknown>> = await ds.query(
      `SELECT s.plan_id, s.input_tokens, s.output_tokens, s.cost, p.total_cost FROM plan_steps s JOIN execution_plans p ON p.id = s.plan_id WHERE s.plan_id LIKE 'pages_%'`,
    );
    expect(rows).toHaveLength(PLANS * STEPS);
    const expected = (r: Record<string, unknown>) =>
      priceStep(
        {
          model: 'gpt-4o',
          provider: null,
          inputTokens: Number(r.input_tokens),
          outputTokens: Number(r.output_tokens),
          cacheReadTokens: 0,
          cacheWriteTokens: 0,
          reasoningTokens: 0,
          reportedCost: null,
        },
        new Date(AT),
        overrides,
      );
    const wrong = rows.filter((r) => Number(r.cost) !== Number(costColumn(expected(r))));
    expect(wrong).toEqual([]);
    for (const p of plans) {
      const own = rows.filter((r) => r.plan_id === planId(p));
      const sum = own.reduce((t, r) => t + (expected(r).cost ?? 0n), 0n);
      expect(Number(own[0].total_cost)).toBe(Number(costColumn({ cost: sum, source: 'table', priceRef: null })));
    }
  });
});
