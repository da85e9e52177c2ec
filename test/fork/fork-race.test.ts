/**
 * Forks asked for at the same moment: under one new plan id exactly one is created and the others
 * are refused (what the HTTP API answers 409); under distinct ids every one is created. On every
 * database, through forkPlan, the code the CLI and the HTTP API share.
 */
import { ForkRefusedError, forkPlan } from '../../src/fork/fork-plan';
import { getPlanView } from '../../src/queries';
import { PlanEventStore } from '../../src/store/plan-event-store';
import { ALL_TEST_DBS, createMigratedDb } from '../support/databases';
import { planRun } from '../support/event-factory';

jest.setTimeout(120_000);

const CONTENDERS = 6;

describe.each(ALL_TEST_DBS)('concurrent forks (%s)', (kind) => {
  let db: Awaited<ReturnType<typeof createMigratedDb>>;
  let parent: string;

  beforeAll(async () => {
    db = await createMigratedDb(kind);
    const events = planRun({ planId: 'race-parent' });
    parent = events[0].planId;
    await new PlanEventStore(db.ds).persist(events);
  });
  afterAll(async () => {
    await db?.close();
  });

  const replay = (planId: string, i: number) =>
    forkPlan(db.ds, { parentPlanId: parent, kind: 'replay', planId, sessionId: `race-sess-${i}` });

  it('under one new plan id: one is created, every other is refused, and the stored plan is the one created', async () => {
    const results = await Promise.allSettled(Array.from({ length: CONTENDERS }, (_, i) => replay('race-same', i)));
    const created = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    const refused = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as Error] : []));
    expect(created).toHaveLength(1);
    expect(refused.map((e) => [e instanceof ForkRefusedError, e.message])).toEqual(
      Array.from({ length: CONTENDERS - 1 }, () => [true, 'plan "race-same" already exists: choose another --plan-id']),
    );
    const rows = await db.ds.query(`SELECT seq FROM plan_events WHERE plan_id = 'race-same'`);
    expect(rows.map((r: { seq: unknown }) => Number(r.seq))).toEqual([0]);
    const view = await getPlanView(db.ds, 'race-same');
    expect(view.plan.sessionId).toBe(created[0].sessionId);
  });

  it('under distinct plan ids: every one is created', async () => {
    const ids = Array.from({ length: CONTENDERS }, (_, i) => `race-own-${i}`);
    const results = await Promise.all(ids.map((id, i) => replay(id, i)));
    expect(results.map((r) => r.planId)).toEqual(ids);
    for (const [i, id] of ids.entries()) expect((await getPlanView(db.ds, id)).plan.sessionId).toBe(`race-sess-${i}`);
  });
});
