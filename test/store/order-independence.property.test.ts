import * as fc from 'fast-check';
import { DataSource } from 'typeorm';
import { PlanEvent } from '../../src/contracts';
import { PlanEventStore } from '../../src/store/plan-event-store';
import { canonicalOrder } from '../../src/store/projection/event-order';
import { ALL_TEST_DBS, createMigratedDb } from '../support/databases';
import {
  arrivalArb,
  jobArrivalArb,
  jobSchedule,
  longPlanArb,
  planLifeArb,
  schedule,
  seqLayoutArb,
  toEvents,
} from './plan-events.arbitrary';

const RUNS = Number(process.env.PROPERTY_RUNS ?? 200);

/** Every table's rows for a plan, normalised so the three drivers' quirks do not matter. */
async function snapshot(ds: DataSource, planId: string): Promise<Record<string, unknown[]>> {
  const q = (sql: string) => ds.query(sql.replace(/:plan/g, `'${planId}'`));
  const norm = (rows: Array<Record<string, unknown>>) =>
    rows.map((r) =>
      Object.fromEntries(
        Object.entries(r).map(([k, v]) => [
          k,
          v instanceof Date
            ? v.toISOString()
            : typeof v === 'bigint' ||
                (typeof v === 'string' && /^(event_count|last_seq|applied_seq|pending_events|waiting)$/.test(k))
              ? Number(v)
              : v,
        ]),
      ),
    );
  return {
    plan: norm(await q(`SELECT * FROM execution_plans WHERE id = :plan`)),
    steps: norm(await q(`SELECT * FROM plan_steps WHERE plan_id = :plan ORDER BY step_index`)),
    handoffs: norm(await q(`SELECT * FROM plan_handoffs WHERE plan_id = :plan ORDER BY id`)),
    decisions: norm(await q(`SELECT * FROM plan_decisions WHERE plan_id = :plan ORDER BY id`)),
    dag: norm(await q(`SELECT * FROM workflow_dags WHERE workflow_id = :plan`)),
    checkpoints: norm(await q(`SELECT * FROM workflow_checkpoints WHERE workflow_id = :plan ORDER BY id`)),
    events: norm(
      await q(
        `SELECT event_id, seq, type, payload, occurred_at FROM plan_events WHERE plan_id = :plan ORDER BY seq, event_id`,
      ),
    ),
    // version and updated_at depend on the batching; the counters and the watermark must not
    head: norm(
      await q(
        `SELECT event_count, last_seq, applied_seq, pending_events, CASE WHEN gap_since IS NULL THEN 0 ELSE 1 END AS waiting, deleted_at FROM plan_heads WHERE plan_id = :plan`,
      ),
    ),
    session: norm(
      await q(`SELECT s.* FROM sessions s JOIN execution_plans p ON p.session_id = s.id WHERE p.id = :plan`),
    ),
    // plan_agents: exactly the agents of the plan's steps, byte for byte, with the plan's creation time
    agents: sortedText(
      await q(`SELECT a.agent_id AS agent, a.created_at AS at FROM plan_agents a WHERE a.plan_id = :plan`),
    ),
    stepAgents: sortedText(
      await q(
        `SELECT s.agent_id AS agent, p.created_at AS at FROM plan_steps s JOIN execution_plans p ON p.id = s.plan_id WHERE s.plan_id = :plan`,
      ),
    ),
  };
}

/**
 * `[agent]@instant` per row, sorted here: MariaDB and SQL Server order (and DISTINCT) `coder` and
 * `coder ` as one value, so the rows are made distinct here.
 */
function sortedText(rows: Array<{ agent: string; at: unknown }>): string[] {
  return [...new Set(rows.map((r) => `[${r.agent}]@${new Date(time(r.at)).toISOString()}`))].sort();
}

const num = (v: unknown) => Number(v);
const time = (v: unknown) =>
  new Date(String(v).includes('T') || v instanceof Date ? String(v) : `${String(v).replace(' ', 'T')}Z`).getTime();

/**
 * What the stored rows must satisfy whatever code wrote them: checked against the rows alone, not
 * against another run of the same projection code, so a wrong rule shared by every path shows too.
 */
function checkInvariants(snap: Record<string, Array<Record<string, unknown>>>): void {
  const [head] = snap.head;
  expect(snap.agents).toEqual(snap.stepAgents);
  const seqs = snap.events.map((e) => num(e.seq));
  expect(num(head.event_count)).toBe(seqs.length);
  expect(num(head.last_seq)).toBe(seqs.reduce((a, b) => Math.max(a, b), -1));
  const applied = head.applied_seq === null ? [] : snap.events.filter((e) => num(e.seq) <= num(head.applied_seq));
  expect(num(head.pending_events)).toBe(seqs.length - applied.length);
  const [plan] = snap.plan;
  if (!plan) return expect(head.applied_seq).toBeNull();
  const steps = snap.steps;
  const count = (status: string) => steps.filter((s) => s.status === status).length;
  expect([num(plan.total_steps), num(plan.completed_steps), num(plan.failed_steps), num(plan.skipped_steps)]).toEqual([
    steps.length,
    count('completed'),
    count('failed'),
    count('skipped'),
  ]);
  expect(num(plan.total_input_tokens)).toBe(steps.reduce((n, s) => n + num(s.input_tokens), 0));
  expect(num(plan.total_output_tokens)).toBe(steps.reduce((n, s) => n + num(s.output_tokens), 0));
  expect(time(plan.updated_at)).toBe(applied.reduce((t, e) => Math.max(t, time(e.occurred_at)), 0));
  const stepByKey = new Map(steps.map((s) => [s.step_key, s.id]));
  for (const h of snap.handoffs) expect(h.step_id ?? null).toBe(stepByKey.get(h.step_key) ?? null);
  expect(new Set(steps.map((s) => num(s.step_index))).size).toBe(steps.length);
}

async function erase(ds: DataSource, planId: string, sessionId: string): Promise<void> {
  for (const [table, col] of [
    ['plan_agents', 'plan_id'],
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
  await ds.query(`DELETE FROM sessions WHERE id = '${sessionId}'`);
}

/** A plan's life, how its seqs are laid out (collisions, plan.created not first), and how its events arrive. */
const caseArb = planLifeArb.chain((drafts) => fc.tuple(fc.constant(drafts), seqLayoutArb, arrivalArb(drafts.length)));

describe.each(ALL_TEST_DBS)('order independence and idempotency on %s', (kind) => {
  let ds: DataSource;
  let close: () => Promise<void>;
  let store: PlanEventStore;
  let run = 0;

  beforeAll(async () => {
    ({ ds, close } = await createMigratedDb(kind, { poolSize: 4 }));
    store = new PlanEventStore(ds);
  });
  afterAll(async () => close?.());

  /**
   * The rows of the plan's events stored in one batch in canonical order (the whole-log fold of
   * a new plan), then erased. One-by-one arrival is one of the orders the properties draw.
   */
  async function reference(events: PlanEvent[], planId: string, sessionId: string) {
    await store.persist([...events].sort(canonicalOrder));
    const expected = await snapshot(ds, planId);
    await erase(ds, planId, sessionId);
    return expected;
  }

  it(`any arrival order, with duplicates, seq collisions and any batching, stores what canonical order stores, and what the whole-log fold stores (${RUNS} runs)`, async () => {
    await fc.assert(
      fc.asyncProperty(caseArb, async ([drafts, layout, arrival]) => {
        const planId = `plan_${kind}_${run++}`;
        const sessionId = `sess_${planId}`;
        const events = toEvents(drafts, planId, sessionId, layout);
        const expected = await reference(events, planId, sessionId);

        let rebuilt = 0;
        for (const batch of schedule(events, arrival)) rebuilt += (await store.persist(batch)).rebuilt;
        const incremental = await snapshot(ds, planId);
        checkInvariants(incremental as never);
        expect(incremental).toEqual(expected);
        // without a seq used twice or below plan.created's, no event can land behind the watermark
        if (layout.repeats.length === 0 && layout.createdSwap === null) expect(rebuilt).toBe(0);
        expect(incremental.head[0]).toMatchObject({
          applied_seq: Math.max(...events.map((e) => e.seq)),
          pending_events: 0,
          waiting: 0,
        });

        // the incremental rows are the whole-log fold's
        await store.rebuildPlans([planId]);
        expect(await snapshot(ds, planId)).toEqual(incremental);

        // a full redelivery afterwards changes nothing
        const again = await store.persist(events);
        expect(again.inserted).toBe(0);
        expect(await snapshot(ds, planId)).toEqual(expected);
        await erase(ds, planId, sessionId);
      }),
      { numRuns: RUNS },
    );
  }, 600_000);

  it('after every batch, the rows are the whole-log fold of the events up to the watermark (50 runs)', async () => {
    await fc.assert(
      fc.asyncProperty(caseArb, async ([drafts, layout, arrival]) => {
        const planId = `wplan_${kind}_${run++}`;
        const sessionId = `wsess_${planId}`;
        for (const batch of schedule(toEvents(drafts, planId, sessionId, layout), arrival)) {
          await store.persist(batch);
          const now = await snapshot(ds, planId);
          checkInvariants(now as never);
          await store.rebuildPlans([planId]);
          expect(await snapshot(ds, planId)).toEqual(now);
        }
        await erase(ds, planId, sessionId);
      }),
      { numRuns: 50 },
    );
  }, 600_000);

  it(`events held back past a skipped gap, arriving after it, end as if none had been late (${Math.ceil(RUNS / 2)} runs)`, async () => {
    await fc.assert(
      fc.asyncProperty(
        caseArb,
        fc.array(fc.nat(40), { minLength: 1, maxLength: 3 }),
        async ([drafts, layout, arrival], held) => {
          const planId = `gplan_${kind}_${run++}`;
          const sessionId = `gsess_${planId}`;
          const events = toEvents(drafts, planId, sessionId, layout);
          const expected = await reference(events, planId, sessionId);

          const late = new Set(held.map((h) => events[h % events.length]));
          for (const batch of schedule(events, arrival)) await store.persist(batch.filter((e) => !late.has(e)));
          await store.applyOverdueGaps(new Date(Date.now() + 60_000), 10_000);
          await store.persist([...late]);
          expect(await snapshot(ds, planId)).toEqual(expected);
          await erase(ds, planId, sessionId);
        },
      ),
      { numRuns: Math.ceil(RUNS / 2) },
    );
  }, 600_000);

  it('a long plan whose jobs commit out of order and twice is stored as the whole-log fold, with no rebuild (15 runs)', async () => {
    await fc.assert(
      fc.asyncProperty(longPlanArb, jobArrivalArb, async (drafts, arrival) => {
        const planId = `lplan_${kind}_${run++}`;
        const sessionId = `lsess_${planId}`;
        const events = toEvents(drafts, planId, sessionId);
        const expected = await reference(events, planId, sessionId);
        let rebuilt = 0;
        for (const job of jobSchedule(events, arrival)) rebuilt += (await store.persist(job)).rebuilt;
        const incremental = await snapshot(ds, planId);
        checkInvariants(incremental as never);
        expect(incremental).toEqual(expected);
        expect(rebuilt).toBe(0);
        await store.rebuildPlans([planId]);
        expect(await snapshot(ds, planId)).toEqual(incremental);
        await erase(ds, planId, sessionId);
      }),
      { numRuns: 15 },
    );
  }, 600_000);

  it('concurrent batches of one plan, as from concurrent jobs and workers, converge to the canonical state (50 runs)', async () => {
    await fc.assert(
      fc.asyncProperty(caseArb, async ([drafts, layout, arrival]) => {
        const planId = `cplan_${kind}_${run++}`;
        const sessionId = `csess_${planId}`;
        const events = toEvents(drafts, planId, sessionId, layout);
        const expected = await reference(events, planId, sessionId);
        await Promise.all(schedule(events, arrival).map((batch) => store.persist(batch)));
        expect(await snapshot(ds, planId)).toEqual(expected);
        await erase(ds, planId, sessionId);
      }),
      { numRuns: 50 },
    );
  }, 600_000);
});
