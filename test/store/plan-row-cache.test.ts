import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import type { PlanEvent } from '../../src/contracts';
import { eraseSession } from '../../src/retention/session-erasure';
import { runRetention } from '../../src/retention/retention.service';
import { restorePlan } from '../../src/retention/plan-restore';
import { retentionPolicy } from '../../src/retention/retention-config';
import { PlanEventStore } from '../../src/store/plan-event-store';
import { ALL_TEST_DBS, createMigratedDb } from '../support/databases';
import { planRun } from '../support/event-factory';

const DAY = 86_400_000;

/**
 * The store's row cache (src/store/plan-row-cache.ts): the next events of a plan a store wrote
 * last apply without reading its rows back, and give the rows a store without the cache gives,
 * however other writers (another worker, retention, restore, erasure) touched the plan between.
 */
describe.each(ALL_TEST_DBS)('the row cache on %s', (kind) => {
  let ds: DataSource;
  let close: () => Promise<void>;
  let other: DataSource;
  let closeOther: () => Promise<void>;

  beforeAll(async () => {
    ({ ds, close } = await createMigratedDb(kind));
    ({ ds: other, close: closeOther } = await createMigratedDb(kind));
  });
  afterAll(async () => {
    await close?.();
    await closeOther?.();
  });

  /** Every projection row of a plan, normalised across drivers. */
  async function rows(source: DataSource, planId: string): Promise<unknown> {
    const norm = (list: Array<Record<string, unknown>>) =>
      list.map((r) =>
        Object.fromEntries(
          Object.entries(r).map(([k, v]) => [
            k,
            v instanceof Date ? v.getTime() : typeof v === 'bigint' ? Number(v) : v,
          ]),
        ),
      );
    const q = (sql: string) => source.query(sql, [planId]).then(norm);
    const p = kind === 'postgres' ? '$1' : kind === 'mssql' ? '@0' : '?';
    return {
      plan: await q(`SELECT * FROM execution_plans WHERE id = ${p}`),
      steps: await q(`SELECT * FROM plan_steps WHERE plan_id = ${p} ORDER BY step_index`),
      handoffs: await q(`SELECT * FROM plan_handoffs WHERE plan_id = ${p} ORDER BY id`),
      checkpoints: await q(
        `SELECT id, layer, state, deleted_at FROM workflow_checkpoints WHERE workflow_id = ${p} ORDER BY id`,
      ),
    };
  }

  /** The rows a store without a cache writes for the same batches, in the other database. */
  async function uncached(batches: PlanEvent[][], planId: string): Promise<unknown> {
    const store = new PlanEventStore(other, undefined, { rowCacheBytes: 0 });
    for (const batch of batches) await store.persist(batch);
    expect(store.rowCache.hits).toBe(0);
    return rows(other, planId);
  }

  const oneByOne = (events: PlanEvent[]) => events.map((e) => [e]);

  it('applies a plan event by event from its cached rows, with the rows of a store without a cache', async () => {
    const events = planRun({ seed: 701, steps: 6 });
    const store = new PlanEventStore(ds);
    let hits = 0;
    for (const batch of oneByOne(events)) hits += (await store.persist(batch)).cacheHits;
    // every event after plan.created found its plan in the cache
    expect(hits).toBe(events.length - 1);
    // the plan ended (plan.finalized): its rows are not kept
    expect(events[events.length - 1].type).toBe('plan.finalized');
    expect(store.rowCache.size).toBe(0);
    expect(await rows(ds, events[0].planId)).toEqual(await uncached(oneByOne(events), events[0].planId));
    // and they are the whole-log fold's
    const incremental = await rows(ds, events[0].planId);
    await store.rebuildPlans([events[0].planId]);
    expect(await rows(ds, events[0].planId)).toEqual(incremental);
  });

  it('a long plan trickled in small batches copies only the steps each batch touches, and keeps the rest cached', async () => {
    const events = planRun({ seed: 705, steps: 400 });
    const store = new PlanEventStore(ds);
    const batches: PlanEvent[][] = [];
    for (let i = 0; i < events.length; i += 20) batches.push(events.slice(i, i + 20));
    let hits = 0;
    for (const batch of batches) hits += (await store.persist(batch)).cacheHits;
    expect(hits).toBe(batches.length - 1);
    // each batch copies the steps its ~20 events name, never the plan's 400
    expect(store.rowCache.stepsCopied).toBeLessThanOrEqual(events.length);
    expect(await rows(ds, events[0].planId)).toEqual(await uncached(batches, events[0].planId));
  });

  it('after an edit that drops a step, a later event naming that step finds none, as without the cache', async () => {
    const base = { planId: `edit-drop-${kind}`, sessionId: `edit-drop-s-${kind}` };
    const at = (s: number) => new Date(Date.UTC(2026, 1, 1, 9, 0, s)).toISOString();
    const step = (stepId: string, index: number) => ({ stepId, index, agentId: 'coder', task: `task ${stepId}` });
    const event = (seq: number, type: string, payload: object) =>
      ({ specVersion: 1, eventId: randomUUID(), ...base, seq, type, occurredAt: at(seq), payload }) as PlanEvent;
    const events = [
      event(0, 'plan.created', { query: 'q', steps: [step('a', 0), step('b', 1)], requiresApproval: true }),
      event(1, 'step.started', { stepId: 'a' }),
      // b never ran: the edit drops it
      event(2, 'plan.decision', { decision: 'edit', steps: [step('a', 0), step('c', 1)] }),
      // a handoff to the dropped step: it points at no step row (before the fix: at b's deleted row,
      // taken from the cached steps, and the foreign key refused the whole transaction)
      event(3, 'handoff.recorded', { handoffId: 'h', stepId: 'b', fromAgentId: 'coder', toAgentId: 'x', reason: 'r' }),
      event(4, 'step.started', { stepId: 'b' }),
    ];
    const store = new PlanEventStore(ds);
    let hits = 0;
    for (const batch of oneByOne(events)) hits += (await store.persist(batch)).cacheHits;
    expect(hits).toBe(events.length - 1);
    const stored = (await rows(ds, base.planId)) as { handoffs: Array<{ step_id: unknown }>; steps: unknown[] };
    expect(stored.handoffs.map((h) => h.step_id)).toEqual([null]);
    expect(stored).toEqual(await uncached(oneByOne(events), base.planId));
  });

  it('two stores (two workers) writing one plan in turn never apply to rows the other changed', async () => {
    const events = planRun({ seed: 702, steps: 6 });
    const a = new PlanEventStore(ds);
    const b = new PlanEventStore(ds);
    let hits = 0;
    for (const [i, batch] of oneByOne(events).entries()) hits += (await (i % 2 === 0 ? a : b).persist(batch)).cacheHits;
    // each store's copy is one write old every time: none is used
    expect(hits).toBe(0);
    expect(await rows(ds, events[0].planId)).toEqual(await uncached(oneByOne(events), events[0].planId));
  });

  it('a plan retired and restored between two events keeps what retention and restore did', async () => {
    const run = planRun({ seed: 703, steps: 3, startAt: new Date(Date.now() - 200 * DAY) });
    const planId = run[0].planId;
    // events that come after the plan ended (handoffs recorded late), one per batch
    const handoff = run.find((e) => e.type === 'handoff.recorded')!;
    const late = [0, 1, 2].map(
      (i) =>
        ({
          ...handoff,
          eventId: randomUUID(),
          seq: run.length + i,
          payload: { ...handoff.payload, handoffId: `late-${i}` },
        }) as PlanEvent,
    );
    const store = new PlanEventStore(ds);
    for (const batch of oneByOne(run)) await store.persist(batch);
    const now = new Date(Date.now() + 100 * DAY);
    // (other tests' plans in this database are retired too)
    expect((await runRetention(ds, retentionPolicy(), { now })).plans.softDeleted).toBeGreaterThanOrEqual(1);

    // retired: the next event does not bring the plan back to life; its rows stay hidden behind the
    // retired plan row (a soft delete stamps only the plan and its head)
    expect((await store.persist([late[0]])).cacheHits).toBe(0);
    const deleted = (await rows(ds, planId)) as {
      plan: Array<{ deleted_at: unknown }>;
      handoffs: Array<{ deleted_at: unknown }>;
    };
    expect(deleted.plan[0].deleted_at).not.toBeNull();
    expect(deleted.handoffs).toHaveLength(run.filter((e) => e.type === 'handoff.recorded').length + 1);

    expect(await restorePlan(ds, planId, retentionPolicy(), { now: new Date(now.getTime() + DAY) })).toMatchObject({
      status: 'restored',
    });
    for (const batch of oneByOne(late.slice(1))) await store.persist(batch);
    const restored = (await rows(ds, planId)) as {
      plan: Array<{ deleted_at: unknown }>;
      handoffs: Array<{ deleted_at: unknown }>;
    };
    expect(restored.plan[0].deleted_at).toBeNull();
    expect(restored.handoffs).toHaveLength(late.length + run.filter((e) => e.type === 'handoff.recorded').length);
    expect(restored.handoffs.every((h) => h.deleted_at === null)).toBe(true);
    expect(restored).toEqual(await uncached(oneByOne([...run, ...late]), planId));
  });

  it('a plan erased and published again starts from its new events, not from the cached rows', async () => {
    const events = planRun({ seed: 704, steps: 4 });
    const store = new PlanEventStore(ds);
    for (const batch of oneByOne(events)) await store.persist(batch);
    await eraseSession(ds, events[0].sessionId);
    // the same plan id again, one event fewer: what the cache holds is not this plan's state
    const again = events.slice(0, -1);
    let hits = 0;
    for (const batch of oneByOne(again)) hits += (await store.persist(batch)).cacheHits;
    expect(hits).toBe(again.length - 1);
    expect(await rows(ds, events[0].planId)).toEqual(await rowsOfFresh(again));
  });

  /** The rows of `events` stored by a store without a cache in a database of their own. */
  async function rowsOfFresh(events: PlanEvent[]): Promise<unknown> {
    const fresh = await createMigratedDb(kind);
    try {
      await new PlanEventStore(fresh.ds, undefined, { rowCacheBytes: 0 }).persist(events);
      return await rows(fresh.ds, events[0].planId);
    } finally {
      await fresh.close();
    }
  }
});
