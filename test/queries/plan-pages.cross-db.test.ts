/**
 * `plans list` pages: by cursor or by offset, with any filter, the pages together are the whole
 * list once, newest first, ties on the creation instant broken by the id; the total counts up to
 * 1,000 plans and says so past it; an agent's plans are the plans with a step of that agent now.
 */
import * as fc from 'fast-check';
import type { DataSource } from 'typeorm';
import type { PlanEvent } from '../../src/contracts';
import { listPlans, parsePlanCursor, PLAN_COUNT_CAP, type PlanListFilter } from '../../src/queries';
import { PlanEventStore } from '../../src/store/plan-event-store';
import { createMigratedDb } from '../support/databases';
import { parsedEvent } from '../support/parsed-event';

const AGENTS = ['coder', 'tester', 'writer'];
const STATUSES = ['completed', 'failed', 'cancelled'] as const;
/** Few distinct instants: many plans share one, so the id decides their order. */
const INSTANTS = Array.from({ length: 6 }, (_, i) => new Date(Date.UTC(2026, 1, 1 + i, 9)));

interface PlanShape {
  id: string;
  session: string;
  at: Date;
  agents: string[];
  final: (typeof STATUSES)[number] | null;
}

function planEvents(p: PlanShape): PlanEvent[] {
  const base = { planId: p.id, sessionId: p.session };
  const at = (s: number) => new Date(p.at.getTime() + s * 1000);
  const events = [
    parsedEvent({
      ...base,
      seq: 0,
      type: 'plan.created',
      occurredAt: p.at,
      payload: {
        query: `plan ${p.id}`,
        steps: p.agents.map((agentId, index) => ({ stepId: `s${index}`, index, agentId, task: 't' })),
      },
    }),
  ];
  if (p.final)
    events.push(
      parsedEvent({ ...base, seq: 1, type: 'plan.finalized', occurredAt: at(60), payload: { status: p.final } }),
    );
  return events;
}

/** 60 plans: ids zero-padded (every collation orders them alike), instants shared, 1-3 agents each. */
function dataset(): PlanShape[] {
  const plans: PlanShape[] = [];
  for (let n = 0; n < 60; n++) {
    plans.push({
      id: `pg${String(n).padStart(3, '0')}`,
      session: `sess-${n % 4}`,
      at: INSTANTS[(n * 7) % INSTANTS.length],
      agents: AGENTS.filter((_, i) => (n >> i) % 2 === 1 || i === n % 3),
      final: n % 5 === 4 ? null : STATUSES[n % 3],
    });
  }
  return plans;
}

/** The list as it must be: the filter applied in JS, newest first, then by id descending. */
function expected(plans: PlanShape[], f: Omit<PlanListFilter, 'limit'>): string[] {
  return plans
    .filter((p) => f.sessionId === undefined || p.session === f.sessionId)
    .filter((p) => !f.statuses || f.statuses.includes(p.final ?? 'executing'))
    .filter((p) => f.agentId === undefined || p.agents.includes(f.agentId))
    .filter((p) => !f.created?.from || p.at >= f.created.from)
    .filter((p) => !f.created?.to || p.at < f.created.to)
    .sort((a, b) => b.at.getTime() - a.at.getTime() || (a.id < b.id ? 1 : -1))
    .map((p) => p.id);
}

const filterArb: fc.Arbitrary<Omit<PlanListFilter, 'limit'>> = fc.record(
  {
    sessionId: fc.constantFrom('sess-0', 'sess-1', 'sess-3'),
    statuses: fc.subarray(['completed', 'failed', 'cancelled', 'executing'] as const, { minLength: 1 }),
    agentId: fc.constantFrom(...AGENTS),
    created: fc.tuple(fc.nat(INSTANTS.length - 1), fc.nat(INSTANTS.length)).map(([a, b]) => ({
      from: INSTANTS[Math.min(a, b)],
      to: new Date(INSTANTS[0].getTime() + Math.max(a, b) * 86_400_000 + 1),
    })),
  },
  { requiredKeys: [] },
);

describe.each(['sqlite', 'postgres', 'mariadb'] as const)('plans list pages (%s)', (kind) => {
  let ds: DataSource;
  let close: () => Promise<void>;
  const plans = dataset();

  beforeAll(async () => {
    ({ ds, close } = await createMigratedDb(kind));
    await new PlanEventStore(ds).persist(plans.flatMap(planEvents));
  });
  afterAll(async () => close());

  it('by cursor, any filter and page size: every plan once, newest first, ties by id', async () => {
    await fc.assert(
      fc.asyncProperty(filterArb, fc.integer({ min: 1, max: 9 }), async (filter, limit) => {
        const want = expected(plans, filter);
        const seen: string[] = [];
        let page = await listPlans(ds, { ...filter, limit });
        for (let pages = 0; ; pages++) {
          expect(page.plans.length).toBeLessThanOrEqual(limit);
          seen.push(...page.plans.map((p) => p.planId));
          expect(page.total).toBe(want.length);
          expect(page.totalExact).toBe(true);
          expect(page.hasMore).toBe(seen.length < want.length);
          if (!page.nextCursor) break;
          expect(pages).toBeLessThan(want.length);
          page = await listPlans(ds, { ...filter, limit, cursor: parsePlanCursor(page.nextCursor) });
        }
        expect(seen).toEqual(want);
      }),
      { numRuns: 40 },
    );
  });

  it('by offset the same pages', async () => {
    const filter = { statuses: ['completed' as const, 'failed' as const] };
    const want = expected(plans, filter);
    const pages = [];
    for (let offset = 0; offset < want.length + 7; offset += 7)
      pages.push(await listPlans(ds, { ...filter, limit: 7, offset }));
    expect(pages.flatMap((p) => p.plans.map((x) => x.planId))).toEqual(want);
    expect(pages.map((p) => p.hasMore)).toEqual(pages.map((_, i) => (i + 1) * 7 < want.length));
  });

  it("an agent's plans are those with a step of that agent now: after a step moves to another agent, or an edit", async () => {
    const store = new PlanEventStore(ds);
    const base = { planId: 'pg-moved', sessionId: 'sess-moved' };
    const at = new Date(Date.UTC(2026, 2, 1));
    await store.persist([
      parsedEvent({
        ...base,
        seq: 0,
        type: 'plan.created',
        occurredAt: at,
        payload: { query: 'q', steps: [{ stepId: 'a', index: 0, agentId: 'mover', task: 't' }] },
      }),
    ]);
    const planIds = async (agentId: string) =>
      (await listPlans(ds, { agentId, limit: 5 })).plans.map((p) => p.planId).filter((id) => id === 'pg-moved');
    expect(await planIds('mover')).toEqual(['pg-moved']);
    await store.persist([
      parsedEvent({
        ...base,
        seq: 1,
        type: 'step.started',
        occurredAt: at,
        payload: { stepId: 'a', agentId: 'taker' },
      }),
    ]);
    expect([await planIds('mover'), await planIds('taker')]).toEqual([[], ['pg-moved']]);
    expect((await listPlans(ds, { agentId: 'mover', limit: 5 })).total).toBe(0);
    await store.persist([
      parsedEvent({
        ...base,
        seq: 2,
        type: 'plan.decision',
        occurredAt: at,
        payload: {
          decision: 'edit',
          steps: [
            { stepId: 'a', index: 0, agentId: 'taker', task: 't' },
            { stepId: 'b', index: 1, agentId: 'editor', task: 't' },
          ],
        },
      }),
    ]);
    expect([await planIds('taker'), await planIds('editor')]).toEqual([['pg-moved'], ['pg-moved']]);
  });

  it('counts up to 1,000 plans: past that, "1,000+" and a cursor to go on', async () => {
    const store = new PlanEventStore(ds);
    const many: PlanEvent[] = [];
    for (let n = 0; n <= PLAN_COUNT_CAP; n++)
      many.push(
        ...planEvents({
          id: `pgmany${String(n).padStart(4, '0')}`,
          session: 'sess-many',
          at: new Date(Date.UTC(2025, 0, 1) + n * 1000),
          agents: ['bulk'],
          final: 'completed',
        }),
      );
    await store.persist(many);
    const first = await listPlans(ds, { sessionId: 'sess-many', limit: 20 });
    expect(first).toMatchObject({ total: PLAN_COUNT_CAP, totalExact: false, hasMore: true });
    expect(first.plans[0].planId).toBe(`pgmany${PLAN_COUNT_CAP}`);
    const byAgent = await listPlans(ds, { agentId: 'bulk', limit: 20 });
    expect(byAgent).toMatchObject({ total: PLAN_COUNT_CAP, totalExact: false });
    // an offset page further down counts up to its end
    const deep = await listPlans(ds, { sessionId: 'sess-many', limit: 20, offset: 990 });
    expect(deep).toMatchObject({ total: 1001, totalExact: true, hasMore: false, nextCursor: null });
    expect(deep.plans.map((p) => p.planId)).toEqual(
      Array.from({ length: 11 }, (_, i) => `pgmany${String(10 - i).padStart(4, '0')}`),
    );
  });
});

describe('plan cursors', () => {
  it('refuses what is not a cursor with one line naming the argument', () => {
    expect(() => parsePlanCursor('not a cursor')).toThrow(/--cursor: "not a cursor" is not a cursor of plans list/);
    expect(() => parsePlanCursor(Buffer.from('2026-02-01 x').toString('base64url'))).toThrow(/--cursor/);
  });
});
