import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { getPlanView, listPlans, planStatusFilter } from '../../src/queries';
import { countStalledPlans, markStalledPlans } from '../../src/stalled/stall-check';
import { cliIn } from '../support/parsed-event';
import { ENTITY, PlanHeadRow } from '../../src/store/entities';
import { PlanEventStore } from '../../src/store/plan-event-store';
import { ALL_TEST_DBS, createMigratedDb } from '../support/databases';
import { ev } from './support/stall-events';

const STALL_AFTER = 60_000;

const steps = [
  { stepId: 'a', index: 0, agentId: 'coder', task: 'a' },
  { stepId: 'b', index: 1, agentId: 'coder', task: 'b' },
];

describe.each(ALL_TEST_DBS)('stalled plans on %s', (kind) => {
  let ds: DataSource;
  let close: () => Promise<void>;
  let store: PlanEventStore;
  let dbUrl: string;

  beforeAll(async () => {
    let db;
    ({ ds, close, db } = await createMigratedDb(kind));
    dbUrl = db.url;
    store = new PlanEventStore(ds, undefined, { stallAfterMs: STALL_AFTER });
  });
  afterAll(async () => close?.());

  const head = async (planId: string): Promise<PlanHeadRow> =>
    (await ds.getRepository<PlanHeadRow>(ENTITY.head).findOneByOrFail({ planId })) as PlanHeadRow;
  const dueIn = async (planId: string, from: number): Promise<number | null> => {
    const h = await head(planId);
    return h.stallDueAt === null ? null : new Date(h.stallDueAt).getTime() - from;
  };

  it('watches a running plan from its last event: STALL_AFTER, the plan deadline, a step deadline', async () => {
    const started = Date.now();
    const plain = `plain-${randomUUID()}`;
    const own = `own-${randomUUID()}`;
    await store.persist([
      ev(plain, 0, 'plan.created', { query: 'q', steps }),
      ev(own, 0, 'plan.created', { query: 'q', steps, deadlineMs: 5_000 }),
    ]);
    const stored = Date.now();
    // due its deadline after the moment it was stored, which lies between started and stored
    for (const [planId, deadlineMs] of [
      [plain, STALL_AFTER],
      [own, 5_000],
    ] as const) {
      const storedAt = new Date((await head(planId)).stallDueAt!).getTime() - deadlineMs;
      expect(storedAt).toBeGreaterThanOrEqual(started);
      expect(storedAt).toBeLessThanOrEqual(stored);
    }
    expect((await head(own)).deadlineMs).toBe(5_000);

    // a step that may run an hour holds the plan an hour, whatever other events come meanwhile
    await store.persist([ev(own, 1, 'step.started', { stepId: 'a', deadlineMs: 3_600_000 })]);
    expect(await dueIn(own, started)).toBeGreaterThanOrEqual(3_600_000);
    await store.persist([ev(own, 2, 'step.started', { stepId: 'b' })]);
    expect(await dueIn(own, started)).toBeGreaterThanOrEqual(3_600_000);
  });

  it('events move the due time, not the check time; the check moves it up and marks only past the due time', async () => {
    const planId = `check-${randomUUID()}`;
    await store.persist([ev(planId, 0, 'plan.created', { query: 'q', steps, deadlineMs: 1_000 })]);
    const first = await head(planId);
    expect(first.stallCheckAt).toEqual(first.stallDueAt);
    // a later event pushes the due time on and leaves the check time (an indexed column) as it was
    await store.persist([ev(planId, 1, 'step.started', { stepId: 'a', deadlineMs: 3_600_000 })]);
    const second = await head(planId);
    expect(second.stallCheckAt).toEqual(first.stallCheckAt);
    const due = new Date(second.stallDueAt!).getTime();
    expect(due).toBeGreaterThan(new Date(first.stallDueAt!).getTime() + 3_000_000);

    // past the check time, before the due time: not marked, checked again at the due time
    const between = new Date(new Date(first.stallDueAt!).getTime() + 1_000);
    expect((await markStalledPlans(ds, { now: between })).planIds).not.toContain(planId);
    const third = await head(planId);
    expect([third.stalledAt, third.stallCheckAt]).toEqual([null, third.stallDueAt]);
    expect(new Date(third.stallDueAt!).getTime()).toBe(due);
    // past the due time: marked; a late event gives it the new due time as its check time
    expect((await markStalledPlans(ds, { now: new Date(due + 1) })).planIds).toContain(planId);
    await store.persist([ev(planId, 2, 'step.started', { stepId: 'b' })]);
    const back = await head(planId);
    expect([back.stalledAt, back.stallCheckAt]).toEqual([null, back.stallDueAt]);
    expect(new Date(back.stallDueAt!).getTime()).toBe(due);
    // a finished plan is not watched: both times null
    await store.persist([ev(planId, 3, 'plan.finalized', { status: 'completed' })]);
    const done = await head(planId);
    expect([done.stallDueAt, done.stallCheckAt]).toEqual([null, null]);
  });

  it('does not watch a plan waiting for approval, nor a finished one', async () => {
    const waiting = `approval-${randomUUID()}`;
    const done = `done-${randomUUID()}`;
    await store.persist([
      ev(waiting, 0, 'plan.created', { query: 'q', steps, requiresApproval: true }),
      ev(done, 0, 'plan.created', { query: 'q', steps }),
      ev(done, 1, 'plan.finalized', { status: 'completed' }),
    ]);
    expect((await head(waiting)).stallDueAt).toBeNull();
    expect((await head(done)).stallDueAt).toBeNull();
    const later = new Date(Date.now() + 365 * 86_400_000);
    const { planIds } = await markStalledPlans(ds, { now: later });
    expect(planIds).not.toContain(waiting);
    expect(planIds).not.toContain(done);
  });

  it('marks a plan past its deadline once, and an event brings it back to running', async () => {
    const planId = `stall-${randomUUID()}`;
    await store.persist([ev(planId, 0, 'plan.created', { query: 'q', steps, deadlineMs: 1_000 })]);
    const soon = new Date(Date.now() + 500);
    expect((await markStalledPlans(ds, { now: soon })).planIds).not.toContain(planId);
    const late = new Date(Date.now() + 2_000);
    const before = await countStalledPlans(ds);
    expect((await markStalledPlans(ds, { now: late })).planIds).toContain(planId);
    expect((await head(planId)).stalledAt).not.toBeNull();
    expect(await countStalledPlans(ds)).toBe(before + 1);
    // marked once: the next check finds nothing new for it
    expect((await markStalledPlans(ds, { now: late })).planIds).not.toContain(planId);
    // the reads: plans list --status stalled (library, CLI), the plan view's stalledSince
    const listed = await listPlans(ds, { ...planStatusFilter('stalled'), limit: 100 });
    expect(listed.plans.map((p) => p.planId)).toContain(planId);
    expect(listed.plans.every((p) => p.status === 'executing')).toBe(true);
    expect((await getPlanView(ds, planId)).stalledSince).toBe(late.toISOString());
    if (kind === 'sqlite') {
      const cli = await cliIn(dbUrl, 'plans', 'list', '--status', 'stalled', '--json');
      expect({ code: cli.code, stderr: cli.stderr }).toEqual({ code: 0, stderr: '' });
      expect((JSON.parse(cli.stdout) as { plans: Array<{ planId: string }> }).plans.map((p) => p.planId)).toContain(
        planId,
      );
      const bad = await cliIn(dbUrl, 'plans', 'list', '--status', 'stuck');
      expect(bad.code).not.toBe(0);
      expect(bad.stderr).toContain('"stuck" is not one of planning, executing, completed, failed, cancelled, stalled');
    }

    await store.persist([ev(planId, 1, 'step.started', { stepId: 'a' })]);
    const h = await head(planId);
    expect(h.stalledAt).toBeNull();
    expect(new Date(h.stallDueAt!).getTime()).toBeGreaterThan(Date.now());
    expect(await countStalledPlans(ds)).toBe(before);
    expect(
      (await listPlans(ds, { ...planStatusFilter('stalled'), limit: 100 })).plans.map((p) => p.planId),
    ).not.toContain(planId);
    expect((await getPlanView(ds, planId)).stalledSince).toBeUndefined();
  });

  it('marks in bounded batches: every due plan once, over several transactions', async () => {
    const ids = Array.from({ length: 7 }, (_, i) => `batch-${i}-${randomUUID()}`);
    await store.persist(ids.map((id) => ev(id, 0, 'plan.created', { query: 'q', steps, deadlineMs: 1_000 })));
    const late = new Date(Date.now() + 10_000);
    const first = await markStalledPlans(ds, { now: late, batchSize: 2, maxBatches: 2 });
    expect(first.complete).toBe(false);
    const rest = await markStalledPlans(ds, { now: late, batchSize: 2 });
    expect(rest.complete).toBe(true);
    const all = [...first.planIds, ...rest.planIds].filter((id) => id.startsWith('batch-'));
    expect(all.sort()).toEqual([...ids].sort());
  });
});
