/**
 * A fork's rows in the store: it references its ancestors' steps instead of copying them, and a
 * step it runs becomes its own row on the step's first event, with the definition of the nearest
 * ancestor that has it. The same rows whether its events arrive together with its plan.created,
 * one per transaction, or are folded again from its whole log.
 */
import { DataSource } from 'typeorm';
import { PlanEvent } from '../../src/contracts';
import { PlanEventStore } from '../../src/store/plan-event-store';
import { ALL_TEST_DBS, createMigratedDb } from '../support/databases';
import { parsedEvent } from '../support/parsed-event';

let clock = Date.parse('2026-03-01T00:00:00.000Z');
function ev(planId: string, seq: number, type: string, payload: object, sessionId = 'sess_fork'): PlanEvent {
  clock += 1000;
  return parsedEvent({ planId, sessionId, seq, type, payload, occurredAt: new Date(clock) });
}

const spec = (stepId: string, index: number, dependsOn: string[] = [], task = `task ${stepId}`) => ({
  stepId,
  index,
  agentId: `agent_${stepId}`,
  task,
  dependsOn,
});

/** a -> (b, c) -> d: d failed. */
function parentEvents(planId: string): PlanEvent[] {
  return [
    ev(planId, 0, 'plan.created', {
      query: 'q',
      steps: [spec('a', 0), spec('b', 1, ['a']), spec('c', 2, ['a']), spec('d', 3, ['b', 'c'])],
    }),
    ev(planId, 1, 'step.completed', { stepId: 'a', inputTokens: 10, outputTokens: 1, result: 'A' }),
    ev(planId, 2, 'step.completed', { stepId: 'b', inputTokens: 20, outputTokens: 2, result: 'B' }),
    ev(planId, 3, 'step.completed', { stepId: 'c', inputTokens: 30, outputTokens: 3, result: 'C' }),
    ev(planId, 4, 'checkpoint.saved', { checkpointId: 'cp1', layer: 1, state: { k: 1 } }),
    ev(planId, 5, 'step.failed', { stepId: 'd', error: 'boom', inputTokens: 40, outputTokens: 4 }),
    ev(planId, 6, 'plan.finalized', { status: 'failed', failureReason: 'd failed' }),
  ];
}

/** A fork of `parent` from layer 1 with d edited; it runs b, c and d. */
function forkEvents(planId: string, parent: string): PlanEvent[] {
  return [
    ev(planId, 0, 'plan.created', {
      query: 'q again',
      steps: [spec('d', 3, ['b', 'c'], 'task d, fixed')],
      forkOf: { planId: parent, kind: 'fork', layer: 1 },
    }),
    ev(planId, 1, 'step.started', { stepId: 'b' }),
    ev(planId, 2, 'step.completed', { stepId: 'b', inputTokens: 21, outputTokens: 2, result: 'B2' }),
    ev(planId, 3, 'handoff.recorded', { handoffId: 'h1', stepId: 'c', fromAgentId: 'x', toAgentId: 'y', reason: 'r' }),
    ev(planId, 4, 'step.completed', { stepId: 'c', inputTokens: 31, outputTokens: 3, result: 'C2' }),
    ev(planId, 5, 'step.completed', { stepId: 'd', inputTokens: 41, outputTokens: 4, result: 'D2' }),
    ev(planId, 6, 'step.completed', { stepId: 'nope', inputTokens: 1, outputTokens: 1 }),
    ev(planId, 7, 'plan.finalized', { status: 'completed' }),
  ];
}

describe.each(ALL_TEST_DBS)('forks in the store on %s', (kind) => {
  let ds: DataSource;
  let close: () => Promise<void>;
  let store: PlanEventStore;

  beforeAll(async () => {
    ({ ds, close } = await createMigratedDb(kind));
    store = new PlanEventStore(ds, undefined, { rowCacheBytes: 0 });
  });
  afterAll(async () => close?.());

  async function stepRows(planId: string): Promise<Array<Record<string, unknown>>> {
    const rows: Array<Record<string, unknown>> = await ds.query(
      `SELECT step_key, step_index, agent_id, task, depends_on, status, result, input_tokens, output_tokens FROM plan_steps WHERE plan_id = '${planId}' ORDER BY step_index`,
    );
    return rows.map((r) => ({
      ...r,
      step_index: Number(r.step_index),
      input_tokens: Number(r.input_tokens),
      output_tokens: Number(r.output_tokens),
    }));
  }

  async function planRow(planId: string): Promise<Record<string, unknown>> {
    const [p] = await ds.query(
      `SELECT status, parent_plan_id, fork_kind, fork_layer, fork_checkpoint, total_steps, completed_steps, failed_steps, total_input_tokens, total_output_tokens FROM execution_plans WHERE id = '${planId}'`,
    );
    return Object.fromEntries(
      Object.entries(p as object).map(([k, v]) => [k, typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v]),
    );
  }

  const forkSteps = [
    {
      step_key: 'b',
      step_index: 1,
      agent_id: 'agent_b',
      task: 'task b',
      depends_on: '["a"]',
      status: 'completed',
      result: 'B2',
      input_tokens: 21,
      output_tokens: 2,
    },
    {
      step_key: 'c',
      step_index: 2,
      agent_id: 'agent_c',
      task: 'task c',
      depends_on: '["a"]',
      status: 'completed',
      result: 'C2',
      input_tokens: 31,
      output_tokens: 3,
    },
    {
      step_key: 'd',
      step_index: 3,
      agent_id: 'agent_d',
      task: 'task d, fixed',
      depends_on: '["b","c"]',
      status: 'completed',
      result: 'D2',
      input_tokens: 41,
      output_tokens: 4,
    },
  ];
  const forkPlan = {
    status: 'completed',
    parent_plan_id: 'p_parent',
    fork_kind: 'fork',
    fork_layer: 1,
    fork_checkpoint: null,
    total_steps: 3,
    completed_steps: 3,
    failed_steps: 0,
    total_input_tokens: 93,
    total_output_tokens: 9,
  };

  it('a fork gets rows only for the steps it defines or runs, each with its ancestor definition, whatever the batching', async () => {
    await store.persist(parentEvents('p_parent'));
    // the plan.created and the events in one transaction
    await store.persist(forkEvents('f_together', 'p_parent'));
    // one event per transaction, through a store that keeps the rows it wrote (the row cache)
    const cached = new PlanEventStore(ds);
    for (const e of forkEvents('f_apart', 'p_parent')) await cached.persist([e]);
    for (const id of ['f_together', 'f_apart']) {
      expect(await stepRows(id)).toEqual(forkSteps);
      expect(await planRow(id)).toEqual(forkPlan);
    }
    // the inherited step is not copied; the parent is untouched
    expect(await stepRows('p_parent')).toHaveLength(4);
    expect((await planRow('p_parent')).status).toBe('failed');
    // the handoff names the step before it was the fork's own row: the key, no row id
    const [h] = await ds.query(`SELECT step_id, step_key FROM plan_handoffs WHERE plan_id = 'f_apart'`);
    expect([h.step_id, h.step_key]).toEqual([null, 'c']);
  });

  it('a rebuild from the whole log gives the same rows, ancestors read again', async () => {
    // an event reusing an applied seq lands behind the watermark: the plan is rebuilt
    const outcome = await store.persist([
      ev('f_apart', 3, 'checkpoint.saved', { checkpointId: 'cpx', layer: 1, state: {} }),
    ]);
    expect(outcome.rebuilt).toBe(1);
    expect(await stepRows('f_apart')).toEqual(forkSteps);
    expect(await planRow('f_apart')).toEqual(forkPlan);
  });

  it('a fork of a fork takes each step from the nearest ancestor that has it', async () => {
    const events = [
      ev('g_fork', 0, 'plan.created', {
        query: 'q3',
        steps: [],
        forkOf: { planId: 'f_apart', kind: 'replay', layer: 0 },
      }),
      ev('g_fork', 1, 'step.completed', { stepId: 'a', inputTokens: 1, outputTokens: 1 }),
      ev('g_fork', 2, 'step.completed', { stepId: 'd', inputTokens: 1, outputTokens: 1 }),
    ];
    for (const e of events) await store.persist([e]);
    const rows = await stepRows('g_fork');
    expect(rows.map((r) => [r.step_key, r.task, r.agent_id])).toEqual([
      ['a', 'task a', 'agent_a'], // from the grandparent: the fork has no row of it
      ['d', 'task d, fixed', 'agent_d'], // from the parent's own edit
    ]);
    expect(await planRow('g_fork')).toMatchObject({
      parent_plan_id: 'f_apart',
      fork_kind: 'replay',
      fork_layer: 0,
      total_steps: 2,
      completed_steps: 2,
    });
  });
});

describe('a fork whose added step takes an index of its parent', () => {
  it("is refused when the parent's step with that index becomes the fork's own (SQLite)", async () => {
    const { ds, close } = await createMigratedDb('sqlite');
    try {
      const store = new PlanEventStore(ds, undefined, { rowCacheBytes: 0 });
      await store.persist(parentEvents('p_clash'));
      await store.persist([
        ev('f_clash', 0, 'plan.created', {
          query: 'q',
          steps: [spec('x', 1)],
          forkOf: { planId: 'p_clash', kind: 'fork', layer: 1 },
        }),
      ]);
      const outcome = store.persist([
        ev('f_clash', 1, 'step.completed', { stepId: 'b', inputTokens: 1, outputTokens: 1 }),
      ]);
      await expect(outcome).rejects.toThrow(/UNIQUE|unique/);
    } finally {
      await close();
    }
  });
});
