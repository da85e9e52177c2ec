import * as fc from 'fast-check';
import { DataSource } from 'typeorm';
import { PlanEvent } from '../../src/contracts';
import { PlanEventStore } from '../../src/store/plan-event-store';
import { canonicalOrder } from '../../src/store/projection/event-order';
import { refusedSeqOf, voidedSeqEvent } from '../../src/store/projection/voided-seq';
import { ALL_TEST_DBS, createMigratedDb } from '../support/databases';
import { arrivalArb, planLifeArb, schedule, seqLayoutArb, toEvents } from './plan-events.arbitrary';

const RUNS = Math.ceil(Number(process.env.PROPERTY_RUNS ?? 200) / 4);
const AT = new Date(Date.UTC(2026, 6, 1));

/** The voided seq the worker records for a refused event. */
const voidOf = (e: { eventId: string }, kind = 'invalid') =>
  voidedSeqEvent(refusedSeqOf(e)!, kind, `dl-${e.eventId}`, AT);

async function rowsOf(ds: DataSource, planId: string) {
  const q = (sql: string) => ds.query(sql.replace(/:plan/g, `'${planId}'`));
  const [head] = await q(
    `SELECT applied_seq, pending_events, last_seq, event_count, CASE WHEN gap_since IS NULL THEN 0 ELSE 1 END AS waiting FROM plan_heads WHERE plan_id = :plan`,
  );
  return {
    head: head && {
      applied: head.applied_seq === null ? null : Number(head.applied_seq),
      pending: Number(head.pending_events),
      waiting: Number(head.waiting),
      events: Number(head.event_count),
      lastSeq: Number(head.last_seq),
    },
    plan: await q(
      `SELECT status, total_steps, completed_steps, failed_steps, skipped_steps, total_input_tokens, total_output_tokens, approval_status, updated_at FROM execution_plans WHERE id = :plan`,
    ),
    steps: await q(
      `SELECT step_key, status, agent_id, task, input_tokens, output_tokens FROM plan_steps WHERE plan_id = :plan ORDER BY step_index`,
    ),
    handoffs: await q(`SELECT handoff_key, step_key FROM plan_handoffs WHERE plan_id = :plan ORDER BY handoff_key`),
    checkpoints: await q(
      `SELECT checkpoint_key, layer FROM workflow_checkpoints WHERE workflow_id = :plan ORDER BY checkpoint_key`,
    ),
  };
}

async function erase(ds: DataSource, planId: string): Promise<void> {
  for (const [table, col] of [
    ['plan_handoffs', 'plan_id'],
    ['plan_decisions', 'plan_id'],
    ['workflow_checkpoints', 'workflow_id'],
    ['workflow_dags', 'workflow_id'],
    ['plan_steps', 'plan_id'],
    ['execution_plans', 'id'],
    ['plan_events', 'plan_id'],
    ['plan_heads', 'plan_id'],
  ]) {
    await ds.query(`DELETE FROM ${table} WHERE ${col} = '${planId}'`);
  }
}

/** A plan's events, some of them refused (never the plan.created that defines it), and how the rest arrive. */
const caseArb = planLifeArb.chain((drafts) =>
  fc.tuple(
    fc.constant(drafts),
    seqLayoutArb,
    arrivalArb(drafts.length),
    fc.array(fc.nat(40), { minLength: 1, maxLength: 4 }),
    fc.boolean(),
  ),
);

describe.each(ALL_TEST_DBS)('voided seqs on %s', (kind) => {
  let ds: DataSource;
  let close: () => Promise<void>;
  let store: PlanEventStore;
  let run = 0;

  beforeAll(async () => {
    ({ ds, close } = await createMigratedDb(kind));
    store = new PlanEventStore(ds);
  });
  afterAll(async () => close?.());

  it(`refused events never hold a plan back: their voided seqs, arriving in any order (early or last), apply everything after them, as the fold of the others (${RUNS} runs)`, async () => {
    await fc.assert(
      fc.asyncProperty(caseArb, async ([drafts, layout, arrival, refusedAt, voidsLast]) => {
        const planId = `vplan_${kind}_${run++}`;
        const events = toEvents(drafts, planId, `vsess_${planId}`, layout);
        const refused = new Set<PlanEvent>(
          refusedAt.map((i) => events[i % events.length]).filter((e) => e.type !== 'plan.created'),
        );
        const voids = [...refused].map((e) => voidOf(e));
        const kept = events.filter((e) => !refused.has(e));

        // reference: the events that were not refused, alone, in canonical order, every gap skipped
        await store.persist([...kept].sort(canonicalOrder));
        await store.applyOverdueGaps(new Date(Date.now() + 60_000), 10_000);
        const expected = await rowsOf(ds, planId);
        await erase(ds, planId);

        const arriving = voidsLast ? kept : [...kept, ...voids];
        let rebuilt = 0;
        for (const batch of schedule(arriving, {
          ...arrival,
          order: arrival.order.filter((i) => i < arriving.length),
          duplicates: arrival.duplicates.filter((d) => d.index < arriving.length),
        }))
          rebuilt += (await store.persist(batch)).rebuilt;
        if (voidsLast) rebuilt += (await store.persist(voids)).rebuilt;
        const got = await rowsOf(ds, planId);
        const maxSeq = Math.max(...events.map((e) => e.seq));
        // nothing waits: every seq up to the last is applied, the refused ones as voided
        expect(got.head).toMatchObject({
          applied: maxSeq,
          pending: 0,
          waiting: 0,
          lastSeq: maxSeq,
          events: kept.length + voids.length,
        });
        expect({ ...got, head: null }).toEqual({ ...expected, head: null });
        if (layout.repeats.length === 0 && layout.createdSwap === null) expect(rebuilt).toBe(0);
        // the rows are the whole-log fold, and recording a refusal again changes nothing
        await store.rebuildPlans([planId]);
        expect(await rowsOf(ds, planId)).toEqual(got);
        const again = await store.persist(
          [...voids].map((v) => ({ ...v, occurredAt: new Date(AT.getTime() + 1000).toISOString() })),
        );
        expect(again.inserted).toBe(0);
        expect(await rowsOf(ds, planId)).toEqual(got);
        await erase(ds, planId);
      }),
      { numRuns: RUNS },
    );
  }, 600_000);

  it('a voided seq far past the last event (a refused event with a wild seq) is dropped by the gap sweep, not applied past: later events apply without a rebuild', async () => {
    const planId = `vwild_${kind}`;
    const drafts = [
      { type: 'plan.created', payload: { query: 'q', steps: [{ stepId: 's0', index: 0, agentId: 'a', task: 't' }] } },
      { type: 'step.started', payload: { stepId: 's0' } },
      { type: 'step.completed', payload: { stepId: 's0', inputTokens: 1, outputTokens: 2 } },
    ];
    const [created, started, completed] = toEvents(drafts, planId, `vsess_${planId}`); // seq 1, 2, 3
    await store.persist([created, started]);
    const wild = { ...started, eventId: '3f7c2a10-9b1e-4c55-8d0a-2b9e6f1c7d42', seq: 9_999 };
    await store.persist([voidOf(wild)]);
    expect((await rowsOf(ds, planId)).head).toEqual({ applied: 2, pending: 1, waiting: 1, events: 3, lastSeq: 9_999 });
    const sweep = await store.applyOverdueGaps(new Date(Date.now() + 60_000), 10);
    expect(sweep.plans).toBe(1);
    expect((await rowsOf(ds, planId)).head).toEqual({ applied: 2, pending: 0, waiting: 0, events: 2, lastSeq: 2 });
    const next = await store.persist([completed]);
    expect(next).toMatchObject({ inserted: 1, rebuilt: 0, applied: 1 });
    const got = await rowsOf(ds, planId);
    expect(got.head).toEqual({ applied: 3, pending: 0, waiting: 0, events: 3, lastSeq: 3 });
    expect(got.steps).toEqual([expect.objectContaining({ step_key: 's0', status: 'completed' })]);
    await erase(ds, planId);
  });

  it('a voided seq at or below the watermark (a refused copy of a stored seq) is recorded without a rebuild', async () => {
    const planId = `vlate_${kind}`;
    const events = toEvents(
      [
        { type: 'plan.created', payload: { query: 'q', steps: [{ stepId: 's0', index: 0, agentId: 'a', task: 't' }] } },
        { type: 'step.started', payload: { stepId: 's0' } },
      ],
      planId,
      `vsess_${planId}`,
    );
    await store.persist(events);
    const copy = { ...events[1], eventId: '0b7f2c56-1c2e-4a7e-9a53-7d2e7c3f0a11' };
    const outcome = await store.persist([voidOf(copy, 'conflict')]);
    expect(outcome).toMatchObject({ inserted: 0, voided: 1, rebuilt: 0 });
    const got = await rowsOf(ds, planId);
    expect(got.head).toEqual({ applied: 2, pending: 0, waiting: 0, events: 3, lastSeq: 2 });
    const [row] = await ds.query(
      `SELECT COUNT(*) AS n FROM plan_events WHERE plan_id = '${planId}' AND type = 'seq.voided'`,
    );
    expect(Number(row.n)).toBe(1);
    await erase(ds, planId);
  });
});
