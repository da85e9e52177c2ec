import * as fc from 'fast-check';
import { DataSource } from 'typeorm';
import { PlanEvent } from '../../src/contracts';
import { PlanEventStore } from '../../src/store/plan-event-store';
import { createMigratedDb } from '../support/databases';
import { arrivalArb, planLifeArb, schedule, toEvents } from './plan-events.arbitrary';

const RUNS = Number(process.env.PROPERTY_RUNS ?? 200);

/** Every table's rows for a plan, normalised so the three drivers' quirks do not matter. */
async function snapshot(ds: DataSource, planId: string): Promise<Record<string, unknown[]>> {
  const q = (sql: string) => ds.query(sql.replace(/:plan/g, `'${planId}'`));
  const norm = (rows: Array<Record<string, unknown>>) =>
    rows.map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, v instanceof Date ? v.toISOString() : typeof v === 'bigint' ? Number(v) : v])));
  return {
    plan: norm(await q(`SELECT * FROM execution_plans WHERE id = :plan`)),
    steps: norm(await q(`SELECT * FROM plan_steps WHERE plan_id = :plan ORDER BY step_index`)),
    handoffs: norm(await q(`SELECT * FROM plan_handoffs WHERE plan_id = :plan ORDER BY id`)),
    decisions: norm(await q(`SELECT * FROM plan_decisions WHERE plan_id = :plan ORDER BY id`)),
    dag: norm(await q(`SELECT * FROM workflow_dags WHERE workflow_id = :plan`)),
    checkpoints: norm(await q(`SELECT * FROM workflow_checkpoints WHERE workflow_id = :plan ORDER BY id`)),
    events: norm(await q(`SELECT event_id, seq, type, payload FROM plan_events WHERE plan_id = :plan ORDER BY seq`)),
    // version and updated_at depend on the batching; the counters must not
    head: norm(await q(`SELECT event_count, last_seq, deleted_at FROM plan_heads WHERE plan_id = :plan`)),
    session: norm(await q(`SELECT s.* FROM sessions s JOIN execution_plans p ON p.session_id = s.id WHERE p.id = :plan`)),
  };
}

async function erase(ds: DataSource, planId: string, sessionId: string): Promise<void> {
  for (const [table, col] of [
    ['plan_handoffs', 'plan_id'], ['plan_decisions', 'plan_id'], ['workflow_checkpoints', 'workflow_id'], ['workflow_dags', 'workflow_id'],
    ['plan_steps', 'plan_id'], ['execution_plans', 'id'], ['plan_events', 'plan_id'], ['plan_heads', 'plan_id'],
  ]) {
    await ds.query(`DELETE FROM ${table} WHERE ${col} = '${planId}'`);
  }
  await ds.query(`DELETE FROM sessions WHERE id = '${sessionId}'`);
}

describe.each(['sqlite', 'postgres'] as const)('order independence and idempotency on %s', (kind) => {
  let ds: DataSource;
  let close: () => Promise<void>;
  let store: PlanEventStore;

  beforeAll(async () => {
    ({ ds, close } = await createMigratedDb(kind, { poolSize: 4 }));
    store = new PlanEventStore(ds);
  });
  afterAll(async () => close?.());

  it(`any arrival order, with duplicates and any batching, stores what seq order stores (${RUNS} runs)`, async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        planLifeArb.chain((drafts) => fc.tuple(fc.constant(drafts), arrivalArb(drafts.length))),
        async ([drafts, arrival]) => {
          const planId = `plan_${kind}_${run++}`;
          const sessionId = `sess_${planId}`;
          const events: PlanEvent[] = toEvents(drafts, planId, sessionId);
          for (const e of events) await store.persist([e]);
          const expected = await snapshot(ds, planId);
          await erase(ds, planId, sessionId);

          const batches = schedule(events, arrival);
          for (const batch of batches) await store.persist(batch);
          expect(await snapshot(ds, planId)).toEqual(expected);

          // a full redelivery afterwards changes nothing
          const again = await store.persist(events);
          expect(again.inserted).toBe(0);
          expect(await snapshot(ds, planId)).toEqual(expected);
          await erase(ds, planId, sessionId);
        },
      ),
      { numRuns: RUNS },
    );
  }, 300_000);

  it('concurrent batches of one plan converge to the seq-order state (50 runs)', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        planLifeArb.chain((drafts) => fc.tuple(fc.constant(drafts), arrivalArb(drafts.length))),
        async ([drafts, arrival]) => {
          const planId = `cplan_${kind}_${run++}`;
          const sessionId = `csess_${planId}`;
          const events = toEvents(drafts, planId, sessionId);
          await store.persist(events);
          const expected = await snapshot(ds, planId);
          await erase(ds, planId, sessionId);
          await Promise.all(schedule(events, arrival).map((batch) => store.persist(batch)));
          expect(await snapshot(ds, planId)).toEqual(expected);
          await erase(ds, planId, sessionId);
        },
      ),
      { numRuns: 50 },
    );
  }, 300_000);
});
