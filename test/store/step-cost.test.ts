import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { DataSource } from 'typeorm';
import { parsePlanEvent, PlanEvent } from '../../src/contracts';
import { formatMoney, moneyFromColumn, parseMoney, PRICE_TABLE_VERSION } from '../../src/pricing';
import { PlanEventStore } from '../../src/store/plan-event-store';
import { foldPlan } from '../../src/store/projection/fold-plan';
import { ALL_TEST_DBS, createMigratedDb } from '../support/databases';

function ev(planId: string, seq: number, type: string, payload: object, occurredAt: string): PlanEvent {
  const parsed = parsePlanEvent({
    specVersion: 1,
    eventId: randomUUID(),
    type,
    planId,
    sessionId: `sess_${planId}`,
    seq,
    occurredAt,
    payload,
  });
  if (!parsed.ok) throw parsed.error;
  return parsed.event;
}

const STEPS = ['before_cut', 'after_cut', 'cached', 'reported', 'unknown', 'no_usage', 'skipped'];

/** One plan whose steps cover every way a step is priced. */
function pricedPlan(planId: string): PlanEvent[] {
  let seq = 0;
  const e = (type: string, payload: object, at: string) => ev(planId, seq++, type, payload, at);
  return [
    e(
      'plan.created',
      {
        query: 'q',
        steps: STEPS.map((stepId, index) => ({ stepId, index, agentId: `agent_${index % 2}`, task: 't' })),
      },
      '2025-06-01T00:00:00.000Z',
    ),
    // o3 cost $10/$40 per Mtok before 2025-06-10, $2/$8 from then on
    e(
      'step.completed',
      { stepId: 'before_cut', inputTokens: 1000, outputTokens: 100, model: 'o3' },
      '2025-06-09T23:59:59.999Z',
    ),
    e(
      'step.completed',
      { stepId: 'after_cut', inputTokens: 1000, outputTokens: 100, model: 'o3' },
      '2025-06-10T00:00:00.000Z',
    ),
    e(
      'step.completed',
      {
        stepId: 'cached',
        inputTokens: 1200,
        outputTokens: 300,
        cacheReadTokens: 1000,
        model: 'gpt-4o',
        provider: 'openai',
      },
      '2025-06-11T00:00:00.000Z',
    ),
    e(
      'step.completed',
      { stepId: 'reported', inputTokens: 1, outputTokens: 1, model: 'gpt-4o', reportedCost: '0.000000000007' },
      '2025-06-11T00:00:01.000Z',
    ),
    e(
      'step.failed',
      { stepId: 'unknown', error: 'x', inputTokens: 50, outputTokens: 5, model: 'in-house-7b' },
      '2025-06-11T00:00:02.000Z',
    ),
    e('step.failed', { stepId: 'no_usage', error: 'x' }, '2025-06-11T00:00:03.000Z'),
    e('step.skipped', { stepId: 'skipped' }, '2025-06-11T00:00:04.000Z'),
  ];
}

const EXPECTED: Record<string, [cost: string | null, source: string | null, ref: string | null]> = {
  before_cut: ['0.014000000000', 'table', `${PRICE_TABLE_VERSION}:openai/o3`], // 1,000 x $10 + 100 x $40 per Mtok
  after_cut: ['0.002800000000', 'table', `${PRICE_TABLE_VERSION}:openai/o3`], // 1,000 x $2 + 100 x $8
  cached: ['0.004750000000', 'table', `${PRICE_TABLE_VERSION}:openai/gpt-4o`], // 200 x $2.50 + 1,000 x $1.25 + 300 x $10
  reported: ['0.000000000007', 'reported', null],
  unknown: [null, 'unpriced', null],
  no_usage: [null, null, null],
  skipped: [null, null, null],
};
const EXPECTED_TOTAL = '0.021550000007';

interface StepCostRow {
  step_key: string;
  cost: unknown;
  cost_source: string | null;
  price_ref: string | null;
}

async function stepCosts(
  ds: DataSource,
  planId: string,
): Promise<Record<string, [string | null, string | null, string | null]>> {
  const rows: StepCostRow[] = await ds.query(
    `SELECT step_key, cost, cost_source, price_ref FROM plan_steps WHERE plan_id = '${planId}'`,
  );
  return Object.fromEntries(
    rows.map((r) => {
      const cost = moneyFromColumn(r.cost);
      return [r.step_key, [cost === null ? null : formatMoney(cost), r.cost_source, r.price_ref]];
    }),
  );
}

async function planTotal(ds: DataSource, planId: string): Promise<{ total: string; unpriced: number }> {
  const [row] = await ds.query(`SELECT total_cost, unpriced_steps FROM execution_plans WHERE id = '${planId}'`);
  return { total: formatMoney(moneyFromColumn(row.total_cost)!), unpriced: Number(row.unpriced_steps) };
}

describe.each(ALL_TEST_DBS)('step cost on %s', (kind) => {
  let ds: DataSource;
  let close: () => Promise<void>;
  let store: PlanEventStore;

  beforeAll(async () => {
    ({ ds, close } = await createMigratedDb(kind));
    store = new PlanEventStore(ds);
  });
  afterAll(async () => close?.());

  it('fixes each step at the price in force when it ran; the plan total is exact and counts unpriced steps apart', async () => {
    const events = pricedPlan('plan_cost');
    for (const e of events) await store.persist([e]); // one event at a time: the incremental apply
    expect(await stepCosts(ds, 'plan_cost')).toEqual(EXPECTED);
    expect(await planTotal(ds, 'plan_cost')).toEqual({ total: EXPECTED_TOTAL, unpriced: 1 });
    // the whole-log fold agrees with what the incremental apply stored
    const folded = foldPlan(events)!;
    expect(folded.plan.totalCost).toBe(EXPECTED_TOTAL);
    expect(folded.plan.unpricedSteps).toBe(1);
  });

  it('incremental totals equal the sum over the steps, whatever the batches and order of arrival', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 8, maxLength: 8 }),
        fc.integer({ min: 0, max: 2 ** 30 }),
        async (cuts, seed) => {
          const planId = `plan_prop_${run++}`;
          const events = [...pricedPlan(planId)];
          // a seeded shuffle, then batches of the sizes drawn
          let s = seed;
          for (let i = events.length - 1; i > 0; i--) {
            s = (s * 1103515245 + 12345) % 2 ** 31;
            const j = s % (i + 1);
            [events[i], events[j]] = [events[j]!, events[i]!];
          }
          for (let at = 0, k = 0; at < events.length; at += cuts[k++ % cuts.length]!)
            await store.persist(events.slice(at, at + cuts[k % cuts.length]!));
          const steps = await stepCosts(ds, planId);
          const sum = Object.values(steps).reduce((a, [c]) => a + (c === null ? 0n : parseMoney(c)!), 0n);
          expect(steps).toEqual(EXPECTED);
          expect(await planTotal(ds, planId)).toEqual({ total: formatMoney(sum), unpriced: 1 });
          expect(formatMoney(sum)).toBe(EXPECTED_TOTAL);
        },
      ),
      { numRuns: 6 },
    );
  });
});
