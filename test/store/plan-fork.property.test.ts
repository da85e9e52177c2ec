/**
 * A fork's rows do not depend on how its events arrive: applied incrementally in any batching and
 * order (steps taken from the ancestors as their first events come), they equal the rows of the
 * same events folded again from the fork's whole log (the store's rebuild).
 */
import * as fc from 'fast-check';
import type { DataSource } from 'typeorm';
import { PlanEvent } from '../../src/contracts';
import { PlanEventStore } from '../../src/store/plan-event-store';
import { createMigratedDb } from '../support/databases';
import { parsedEvent } from '../support/parsed-event';

const RUNS = Number(process.env.PROPERTY_RUNS ?? 40);
const AT = Date.parse('2026-06-01T00:00:00.000Z');

const event = (planId: string, seq: number, type: string, payload: object): PlanEvent =>
  parsedEvent({ planId, sessionId: 'sess_prop', seq, type, payload, occurredAt: new Date(AT + seq * 1000) });

const spec = (stepId: string, index: number, dependsOn: string[] = []) => ({
  stepId,
  index,
  agentId: `agent_${stepId}`,
  task: `task ${stepId}`,
  dependsOn,
});

/** Step activity of a fork: a step key (e is no step of any plan) and what happens to it. */
const actionArb = fc.record({
  key: fc.constantFrom('a', 'b', 'c', 'd', 'e'),
  kind: fc.constantFrom('started', 'completed', 'failed', 'skipped', 'handoff'),
  tokens: fc.integer({ min: 0, max: 50 }),
});

const caseArb = fc.record({
  layer: fc.integer({ min: 0, max: 2 }),
  editD: fc.boolean(),
  actions: fc.array(actionArb, { minLength: 1, maxLength: 12 }),
  batches: fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 12, maxLength: 12 }),
  order: fc.array(fc.nat(), { minLength: 13, maxLength: 13 }),
});

type Case = typeof caseArb extends fc.Arbitrary<infer T> ? T : never;

function forkEvents(planId: string, c: Case): PlanEvent[] {
  const events = [
    event(planId, 0, 'plan.created', {
      query: 'q',
      steps: c.editD ? [{ ...spec('d', 3, ['b', 'c']), task: 'task d, changed' }] : [],
      forkOf: { planId: 'p_prop', kind: 'fork', layer: c.layer },
    }),
  ];
  c.actions.forEach((a, i) => {
    const seq = i + 1;
    if (a.kind === 'started') events.push(event(planId, seq, 'step.started', { stepId: a.key }));
    else if (a.kind === 'completed')
      events.push(event(planId, seq, 'step.completed', { stepId: a.key, inputTokens: a.tokens, outputTokens: 1 }));
    else if (a.kind === 'failed') events.push(event(planId, seq, 'step.failed', { stepId: a.key, error: 'x' }));
    else if (a.kind === 'skipped') events.push(event(planId, seq, 'step.skipped', { stepId: a.key }));
    else
      events.push(
        event(planId, seq, 'handoff.recorded', {
          handoffId: `h${seq}`,
          stepId: a.key,
          fromAgentId: 'x',
          toAgentId: 'y',
          reason: 'r',
        }),
      );
  });
  return events;
}

async function rowsOf(ds: DataSource, planId: string): Promise<unknown> {
  const plan = await ds.query(
    `SELECT status, total_steps, completed_steps, failed_steps, skipped_steps, total_input_tokens, total_output_tokens FROM execution_plans WHERE id = '${planId}'`,
  );
  const steps = await ds.query(
    `SELECT step_key, step_index, task, depends_on, status, input_tokens, started_at, completed_at FROM plan_steps WHERE plan_id = '${planId}' ORDER BY step_key`,
  );
  const handoffs = await ds.query(
    `SELECT handoff_key, step_id, step_key FROM plan_handoffs WHERE plan_id = '${planId}' ORDER BY handoff_key`,
  );
  return JSON.parse(JSON.stringify({ plan, steps, handoffs }).replace(/"(\d+)"/g, '$1'));
}

describe('a fork whatever its events arrival (SQLite)', () => {
  let ds: DataSource;
  let close: () => Promise<void>;
  let store: PlanEventStore;

  beforeAll(async () => {
    ({ ds, close } = await createMigratedDb('sqlite'));
    store = new PlanEventStore(ds, undefined, { rowCacheBytes: 0 });
    await store.persist([
      event('p_prop', 0, 'plan.created', {
        query: 'q',
        steps: [spec('a', 0), spec('b', 1, ['a']), spec('c', 2, ['a']), spec('d', 3, ['b', 'c'])],
      }),
      event('p_prop', 1, 'step.completed', { stepId: 'a', inputTokens: 10, outputTokens: 1 }),
      event('p_prop', 2, 'step.failed', { stepId: 'b', error: 'boom' }),
    ]);
  });
  afterAll(async () => close?.());

  it('incremental apply, in any batching and order, equals the fold of the whole log', async () => {
    let n = 0;
    await fc.assert(
      fc.asyncProperty(caseArb, async (c) => {
        const id = `f_prop_${n++}`;
        const events = forkEvents(id, c);
        // arrival: a permutation, in batches
        const shuffled = events
          .map((e, i) => ({ e, k: c.order[i] ?? 0 }))
          .sort((x, y) => x.k - y.k)
          .map((x) => x.e);
        for (let i = 0, b = 0; i < shuffled.length; i += c.batches[b++ % c.batches.length])
          await store.persist(shuffled.slice(i, i + c.batches[b % c.batches.length]));
        const incremental = await rowsOf(ds, id);
        expect(await store.rebuildPlans([id])).toBe(1);
        expect(await rowsOf(ds, id)).toEqual(incremental);
      }),
      { numRuns: RUNS },
    );
  });
});
