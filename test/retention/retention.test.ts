import type { DataSource } from 'typeorm';
import { ALL_TEST_DBS, createMigratedDb } from '../support/databases';
import { runRetention } from '../../src/retention/retention.service';
import { restorePlan } from '../../src/retention/plan-restore';
import { retentionPolicy } from '../../src/retention/retention-config';
import type { RetentionReport } from '../../src/retention/retention-report';
import {
  ago,
  DAY,
  expectedRows,
  HOUR,
  insertPlans,
  later,
  NOW,
  PlanSpec,
  planRows,
  sum,
  wipe,
  zero,
} from './plan-fixtures';

// Small batches so every phase runs several transactions.
const policy = retentionPolicy({ batchSize: 2 });

/** Plans of every status and age; `fate` is what the first run at NOW must do to each. */
const PLANS: Array<PlanSpec & { fate: 'retire' | 'keep' | 'dag-expires' }> = [
  { id: 'completed-31d', status: 'completed', completedAt: ago(31 * DAY), fate: 'retire' },
  { id: 'completed-29d', status: 'completed', completedAt: ago(29 * DAY), fate: 'dag-expires' },
  { id: 'completed-2h', status: 'completed', completedAt: ago(2 * HOUR), fate: 'keep' },
  { id: 'completed-undated', status: 'completed', completedAt: null, createdAt: ago(40 * DAY), fate: 'retire' },
  // ages count from the end: a late event (the head written 12 h ago) keeps neither the plan nor its DAG
  {
    id: 'completed-31d-late-event',
    status: 'completed',
    completedAt: ago(31 * DAY),
    lastActivity: ago(12 * HOUR),
    fate: 'retire',
  },
  { id: 'failed-60d', status: 'failed', completedAt: ago(60 * DAY), fate: 'keep' },
  { id: 'failed-91d', status: 'failed', completedAt: ago(91 * DAY), fate: 'retire' },
  { id: 'cancelled-31d', status: 'cancelled', completedAt: ago(31 * DAY), fate: 'retire' },
  { id: 'cancelled-10d', status: 'cancelled', completedAt: ago(10 * DAY), fate: 'dag-expires' },
  { id: 'executing-10y', status: 'executing', createdAt: ago(3650 * DAY), fate: 'keep' },
  { id: 'planning-10y', status: 'planning', createdAt: ago(3650 * DAY), fate: 'keep' },
  { id: 'orphan-100d', status: 'planning', orphan: true, createdAt: ago(100 * DAY), fate: 'retire' },
  { id: 'orphan-10d', status: 'planning', orphan: true, createdAt: ago(10 * DAY), fate: 'keep' },
];

const retired = PLANS.filter((p) => p.fate === 'retire');
const dagOnly = PLANS.filter((p) => p.fate === 'dag-expires');

describe.each(ALL_TEST_DBS)('retention on %s', (kind) => {
  let ds: DataSource;
  let close: () => Promise<void>;

  beforeAll(async () => {
    ({ ds, close } = await createMigratedDb(kind));
  });
  afterAll(async () => close?.());
  beforeEach(async () => wipe(ds));

  it('soft-deletes exactly the expected plans, then purges them after the grace period', async () => {
    await insertPlans(ds, PLANS);
    const dry = await runRetention(ds, policy, { now: NOW, dryRun: true });
    for (const p of PLANS) expect(await planRows(ds, p.id, 'deleted')).toEqual(zero()); // a dry run changes nothing

    const first = await runRetention(ds, policy, { now: NOW });
    expect(first).toMatchObject({
      dryRun: false,
      complete: true,
      plans: { softDeleted: 5, purged: 0 },
      orphans: { softDeleted: 1, purged: 0 },
      dags: { expired: 2, purged: 0, stamped: 3 },
    }); // stamped: the 2 plus completed-2h (due tomorrow)
    expect(stripRun(dry)).toEqual(stripRun({ ...first, dryRun: true }));
    const softDeleted = sum(retired);
    softDeleted.workflow_dags += dagOnly.length;
    softDeleted.workflow_checkpoints += 2 * dagOnly.length;
    expect(counts(first, 'softDeleted')).toEqual(softDeleted);
    for (const p of PLANS) {
      const deleted = await planRows(ds, p.id, 'deleted');
      if (p.fate === 'retire') expect(deleted).toEqual(expectedRows(p));
      else if (p.fate === 'dag-expires')
        expect(deleted).toEqual({ ...zero(), workflow_dags: 1, workflow_checkpoints: 2 });
      else expect(deleted).toEqual(zero());
    }

    // within the grace period nothing is purged; time moved on, so completed-29d is now due
    const inGrace = await runRetention(ds, policy, { now: later(6 * DAY) });
    expect(inGrace).toMatchObject({
      plans: { softDeleted: 1, purged: 0 },
      orphans: { purged: 0 },
      dags: { purged: 0 },
    });
    expect(await planRows(ds, 'completed-29d', 'live')).toEqual(zero());

    const purge = await runRetention(ds, policy, { now: later(7 * DAY + 1) });
    // completed-29d's DAG (expired at NOW) now waits for its plan's purge; cancelled-10d's goes
    expect(purge).toMatchObject({ plans: { softDeleted: 0, purged: 5 }, orphans: { purged: 1 }, dags: { purged: 1 } });
    const purged = sum(retired);
    purged.workflow_dags += 1;
    purged.workflow_checkpoints += 2;
    expect(counts(purge, 'purged')).toEqual(purged);
    for (const p of retired) expect(await planRows(ds, p.id, 'all')).toEqual(zero());
    const cancelled = PLANS.find((p) => p.id === 'cancelled-10d')!;
    expect(await planRows(ds, cancelled.id, 'all')).toEqual({
      ...expectedRows(cancelled),
      workflow_dags: 0,
      workflow_checkpoints: 0,
    });
    for (const p of PLANS.filter((x) => x.fate === 'keep')) {
      // kept plans are whole; a completed one's DAG has expired by now (ended more than 24 h ago)
      const noDag = p.status === 'completed' ? { workflow_dags: 0, workflow_checkpoints: 0 } : {};
      expect(await planRows(ds, p.id, 'live')).toEqual({ ...expectedRows(p), ...noDag });
    }

    // idempotent: the same run again finds nothing left to purge
    expect(await runRetention(ds, policy, { now: later(7 * DAY + 1) })).toMatchObject({
      plans: { purged: 0, softDeleted: 0 },
      orphans: { purged: 0 },
      dags: { purged: 0 },
    });
  });

  it('never touches a running plan, whatever its age', async () => {
    const running: PlanSpec[] = [
      { id: 'run-exec', status: 'executing', createdAt: ago(20 * 365 * DAY), lastActivity: ago(20 * 365 * DAY) },
      { id: 'run-plan', status: 'planning', createdAt: ago(20 * 365 * DAY), lastActivity: ago(20 * 365 * DAY) },
    ];
    await insertPlans(ds, running);
    const aggressive = retentionPolicy({
      completedDays: 1,
      failedDays: 1,
      cancelledDays: 1,
      graceDays: 0,
      dagTtlMinutes: 60,
      orphanDays: 1,
    });
    for (const now of [NOW, later(1000 * DAY)]) await runRetention(ds, aggressive, { now });
    for (const p of running) expect(await planRows(ds, p.id, 'live')).toEqual(expectedRows(p));
  });

  it("expires only finished workflows' DAGs, honouring a later expires_at", async () => {
    const plans: PlanSpec[] = [
      { id: 'dag-done', status: 'completed', completedAt: ago(2 * DAY) },
      { id: 'dag-pinned', status: 'completed', completedAt: ago(2 * DAY), dagExpiresAt: later(DAY) },
      { id: 'dag-failed', status: 'failed', completedAt: ago(2 * DAY) },
      { id: 'dag-running', status: 'executing', createdAt: ago(30 * DAY), lastActivity: ago(30 * DAY) },
    ];
    await insertPlans(ds, plans);
    expect(await runRetention(ds, policy, { now: NOW })).toMatchObject({
      dags: { expired: 1 },
      plans: { softDeleted: 0 },
    });
    expect(await planRows(ds, 'dag-done', 'deleted')).toEqual({ ...zero(), workflow_dags: 1, workflow_checkpoints: 2 });
    for (const id of ['dag-pinned', 'dag-failed', 'dag-running'])
      expect(await planRows(ds, id, 'deleted')).toEqual(zero());
    // dag-pinned, now due
    expect(await runRetention(ds, policy, { now: later(DAY) })).toMatchObject({ dags: { expired: 1 } });
    const purged = await runRetention(ds, policy, { now: later(8 * DAY) });
    expect(purged.dags.purged).toBe(2);
    expect(purged.tables.workflow_checkpoints.purged).toBe(4);
    expect(await planRows(ds, 'dag-done', 'all')).toEqual({
      ...expectedRows(plans[0]),
      workflow_dags: 0,
      workflow_checkpoints: 0,
    });
  });

  it('restores a plan whole during the grace period and keeps it another full period', async () => {
    const plan: PlanSpec = { id: 'to-restore', status: 'completed', completedAt: ago(40 * DAY) };
    await insertPlans(ds, [plan]);
    await runRetention(ds, policy, { now: NOW });
    expect(await planRows(ds, plan.id, 'live')).toEqual(zero());

    const outcome = await restorePlan(ds, plan.id, policy, { now: later(3 * DAY) });
    expect(outcome).toEqual({
      status: 'restored',
      planId: plan.id,
      deletedAt: NOW.toISOString(),
      ancestors: [],
      rows: expectedRows(plan),
    });
    expect(await planRows(ds, plan.id, 'live')).toEqual(expectedRows(plan));
    expect(await restorePlan(ds, plan.id, policy, { now: later(3 * DAY) })).toEqual({
      status: 'not-deleted',
      planId: plan.id,
    });

    // the restore (plan_heads.restored_at) starts a full period: not retired again until then;
    // its DAG's TTL counts from the workflow's end (40 days ago), so the DAG expires
    expect(await runRetention(ds, policy, { now: later(3 * DAY + 12 * HOUR) })).toMatchObject({
      plans: { softDeleted: 0 },
      dags: { expired: 1 },
    });
    expect(await planRows(ds, plan.id, 'live')).toEqual({
      ...expectedRows(plan),
      workflow_dags: 0,
      workflow_checkpoints: 0,
    });
    expect(await runRetention(ds, policy, { now: later(34 * DAY) })).toMatchObject({ plans: { softDeleted: 1 } });
  });

  it('refuses a restore after the grace period, then the plan is gone for good', async () => {
    const plan: PlanSpec = { id: 'too-late', status: 'failed', completedAt: ago(100 * DAY) };
    await insertPlans(ds, [plan]);
    await runRetention(ds, policy, { now: NOW });
    const expired = await restorePlan(ds, plan.id, policy, { now: later(7 * DAY) });
    expect(expired).toEqual({
      status: 'grace-expired',
      planId: plan.id,
      deletedAt: NOW.toISOString(),
      graceEndedAt: later(7 * DAY).toISOString(),
    });
    expect(await planRows(ds, plan.id, 'deleted')).toEqual(expectedRows(plan)); // refused: nothing changed
    await runRetention(ds, policy, { now: later(7 * DAY) });
    expect(await planRows(ds, plan.id, 'all')).toEqual(zero());
    expect(await restorePlan(ds, plan.id, policy, { now: later(7 * DAY) })).toEqual({
      status: 'not-found',
      planId: plan.id,
    });
  });

  it('two runs at once neither double-delete nor deadlock', async () => {
    const plans: PlanSpec[] = Array.from({ length: 24 }, (_, i) => ({
      id: `race-${String(i).padStart(2, '0')}`,
      status: 'completed',
      completedAt: ago(40 * DAY),
      steps: 2,
    }));
    await insertPlans(ds, plans);
    const small = retentionPolicy({ batchSize: 3 });
    const soft = await Promise.all([runRetention(ds, small, { now: NOW }), runRetention(ds, small, { now: NOW })]);
    expect(soft[0].plans.softDeleted + soft[1].plans.softDeleted).toBe(plans.length);
    expect(add(counts(soft[0], 'softDeleted'), counts(soft[1], 'softDeleted'))).toEqual(sum(plans));

    const purge = await Promise.all([
      runRetention(ds, small, { now: later(8 * DAY) }),
      runRetention(ds, small, { now: later(8 * DAY) }),
    ]);
    expect(purge[0].plans.purged + purge[1].plans.purged).toBe(plans.length);
    expect(add(counts(purge[0], 'purged'), counts(purge[1], 'purged'))).toEqual(sum(plans));
    for (const p of plans) expect(await planRows(ds, p.id, 'all')).toEqual(zero());
  });

  it('an interrupted purge completes on the next run', async () => {
    const plans: PlanSpec[] = Array.from({ length: 5 }, (_, i) => ({
      id: `cut-${i}`,
      status: 'cancelled',
      completedAt: ago(40 * DAY),
      deletedAt: ago(30 * DAY),
    }));
    await insertPlans(ds, plans);
    const stopped = await runRetention(ds, policy, { now: NOW, maxBatches: 1 });
    expect(stopped).toMatchObject({ complete: false, stoppedBy: 'maxBatches', batches: 1, plans: { purged: 2 } });

    const aborted = new AbortController();
    aborted.abort();
    expect(await runRetention(ds, policy, { now: NOW, signal: aborted.signal })).toMatchObject({
      complete: false,
      stoppedBy: 'aborted',
      batches: 0,
    });

    const rest = await runRetention(ds, policy, { now: NOW });
    expect(rest).toMatchObject({ complete: true, plans: { purged: 3 } });
    for (const p of plans) expect(await planRows(ds, p.id, 'all')).toEqual(zero());
  });

  it('rests between its transactions as RETENTION_PAUSE_PERCENT says, and does the same work', async () => {
    const plans: PlanSpec[] = Array.from({ length: 5 }, (_, i) => ({
      id: `rest-${i}`,
      status: 'completed',
      completedAt: ago(40 * DAY),
    }));
    await insertPlans(ds, plans);
    // rests of a hundred times the work: every transaction, however short, is followed by one
    const resting = retentionPolicy({ batchSize: 2, pausePercent: 10_000 });
    // a dry run never rests, whatever the policy says: it writes nothing
    const dry = await runRetention(ds, resting, { now: NOW, dryRun: true });
    expect(dry).toMatchObject({ pausedMs: 0, plans: { softDeleted: 5 } });
    const paced = await runRetention(ds, resting, { now: NOW });
    expect(paced).toMatchObject({ complete: true, batches: dry.batches, plans: { softDeleted: 5 } });
    expect(paced.tables).toEqual(dry.tables);
    expect(paced.pausedMs).toBeGreaterThan(0);
    expect(paced.pausedMs).toBeLessThanOrEqual(paced.durationMs);
    for (const p of plans) expect(await planRows(ds, p.id, 'live')).toEqual(zero());
  });

  it('purges the oldest plans first, whatever their ids, and misses none created at the same instant', async () => {
    // ids sort against creation time; three plans share one creation instant (the keyset's tie)
    const created = [ago(50 * DAY), ago(49 * DAY), ago(48 * DAY), ago(48 * DAY), ago(48 * DAY), ago(47 * DAY)];
    const plans: PlanSpec[] = created.map((createdAt, i) => ({
      id: `old-${String.fromCharCode(102 - i)}`, // old-f (oldest) .. old-a (newest)
      status: 'completed',
      createdAt,
      completedAt: ago(45 * DAY),
      deletedAt: ago(30 * DAY),
    }));
    await insertPlans(ds, plans);
    const first = await runRetention(ds, policy, { now: NOW, maxBatches: 1 });
    expect(first).toMatchObject({ stoppedBy: 'maxBatches', plans: { purged: 2 } });
    const left: string[] = [];
    for (const p of plans) if (Object.values(await planRows(ds, p.id, 'all')).some((n) => n > 0)) left.push(p.id);
    expect(left).toEqual(['old-d', 'old-c', 'old-b', 'old-a']);

    const rest = await runRetention(ds, policy, { now: NOW });
    expect(rest).toMatchObject({ complete: true, plans: { purged: 4 } });
    for (const p of plans) expect(await planRows(ds, p.id, 'all')).toEqual(zero());
  });
});

function counts(report: RetentionReport, kind: 'softDeleted' | 'purged') {
  return Object.fromEntries(Object.entries(report.tables).map(([t, c]) => [t, c[kind]]));
}

function add(a: Record<string, number>, b: Record<string, number>) {
  return Object.fromEntries(Object.keys(a).map((k) => [k, a[k] + b[k]]));
}

/** A report without what differs between two runs of the same work (timing). */
function stripRun(r: RetentionReport) {
  const { durationMs: _durationMs, pausedMs: _pausedMs, ...rest } = r;
  return rest;
}
