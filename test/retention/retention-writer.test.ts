import type { DataSource } from 'typeorm';
import { ALL_TEST_DBS, createMigratedDb } from '../support/databases';
import { planRun } from '../support/event-factory';
import { PlanEventStore } from '../../src/store/plan-event-store';
import { runRetention } from '../../src/retention/retention.service';
import { restorePlan } from '../../src/retention/plan-restore';
import { retentionPolicy } from '../../src/retention/retention-config';
import { DAY, planRows, zero } from './plan-fixtures';

/**
 * Retention against rows written by the real worker store: a late event for a soft-deleted plan
 * stays soft-deleted (the store stamps its rebuild with the head's deleted_at), and a restore
 * brings back everything, the late event's rows included.
 *
 * A late event is one whose seq the plan waited for: its later events stayed in the log until
 * the gap was skipped (applyOverdueGaps, long before any retention age), and the late event, once
 * it comes, lands behind the watermark and rebuilds the plan from its log.
 */
describe.each(ALL_TEST_DBS)('retention with the worker store on %s', (kind) => {
  let ds: DataSource;
  let close: () => Promise<void>;

  beforeAll(async () => {
    ({ ds, close } = await createMigratedDb(kind));
  });
  afterAll(async () => close?.());

  it('a late event does not resurrect a retired plan; restore brings it all back', async () => {
    const events = planRun({ seed: 61, steps: 4, requiresApproval: true, startAt: new Date(Date.now() - 200 * DAY) });
    const late = events.filter((e) => e.type === 'handoff.recorded').pop()!;
    const store = new PlanEventStore(ds);
    await store.persist(events.filter((e) => e !== late));
    expect(await store.applyOverdueGaps(new Date(Date.now() + 60_000))).toEqual({
      plans: 1,
      events: events.length - 1 - late.seq,
    });
    const planId = late.planId;
    // the store stamps plan_heads.updated_at with the wall clock: look 100 days ahead of it
    const now = new Date(Date.now() + 100 * DAY);
    const policy = retentionPolicy();

    expect(await runRetention(ds, policy, { now })).toMatchObject({ plans: { softDeleted: 1 } });
    const retired = await planRows(ds, planId, 'deleted');
    expect(await planRows(ds, planId, 'live')).toEqual(zero());

    await store.persist([late]);
    expect(await planRows(ds, planId, 'live')).toEqual(zero());
    const withLate = await planRows(ds, planId, 'deleted');
    expect(withLate.plan_events).toBe(retired.plan_events + 1);
    expect(withLate.plan_handoffs).toBe(retired.plan_handoffs + 1);

    expect(await restorePlan(ds, planId, policy, { now: new Date(now.getTime() + DAY) })).toMatchObject({
      status: 'restored',
      rows: withLate,
    });
    expect(await planRows(ds, planId, 'live')).toEqual(withLate);
    expect(await planRows(ds, planId, 'deleted')).toEqual(zero());
  });

  it('racing the store on the same plans: every plan ends wholly retired, late events included', async () => {
    const runs = Array.from({ length: 16 }, (_, i) =>
      planRun({ seed: 100 + i, steps: 3, startAt: new Date(Date.now() - 200 * DAY) }),
    );
    const lates = runs.map((events) => events.filter((e) => e.type === 'step.started').pop()!);
    const store = new PlanEventStore(ds);
    await store.persist(runs.flatMap((events, i) => events.filter((e) => e !== lates[i])));
    expect((await store.applyOverdueGaps(new Date(Date.now() + 60_000))).plans).toBe(runs.length);
    const now = new Date(Date.now() + 100 * DAY);
    const writes = Promise.all([0, 1, 2, 3].map((k) => store.persist(lates.filter((_, i) => i % 4 === k))));
    const [report] = await Promise.all([runRetention(ds, retentionPolicy({ batchSize: 3 }), { now }), writes]);
    expect(report.plans.softDeleted).toBe(runs.length);
    for (const events of runs) {
      const live = await planRows(ds, events[0].planId, 'live');
      expect(live).toEqual(zero()); // the late events landed soft-deleted, or before the plan was retired
    }
  });
});
