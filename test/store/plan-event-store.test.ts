import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { parsePlanEvent, PlanEvent } from '../../src/contracts';
import { EventConflictError, EventIdConflictError, PlanEventStore } from '../../src/store/plan-event-store';
import { ALL_TEST_DBS, createMigratedDb } from '../support/databases';

function ev(planId: string, seq: number, type: string, payload: object, sessionId = 'sess_1'): PlanEvent {
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

function samplePlan(planId: string): PlanEvent[] {
  return [
    ev(planId, 1, 'plan.created', {
      query: 'Build a TODO app',
      requiresApproval: true,
      steps: [
        { stepId: 'a', index: 0, agentId: 'architect', task: 'design' },
        { stepId: 'b', index: 1, agentId: 'coder', task: 'code', dependsOn: ['a'] },
      ],
    }),
    ev(planId, 2, 'plan.decision', { decision: 'approve', decidedBy: 'alice' }),
    ev(planId, 3, 'step.started', { stepId: 'a' }),
    ev(planId, 4, 'step.completed', {
      stepId: 'a',
      result: 'ok',
      outputContent: '# Design',
      inputTokens: 10,
      outputTokens: 20,
      model: 'm1',
    }),
    ev(planId, 5, 'handoff.recorded', {
      handoffId: 'h1',
      stepId: 'b',
      fromAgentId: 'architect',
      toAgentId: 'coder',
      reason: 'delegation',
    }),
    ev(planId, 6, 'checkpoint.saved', {
      checkpointId: 'c1',
      layer: 0,
      state: { done: ['a'], note: 'é "q" \\ \n\t 😀 {x,y} NULL' },
    }),
    ev(planId, 7, 'step.started', { stepId: 'b' }),
    ev(planId, 8, 'step.failed', { stepId: 'b', error: 'boom', inputTokens: 5, outputTokens: 1 }),
    ev(planId, 9, 'plan.finalized', { status: 'failed', failureReason: 'step b failed' }),
  ];
}

describe.each(ALL_TEST_DBS)('PlanEventStore on %s', (kind) => {
  let ds: DataSource;
  let close: () => Promise<void>;
  let store: PlanEventStore;

  beforeAll(async () => {
    ({ ds, close } = await createMigratedDb(kind));
    store = new PlanEventStore(ds);
  });
  afterAll(async () => close?.());

  it('stores a plan with its steps, tokens, handoffs, decisions, DAG and checkpoints', async () => {
    const events = samplePlan('plan_smoke');
    const outcome = await store.persist(events);
    expect(outcome).toMatchObject({ inserted: 9, duplicates: 0, plans: 1 });
    const [plan] = await ds.query(`SELECT * FROM execution_plans WHERE id = 'plan_smoke'`);
    expect(plan).toMatchObject({
      status: 'failed',
      failure_reason: 'step b failed',
      total_steps: 2,
      completed_steps: 1,
      failed_steps: 1,
    });
    expect(Number(plan.total_input_tokens)).toBe(15);
    expect(Number(plan.total_output_tokens)).toBe(21);
    // the output is stored once: the step row names the event whose payload holds it
    const steps: Array<{ step_key: string; status: string; output_content: null; payload: string | null }> =
      await ds.query(
        `SELECT s.step_key, s.status, s.output_content, e.payload FROM plan_steps s LEFT JOIN plan_events e ON e.event_id = s.output_event_id WHERE s.plan_id = 'plan_smoke' ORDER BY s.step_index`,
      );
    expect(
      steps.map((s) => ({ ...s, payload: s.payload === null ? null : JSON.parse(s.payload).outputContent })),
    ).toEqual([
      { step_key: 'a', status: 'completed', output_content: null, payload: '# Design' },
      { step_key: 'b', status: 'failed', output_content: null, payload: null },
    ]);
    expect(
      await ds.query(`SELECT COUNT(*) AS n FROM plan_handoffs WHERE plan_id = 'plan_smoke' AND step_id IS NOT NULL`),
    ).toEqual([{ n: expect.anything() }]);
    expect(
      (await ds.query(`SELECT decision FROM plan_decisions WHERE plan_id = 'plan_smoke'`)).map(
        (r: { decision: string }) => r.decision,
      ),
    ).toEqual(['approve']);
    const [dag] = await ds.query(`SELECT dag FROM workflow_dags WHERE workflow_id = 'plan_smoke'`);
    expect(JSON.parse(dag.dag).layers).toEqual([['a'], ['b']]);
    expect(await ds.query(`SELECT layer FROM workflow_checkpoints WHERE workflow_id = 'plan_smoke'`)).toEqual([
      { layer: 0 },
    ]);
    // the event log keeps each payload as exactly its JSON text
    const stored: { event_id: string; payload: string }[] = await ds.query(
      `SELECT event_id, payload FROM plan_events WHERE plan_id = 'plan_smoke'`,
    );
    expect(Object.fromEntries(stored.map((r) => [r.event_id.toLowerCase(), r.payload]))).toEqual(
      Object.fromEntries(events.map((e) => [e.eventId, JSON.stringify(e.payload)])),
    );
  });

  it('treats a redelivered batch as a no-op and reports the duplicates', async () => {
    const events = samplePlan('plan_dup');
    await store.persist(events);
    const again = await store.persist(events);
    expect(again).toMatchObject({ inserted: 0, duplicates: 9, plans: 0 });
    expect(again.duplicateIds.sort()).toEqual(events.map((e) => e.eventId).sort());
    const [{ n }] = await ds.query(`SELECT COUNT(*) AS n FROM plan_events WHERE plan_id = 'plan_dup'`);
    expect(Number(n)).toBe(9);
    expect(await store.storedEventIds([events[0].eventId, randomUUID()])).toEqual(new Set([events[0].eventId]));
  });

  it('keeps step events that arrive before plan.created and applies them once it does', async () => {
    const [created, ...rest] = samplePlan('plan_late');
    await store.persist(rest.reverse());
    expect(await ds.query(`SELECT id FROM execution_plans WHERE id = 'plan_late'`)).toEqual([]);
    await store.persist([created]);
    const [plan] = await ds.query(`SELECT status, completed_steps FROM execution_plans WHERE id = 'plan_late'`);
    expect(plan).toEqual({ status: 'failed', completed_steps: 1 });
  });

  it('refuses, rather than drops, an event id already stored under another plan', async () => {
    const [first] = samplePlan('plan_owner');
    await store.persist([first]);
    const reused = { ...ev('plan_other', 1, 'step.started', { stepId: 'a' }), eventId: first.eventId } as PlanEvent;
    // a plan seen for the first time: its ids are not looked up; the primary key refuses, and the stored event is named
    const named = `event ${first.eventId} of plan plan_other: its id is already stored for an event of plan plan_owner (plan.created seq 1 of plan plan_owner); event ids must be unique`;
    await expect(store.persist([reused])).rejects.toThrow(named);
    expect(await ds.query(`SELECT plan_id FROM plan_events WHERE plan_id = 'plan_other'`)).toEqual([]);
    expect(await ds.query(`SELECT plan_id FROM plan_heads WHERE plan_id = 'plan_other'`)).toEqual([]);
    // a known plan: the lookup finds the id under another plan and says so
    const [otherFirst] = samplePlan('plan_other');
    await store.persist([otherFirst]);
    const conflict = store.persist([reused]);
    await expect(conflict).rejects.toThrow(EventIdConflictError);
    await expect(conflict).rejects.toThrow(named);
    expect(await ds.query(`SELECT event_id FROM plan_events WHERE plan_id = 'plan_other'`)).toHaveLength(1);
  });

  it('refuses the same id with other content, in the store or in one batch; an exact redelivery is a no-op', async () => {
    const events = samplePlan('plan_twin');
    await store.persist(events);
    const done = events[3] as Extract<PlanEvent, { type: 'step.completed' }>;
    expect(await store.persist([{ ...done }])).toMatchObject({ inserted: 0, duplicates: 1 });
    const changed = { ...done, payload: { ...done.payload, outputTokens: 999 } } as PlanEvent;
    const stored = `event ${done.eventId} (step.completed seq 4 of plan plan_twin) differs from the event stored under the same id (step.completed seq 4 of plan plan_twin)`;
    await expect(store.persist([changed])).rejects.toThrow(EventConflictError);
    await expect(store.persist([changed])).rejects.toThrow(stored);
    // in one batch: the first copy is not silently replaced by the later one
    const [created, ...rest] = samplePlan('plan_twin2');
    const twin = { ...rest[2], payload: { ...(rest[2].payload as object), result: 'other' } } as PlanEvent;
    await expect(store.persist([created, ...rest, twin])).rejects.toThrow(EventConflictError);
    expect(await ds.query(`SELECT event_id FROM plan_events WHERE plan_id = 'plan_twin2'`)).toEqual([]);
    const [row] = await ds.query(`SELECT payload FROM plan_events WHERE event_id = '${done.eventId}'`);
    expect(typeof row.payload === 'string' ? JSON.parse(row.payload) : row.payload).toMatchObject({ outputTokens: 20 });
  });

  it('survives concurrent writers on the same plan', async () => {
    const events = samplePlan('plan_conc');
    await Promise.all(events.map((e) => store.persist([e])));
    const [plan] = await ds.query(
      `SELECT status, completed_steps, failed_steps FROM execution_plans WHERE id = 'plan_conc'`,
    );
    expect(plan).toEqual({ status: 'failed', completed_steps: 1, failed_steps: 1 });
  });
});
