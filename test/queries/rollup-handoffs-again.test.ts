import { handoffPatterns, handoffPatternsScan } from '../../src/queries/analytics.query';
import { PlanEventStore } from '../../src/store/plan-event-store';
import { ALL_TEST_DBS, createMigratedDb } from '../support/databases';
import { parsedEvent } from '../support/parsed-event';

/**
 * The `handoff` rollups of a stored plan whose handoff is recorded again in a later transaction,
 * with other agents and another reason (the stored row is replaced by its id), equal the scan of
 * `plan_handoffs`: the old row's counts go, the new row's come, the plan's other handoffs stay.
 */
describe.each(ALL_TEST_DBS)('handoff rollups when a handoff is recorded again (%s)', (kind) => {
  let db: Awaited<ReturnType<typeof createMigratedDb>>;
  beforeAll(async () => {
    db = await createMigratedDb(kind);
  });
  afterAll(async () => {
    await db?.close();
  });

  it('keeps the handoff rollups equal to the scan, batch after batch', async () => {
    const store = new PlanEventStore(db.ds);
    const planId = 'plan-handoff-again';
    const at = Date.UTC(2026, 5, 1, 12);
    let seq = 0;
    const ev = (type: string, payload: object) =>
      parsedEvent({ planId, sessionId: 'sess-h', seq: seq++, type, payload, occurredAt: new Date(at + seq * 1000) });
    const steps = ['s1', 's2'].map((stepId, index) => ({ stepId, index, agentId: `agent-${stepId}`, task: stepId }));
    const handoff = (handoffId: string, stepId: string, fromAgentId: string, toAgentId: string, reason: string) =>
      ev('handoff.recorded', { handoffId, stepId, fromAgentId, toAgentId, reason });
    const batches = [
      [ev('plan.created', { query: 'q', steps }), handoff('h1', 's1', 'planner', 'agent-s1', 'delegation')],
      [handoff('h2', 's2', 'planner', 'agent-s2', 'delegation'), ev('step.started', { stepId: 's1' })],
      // h1 again: other agents, another reason; and h2 again as it was
      [
        handoff('h1', 's1', 'agent-s2', 'agent-s1', 'escalation'),
        handoff('h2', 's2', 'planner', 'agent-s2', 'delegation'),
      ],
      [handoff('h1', 's1', 'planner', 'agent-s2', 'delegation')],
    ];
    for (const batch of batches) {
      await store.persist(batch);
      expect(await handoffPatterns(db.ds)).toEqual(await handoffPatternsScan(db.ds));
    }
    // a second store (no row cache of the plan): the plan's rows are read back
    await new PlanEventStore(db.ds).persist([handoff('h2', 's2', 'agent-s1', 'agent-s2', 'review')]);
    const patterns = await handoffPatterns(db.ds);
    expect(patterns).toEqual(await handoffPatternsScan(db.ds));
    expect(patterns.length).toBeGreaterThan(0);
  });
});
