/**
 * DAG expiry users can see: retention stamps workflow_dags.expires_at = end + RETENTION_DAG_TTL
 * (minutes allowed), counts from the workflow's end (not its last event), and resume-point shows it.
 */
import type { DataSource } from 'typeorm';
import { ALL_TEST_DBS, createMigratedDb } from '../support/databases';
import { runCli } from '../support/cli';
import { runRetention } from '../../src/retention/retention.service';
import { loadRetentionPolicy, retentionPolicy } from '../../src/retention/retention-config';
import { getResumePoint } from '../../src/queries/workflow-resume.query';
import { ENTITY } from '../../src/store/entities';
import { ago, DAY, insertPlans, later, NOW, PlanSpec, planRows, wipe, zero } from './plan-fixtures';

const MIN = 60_000;
const policy = retentionPolicy({ ...loadRetentionPolicy({ RETENTION_DAG_TTL: '90m' }), batchSize: 2 });

const PLANS: PlanSpec[] = [
  // ended 100 min ago, an event 1 min ago: the TTL counts from the end, so it expires now
  { id: 'ended-100m', status: 'completed', completedAt: ago(100 * MIN), lastActivity: ago(MIN) },
  { id: 'ended-80m', status: 'completed', completedAt: ago(80 * MIN) },
  { id: 'cancelled-2h', status: 'cancelled', completedAt: ago(120 * MIN) },
  { id: 'failed-1d', status: 'failed', completedAt: ago(DAY) },
  { id: 'running', status: 'executing', createdAt: ago(10 * DAY) },
];

describe.each(ALL_TEST_DBS)('DAG expiry on %s', (kind) => {
  let ds: DataSource;
  let url: string;
  let close: () => Promise<void>;

  beforeAll(async () => {
    let db: { url: string };
    ({ ds, db, close } = await createMigratedDb(kind));
    url = db.url;
  });
  afterAll(async () => close?.());
  beforeEach(async () => wipe(ds));

  it('stamps expires_at = end + 90m, expires from the end, and resume-point shows when', async () => {
    await insertPlans(ds, PLANS);
    const due = ago(80 * MIN + -90 * MIN).toISOString(); // ended-80m: NOW + 10 min
    // before any run: resume-point computes it from the TTL it is given, null without one
    expect(await getResumePoint(ds, 'ended-80m', { dagTtlMinutes: 90 })).toMatchObject({
      resumable: false,
      expiresAt: due,
    });
    expect(await getResumePoint(ds, 'ended-80m')).toMatchObject({ resumable: false, expiresAt: null });

    const dry = await runRetention(ds, policy, { now: NOW, dryRun: true });
    const run = await runRetention(ds, policy, { now: NOW });
    expect(run.dags).toEqual({ expired: 2, purged: 0, stamped: 3 });
    expect(dry.dags).toEqual(run.dags);
    expect(await planRows(ds, 'ended-100m', 'deleted')).toEqual({
      ...zero(),
      workflow_dags: 1,
      workflow_checkpoints: 2,
    });
    expect(await planRows(ds, 'cancelled-2h', 'deleted')).toEqual({
      ...zero(),
      workflow_dags: 1,
      workflow_checkpoints: 2,
    });
    for (const id of ['ended-80m', 'failed-1d', 'running']) expect(await planRows(ds, id, 'deleted')).toEqual(zero());

    // stored now: shown without the TTL, and by the CLI (one line, exit 1: it cannot be resumed)
    expect(await getResumePoint(ds, 'ended-80m')).toMatchObject({ resumable: false, expiresAt: due });
    expect(await getResumePoint(ds, 'failed-1d', { dagTtlMinutes: 90 })).toMatchObject({
      resumable: false,
      expiresAt: null,
    });
    const cli = await runCli(['workflows', 'resume-point', 'ended-80m', '--json'], { DATABASE_URL: url });
    expect(cli.code).toBe(1);
    expect(JSON.parse(cli.stdout)).toMatchObject({ workflowId: 'ended-80m', resumable: false, expiresAt: due });
    expect(cli.stderr.trim()).toContain(`its DAG and checkpoints expire at ${due}`);

    // a stamped expires_at is kept: a longer TTL set later does not postpone it
    const longer = retentionPolicy({ ...policy, dagTtlMinutes: 10 * 24 * 60 });
    expect((await runRetention(ds, longer, { now: later(10 * MIN) })).dags).toMatchObject({ expired: 1, stamped: 0 });
    expect(await planRows(ds, 'ended-80m', 'deleted')).toEqual({
      ...zero(),
      workflow_dags: 1,
      workflow_checkpoints: 2,
    });
  });

  it("keeps a plan's DAG and checkpoints while a fork of it lives; they expire a run after its last fork", async () => {
    await insertPlans(ds, [
      // a live fork (running) that starts from its parent's checkpoint c0
      { id: 'parent', status: 'completed', completedAt: ago(100 * MIN) },
      { id: 'fork', status: 'executing', createdAt: ago(10 * MIN), forkOf: 'parent', checkpoints: 0 },
      // a fork this run retires (completed 40 days ago): its parent goes at the next run
      { id: 'parent-2', status: 'cancelled', completedAt: ago(100 * MIN) },
      { id: 'fork-2', status: 'completed', completedAt: ago(40 * DAY), forkOf: 'parent-2' },
      // a fork retired before: it keeps nothing
      { id: 'parent-3', status: 'completed', completedAt: ago(100 * MIN) },
      { id: 'fork-3', status: 'completed', completedAt: ago(40 * DAY), forkOf: 'parent-3', deletedAt: ago(DAY) },
      { id: 'lone', status: 'completed', completedAt: ago(100 * MIN) },
    ]);
    const expired = async (ids: string[]) => {
      const out: string[] = [];
      for (const id of ids) if ((await planRows(ds, id, 'deleted')).workflow_dags > 0) out.push(id);
      return out;
    };
    const parents = ['parent', 'parent-2', 'parent-3', 'lone'];

    const dry = await runRetention(ds, policy, { now: NOW, dryRun: true });
    const run = await runRetention(ds, policy, { now: NOW });
    expect(dry.dags).toEqual(run.dags);
    expect(run.dags).toMatchObject({ expired: 2 });
    expect(run.plans.softDeleted).toBe(1); // fork-2
    expect(await expired(parents)).toEqual(['parent-3', 'lone']);
    // the kept ones are stamped as any: they expire once no fork lives, by that stamp
    for (const id of ['parent', 'parent-2'])
      expect({ id, ...(await planRows(ds, id, 'live')) }).toMatchObject({
        id,
        workflow_dags: 1,
        workflow_checkpoints: 2,
      });
    // the fork resumes from its parent's checkpoint
    expect(await getResumePoint(ds, 'fork')).toMatchObject({
      resumable: true,
      latestCheckpoint: { checkpointId: 'c0', layer: 0 },
      nextLayer: 1,
    });

    // the next run: parent-2's fork was retired by the last one; parent's fork still runs
    const next = later(MIN);
    const dry2 = await runRetention(ds, policy, { now: next, dryRun: true });
    const run2 = await runRetention(ds, policy, { now: next });
    expect(dry2.dags).toEqual(run2.dags);
    expect(run2.dags).toMatchObject({ expired: 1 });
    expect(await expired(parents)).toEqual(['parent-2', 'parent-3', 'lone']);

    // parent's fork ends and is retired: its DAG expires a run later
    await ds
      .createQueryBuilder()
      .update(ENTITY.plan)
      .set({ status: 'completed', completedAt: ago(40 * DAY, next) })
      .where({ id: 'fork' })
      .execute();
    const third = later(2 * MIN);
    expect((await runRetention(ds, policy, { now: third })).dags).toMatchObject({ expired: 0 });
    expect(await planRows(ds, 'fork', 'deleted')).toMatchObject({ execution_plans: 1 });
    expect((await runRetention(ds, policy, { now: later(3 * MIN) })).dags).toMatchObject({ expired: 1 });
    expect(await expired(parents)).toEqual(parents);
    expect(await planRows(ds, 'parent', 'deleted')).toMatchObject({ workflow_dags: 1, workflow_checkpoints: 2 });
  });

  it('never retires nor expires a plan awaiting a decision or with unfinished layers, however old', async () => {
    const old = ago(20 * 365 * DAY);
    await insertPlans(ds, [
      { id: 'awaiting-decision', status: 'planning', createdAt: old, lastActivity: old },
      { id: 'layers-unfinished', status: 'executing', createdAt: old, lastActivity: old },
    ]);
    await ds
      .createQueryBuilder()
      .update(ENTITY.plan)
      .set({ approvalStatus: 'pending' })
      .where({ id: 'awaiting-decision' })
      .execute();
    const aggressive = retentionPolicy({
      completedDays: 1,
      failedDays: 1,
      cancelledDays: 1,
      graceDays: 0,
      dagTtlMinutes: 1,
      orphanDays: 1,
      batchSize: 2,
    });
    for (const now of [NOW, later(1000 * DAY)]) {
      const r = await runRetention(ds, aggressive, { now });
      expect({ plans: r.plans, dags: r.dags }).toEqual({
        plans: { softDeleted: 0, purged: 0 },
        dags: { expired: 0, purged: 0, stamped: 0 },
      });
    }
    for (const id of ['awaiting-decision', 'layers-unfinished'])
      expect(await planRows(ds, id, 'deleted')).toEqual(zero());
    expect(await getResumePoint(ds, 'awaiting-decision', { dagTtlMinutes: 1 })).toMatchObject({
      resumable: false,
      reason: 'it is still waiting for an approval decision',
      expiresAt: null,
    });
    expect(await getResumePoint(ds, 'layers-unfinished', { dagTtlMinutes: 1 })).toMatchObject({
      resumable: true,
      expiresAt: null,
    });
  });
});
