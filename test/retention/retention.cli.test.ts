import type { DataSource } from 'typeorm';
import { runCli } from '../support/cli';
import { createMigratedDb } from '../support/databases';
import { DAY, expectedRows, HOUR, insertPlans, PlanSpec, planRows, zero } from './plan-fixtures';

/** The CLI runs on the wall clock, so these plans are dated relative to the real now. */
const wallAgo = (ms: number) => new Date(Date.now() - ms);

const due: PlanSpec = { id: 'cli-due', status: 'completed', completedAt: wallAgo(40 * DAY) };
const restorable: PlanSpec = {
  id: 'cli-restorable',
  status: 'completed',
  completedAt: wallAgo(40 * DAY),
  deletedAt: wallAgo(HOUR),
};
const expired: PlanSpec = {
  id: 'cli-expired',
  status: 'failed',
  completedAt: wallAgo(200 * DAY),
  deletedAt: wallAgo(10 * DAY),
};
const live: PlanSpec = { id: 'cli-live', status: 'executing' };

describe('plan-ledger retention run / plans restore (child process)', () => {
  let ds: DataSource;
  let close: () => Promise<void>;
  let env: Record<string, string>;

  beforeAll(async () => {
    let url: string;
    ({
      ds,
      close,
      db: { url },
    } = await createMigratedDb('sqlite'));
    env = { DATABASE_URL: url };
    await insertPlans(ds, [due, restorable, expired, live]);
  });
  afterAll(async () => close?.());

  it('retention run --dry-run --json reports per table and changes nothing', async () => {
    const result = await runCli(['retention', 'run', '--dry-run', '--json'], env);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout);
    expect(report).toMatchObject({ dryRun: true, complete: true, plans: { softDeleted: 1, purged: 1 } });
    expect(report.tables.plan_steps).toEqual({
      softDeleted: expectedRows(due).plan_steps,
      purged: expectedRows(expired).plan_steps,
    });
    expect(await planRows(ds, due.id, 'live')).toEqual(expectedRows(due));
    expect(await planRows(ds, expired.id, 'deleted')).toEqual(expectedRows(expired));
  });

  it('plans restore: restores within grace (exit 0), else says why (exit 1); bad arguments exit 2', async () => {
    const ok = await runCli(['plans', 'restore', restorable.id], env);
    expect(ok).toMatchObject({ code: 0, stderr: '' });
    expect(ok.stdout).toMatch(
      /^restored plan cli-restorable \(soft-deleted at .*\): 15 rows \(plan_handoffs 1, .*plan_heads 1\)\n$/,
    );
    expect(await planRows(ds, restorable.id, 'live')).toEqual(expectedRows(restorable));

    const again = await runCli(['plans', 'restore', restorable.id], env);
    expect(again).toMatchObject({
      code: 1,
      stdout: '',
      stderr: 'plan-ledger: plan "cli-restorable" is not soft-deleted; nothing to restore\n',
    });
    const missing = await runCli(['plans', 'restore', 'no-such-plan'], env);
    expect(missing).toMatchObject({
      code: 1,
      stderr: 'plan-ledger: plan "no-such-plan" not found: it was never stored, or it has already been purged\n',
    });
    const late = await runCli(['plans', 'restore', expired.id], env);
    expect(late.code).toBe(1);
    expect(late.stderr).toMatch(
      /^plan-ledger: plan "cli-expired" was soft-deleted at .* and its grace period ended at .*: it is due for purge and can no longer be restored\n$/,
    );

    expect((await runCli(['plans', 'restore'], env)).code).toBe(2);
    const badId = await runCli(['plans', 'restore', 'bad id!'], env);
    expect(badId).toMatchObject({ code: 2, stderr: expect.stringContaining('planId: "bad id!" is not a plan id') });
  });

  it('names every bad RETENTION_* variable at once, exit 2, nothing done', async () => {
    const result = await runCli(['retention', 'run'], { ...env, RETENTION_GRACE_DAYS: 'soon', RETENTION_CRON: '* *' });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(
      /RETENTION_GRACE_DAYS: "soon" is not an integer; RETENTION_CRON: "\* \*" has 2 fields/,
    );
    expect(await planRows(ds, due.id, 'live')).toEqual(expectedRows(due));
  });

  it('retention run soft-deletes what is due and purges what is past grace', async () => {
    const result = await runCli(['retention', 'run'], env);
    expect(result).toMatchObject({ code: 0, stderr: '' });
    expect(result.stdout).toContain('plans: 1 soft-deleted, 1 purged');
    expect(result.stdout).toMatch(/^plan_steps\s+3\s+3$/m);
    expect(await planRows(ds, due.id, 'deleted')).toEqual(expectedRows(due));
    expect(await planRows(ds, expired.id, 'all')).toEqual(zero());
    expect(await planRows(ds, live.id, 'live')).toEqual(expectedRows(live));
  });
});
