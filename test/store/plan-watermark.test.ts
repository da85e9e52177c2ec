import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { parsePlanEvent, PlanEvent } from '../../src/contracts';
import { PlanEventStore } from '../../src/store/plan-event-store';
import { canonicalOrder } from '../../src/store/projection/event-order';
import { ALL_TEST_DBS, createMigratedDb } from '../support/databases';

/** A contract-valid event of `planId` at `seq` (occurredAt follows seq unless given). */
function ev(
  planId: string,
  seq: number,
  type: string,
  payload: object,
  eventId = randomUUID(),
  sessionId = `s_${planId}`,
  at = new Date(Date.UTC(2026, 0, 1, 10, 0, seq)),
): PlanEvent {
  const parsed = parsePlanEvent({
    specVersion: 1,
    eventId,
    type,
    planId,
    sessionId,
    seq,
    occurredAt: at.toISOString(),
    payload,
  });
  if (!parsed.ok) throw parsed.error;
  return parsed.event;
}

/** plan.created with `steps` steps, then started/completed per step: seq 0 .. 2*steps. */
function plan(planId: string, steps: number): PlanEvent[] {
  const specs = Array.from({ length: steps }, (_, i) => ({
    stepId: `s${i}`,
    index: i,
    agentId: `agent${i % 3}`,
    task: `task ${i}`,
  }));
  const events = [ev(planId, 0, 'plan.created', { query: `goal of ${planId}`, steps: specs })];
  for (let i = 0; i < steps; i++) {
    events.push(ev(planId, 1 + 2 * i, 'step.started', { stepId: `s${i}` }));
    events.push(
      ev(planId, 2 + 2 * i, 'step.completed', {
        stepId: `s${i}`,
        result: 'ok',
        inputTokens: 10,
        outputTokens: i,
        model: 'm',
      }),
    );
  }
  return events;
}

describe.each(ALL_TEST_DBS)('the store watermark on %s', (kind) => {
  let ds: DataSource;
  let close: () => Promise<void>;
  let store: PlanEventStore;
  let other: DataSource;
  let closeOther: () => Promise<void>;
  let reference: PlanEventStore;

  beforeAll(async () => {
    ({ ds, close } = await createMigratedDb(kind));
    store = new PlanEventStore(ds);
    ({ ds: other, close: closeOther } = await createMigratedDb(kind));
    reference = new PlanEventStore(other);
  });
  afterAll(async () => {
    await close?.();
    await closeOther?.();
  });

  const head = async (planId: string) => {
    const [h] = await ds.query(
      `SELECT applied_seq, pending_events, gap_since, event_count, last_seq FROM plan_heads WHERE plan_id = '${planId}'`,
    );
    return {
      applied: h.applied_seq === null ? null : Number(h.applied_seq),
      pending: Number(h.pending_events),
      waiting: h.gap_since !== null,
      events: Number(h.event_count),
      lastSeq: Number(h.last_seq),
    };
  };
  const steps = async (source: DataSource, planId: string) =>
    (
      await source.query(
        `SELECT step_key, status, output_tokens FROM plan_steps WHERE plan_id = '${planId}' ORDER BY step_index`,
      )
    ).map((r: Record<string, unknown>) => ({ ...r, output_tokens: Number(r.output_tokens) }));
  const planRow = async (source: DataSource, planId: string) => {
    const [p] = await source.query(
      `SELECT status, completed_steps, total_output_tokens, updated_at FROM execution_plans WHERE id = '${planId}'`,
    );
    return (
      p && {
        status: p.status,
        completed: Number(p.completed_steps),
        tokens: Number(p.total_output_tokens),
        updatedAt: new Date(p.updated_at.replace?.(' ', 'T') ?? p.updated_at).getTime(),
      }
    );
  };

  it('applies up to the first missing seq, keeps the rest waiting, and applies it all when the gap fills', async () => {
    const events = plan('wm_gap', 3); // seq 0..6
    const missing = events[3]; // seq 3: s1 completed
    const first = await store.persist(events.filter((e) => e !== missing));
    expect(first).toMatchObject({ inserted: 6, applied: 3, rebuilt: 0, gapWaits: 1 });
    expect(await head('wm_gap')).toEqual({ applied: 2, pending: 3, waiting: true, events: 6, lastSeq: 6 });
    expect(await planRow(ds, 'wm_gap')).toMatchObject({ completed: 1, tokens: 0 });
    expect(await store.waitingPlans()).toBeGreaterThanOrEqual(1);

    const filled = await store.persist([missing]);
    expect(filled).toMatchObject({ inserted: 1, applied: 4, rebuilt: 0, gapWaits: 0 });
    expect(await head('wm_gap')).toEqual({ applied: 6, pending: 0, waiting: false, events: 7, lastSeq: 6 });
    await reference.persist(events);
    expect(await steps(ds, 'wm_gap')).toEqual(await steps(other, 'wm_gap'));
    expect(await planRow(ds, 'wm_gap')).toEqual(await planRow(other, 'wm_gap'));
  });

  it('skips a gap that waited too long, then rebuilds the plan when the missing event comes after all', async () => {
    const events = plan('wm_skip', 3);
    const missing = events[2]; // seq 2: s0 completed
    await store.persist(events.filter((e) => e !== missing));
    // not overdue yet: nothing moves
    expect(await store.applyOverdueGaps(new Date(Date.now() - 60_000))).toEqual({ plans: 0, events: 0 });
    expect(await store.applyOverdueGaps(new Date(Date.now() + 1_000))).toEqual({ plans: 1, events: 4 });
    expect(await head('wm_skip')).toEqual({ applied: 6, pending: 0, waiting: false, events: 6, lastSeq: 6 });
    expect((await steps(ds, 'wm_skip')).map((s: { status: string }) => s.status)).toEqual([
      'in_progress',
      'completed',
      'completed',
    ]);

    const late = await store.persist([missing]);
    expect(late).toMatchObject({ inserted: 1, rebuilt: 1 });
    await reference.persist(events);
    expect(await steps(ds, 'wm_skip')).toEqual(await steps(other, 'wm_skip'));
    expect(await planRow(ds, 'wm_skip')).toEqual(await planRow(other, 'wm_skip'));
  });

  it('orders two different events with one seq by event id, whatever order they arrive in', async () => {
    // an executor that restarted its seq: a second step.completed of s0 reuses seq 2
    for (const [i, planId] of ['wm_tie_a', 'wm_tie_b'].entries()) {
      const events = plan(planId, 2);
      const ids = [randomUUID(), randomUUID()].sort();
      const low = ev(planId, 2, 'step.completed', { stepId: 's0', inputTokens: 1, outputTokens: 111 }, ids[0]);
      const high = ev(planId, 2, 'step.completed', { stepId: 's0', inputTokens: 1, outputTokens: 222 }, ids[1]);
      const base = events.filter((e) => e.seq !== 2);
      // plan a: the lower id first, plan b: the higher first; either way the second lands behind the watermark
      const [early, later] = i === 0 ? [low, high] : [high, low];
      await store.persist([...base, early]);
      const outcome = await store.persist([later]);
      expect(outcome.rebuilt).toBe(1);
      // the higher id applies last: its tokens win
      expect((await steps(ds, planId))[0]).toEqual({ step_key: 's0', status: 'completed', output_tokens: 222 });
      expect(await head(planId)).toMatchObject({ applied: 4, pending: 0, events: 6 });
    }
  });

  it('applies events with a seq before plan.created after it, as the whole-log fold does', async () => {
    const created = ev('wm_before', 5, 'plan.created', {
      query: 'q',
      steps: [{ stepId: 'a', index: 0, agentId: 'x', task: 't' }],
    });
    const early = [
      ev('wm_before', 3, 'step.started', { stepId: 'a' }),
      ev('wm_before', 4, 'step.completed', { stepId: 'a', inputTokens: 2, outputTokens: 3 }),
    ];
    expect(await store.persist(early)).toMatchObject({ applied: 0, plans: 0 });
    expect(await head('wm_before')).toMatchObject({ applied: null, pending: 2, waiting: false });
    expect(await store.persist([created, ev('wm_before', 6, 'plan.finalized', { status: 'completed' })])).toMatchObject(
      { applied: 4, rebuilt: 0 },
    );
    expect(await planRow(ds, 'wm_before')).toMatchObject({ status: 'completed', completed: 1, tokens: 3 });
    // an event below the start arrives later: a rebuild puts it in its place
    expect(await store.persist([ev('wm_before', 1, 'step.started', { stepId: 'a' })])).toMatchObject({ rebuilt: 1 });
    expect(await head('wm_before')).toMatchObject({ applied: 6, pending: 0, events: 5 });
  });

  it('stores a long plan in batches at a cost that does not read its log, with the rows of the whole-log fold', async () => {
    const events = plan('wm_long', 500); // 1,001 events, the contract's most steps
    let applied = 0;
    for (let i = 0; i < events.length; i += 50) {
      const outcome = await store.persist(events.slice(i, i + 50));
      expect(outcome.rebuilt).toBe(0);
      applied += outcome.applied;
    }
    expect(applied).toBe(events.length);
    const incremental = { steps: await steps(ds, 'wm_long'), plan: await planRow(ds, 'wm_long') };
    expect(incremental.plan).toMatchObject({ status: 'executing', completed: 500, tokens: (499 * 500) / 2 });
    expect(await store.rebuildPlans(['wm_long'])).toBe(1);
    expect({ steps: await steps(ds, 'wm_long'), plan: await planRow(ds, 'wm_long') }).toEqual(incremental);
  });

  // PostgreSQL's xmin changes with every write of a row; the other databases have no such marker
  (kind === 'postgres' ? it : it.skip)('writes a checkpoint once, not again for every later event', async () => {
    const events = plan('wm_cp', 3);
    const cp = ev('wm_cp', 7, 'checkpoint.saved', { checkpointId: 'c0', layer: 0, state: { big: 'x'.repeat(10_000) } });
    await store.persist([...events, cp]);
    const before = await ds.query(`SELECT xmin::text AS v FROM workflow_checkpoints WHERE workflow_id = 'wm_cp'`);
    for (let seq = 8; seq < 12; seq++)
      await store.persist([
        ev('wm_cp', seq, 'handoff.recorded', { handoffId: `h${seq}`, fromAgentId: 'a', toAgentId: 'b', reason: 'r' }),
      ]);
    expect(await ds.query(`SELECT xmin::text AS v FROM workflow_checkpoints WHERE workflow_id = 'wm_cp'`)).toEqual(
      before,
    );
  });

  it("keeps a session's first plan creation and last plan-level event whatever order its plans' events commit in", async () => {
    const at = (minute: number) => new Date(Date.UTC(2026, 2, 1, 12, minute));
    const created = (planId: string, minute: number) =>
      ev(
        planId,
        0,
        'plan.created',
        { query: 'q', steps: [{ stepId: 'a', index: 0, agentId: 'x', task: 't' }] },
        randomUUID(),
        'wm_shared',
        at(minute),
      );
    // plan B's end commits first, then plan A's (earlier) creation and decision; step events do not count
    await store.persist([
      created('wm_sb', 10),
      ev('wm_sb', 1, 'plan.finalized', { status: 'completed' }, randomUUID(), 'wm_shared', at(50)),
    ]);
    await store.persist([
      created('wm_sa', 5),
      ev('wm_sa', 1, 'plan.decision', { decision: 'approve' }, randomUUID(), 'wm_shared', at(20)),
    ]);
    await store.persist([ev('wm_sa', 2, 'step.started', { stepId: 'a' }, randomUUID(), 'wm_shared', at(55))]);
    const [session] = await ds.query(`SELECT created_at, updated_at FROM sessions WHERE id = 'wm_shared'`);
    const iso = (v: unknown) => new Date(v instanceof Date ? v : `${String(v).replace(' ', 'T')}Z`).toISOString();
    expect([iso(session.created_at), iso(session.updated_at)]).toEqual([at(5).toISOString(), at(50).toISOString()]);
  });

  it("applies an approval's decision behind the watermark (it carries its request's seq) without a rebuild", async () => {
    const events = plan('wm_appr', 3); // seq 0..6
    const digest = 'a'.repeat(64);
    const expiresAt = new Date(Date.UTC(2026, 0, 2)).toISOString();
    const request = ev('wm_appr', 7, 'approval.requested', {
      approvalId: 'wm_appr_1',
      stepId: 's2',
      tool: 'send_mail',
      argsDigest: digest,
      expiresAt,
    });
    const later = new Date(Date.UTC(2026, 0, 1, 11));
    const decided = ev(
      'wm_appr',
      7,
      'approval.decided',
      { approvalId: 'wm_appr_1', decision: 'approve', decidedBy: 'alice' },
      randomUUID(),
      undefined,
      later,
    );
    const next = ev('wm_appr', 8, 'step.started', { stepId: 's2' }, randomUUID(), undefined, later);
    await store.persist([...events, request]);
    // alone, then with the plan's next seq: both apply to the rows as they are
    expect(await store.persist([decided])).toMatchObject({ inserted: 1, applied: 1, rebuilt: 0 });
    expect(await head('wm_appr')).toEqual({ applied: 7, pending: 0, waiting: false, events: 9, lastSeq: 7 });
    expect((await planRow(ds, 'wm_appr')).updatedAt).toBe(later.getTime());
    const [approval] = await ds.query(`SELECT decision FROM approvals WHERE approval_id = 'wm_appr_1'`);
    expect(approval.decision).toBe('approve');
    const second = ev('wm_appr', 7, 'approval.decided', {
      approvalId: 'wm_appr_1',
      decision: 'reject',
      decidedBy: 'b',
    });
    expect(await store.persist([second, next])).toMatchObject({ inserted: 2, applied: 2, rebuilt: 0 });
    expect(await head('wm_appr')).toEqual({ applied: 8, pending: 0, waiting: false, events: 11, lastSeq: 8 });
    await reference.persist([...events, request, decided, second, next]);
    expect(await steps(ds, 'wm_appr')).toEqual(await steps(other, 'wm_appr'));
    expect(await planRow(ds, 'wm_appr')).toEqual(await planRow(other, 'wm_appr'));
    expect(await store.rebuildPlans(['wm_appr'])).toBe(1);
    expect(await planRow(ds, 'wm_appr')).toEqual(await planRow(other, 'wm_appr'));
  });

  it('refuses nothing twice: a redelivered batch of a waiting plan changes nothing', async () => {
    const events = plan('wm_dup', 2).sort(canonicalOrder);
    const withGap = events.filter((e) => e.seq !== 1);
    await store.persist(withGap);
    const before = await head('wm_dup');
    expect(await store.persist(withGap)).toMatchObject({
      inserted: 0,
      duplicates: withGap.length,
      applied: 0,
      plans: 0,
    });
    expect(await head('wm_dup')).toEqual(before);
  });
});
