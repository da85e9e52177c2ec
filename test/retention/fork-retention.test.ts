import type { DataSource } from 'typeorm';
import { ALL_TEST_DBS, createMigratedDb } from '../support/databases';
import { runCli } from '../support/cli';
import { runRetention } from '../../src/retention/retention.service';
import { restorePlan } from '../../src/retention/plan-restore';
import { retentionPolicy } from '../../src/retention/retention-config';
import type { RetentionReport } from '../../src/retention/retention-report';
import { ago, DAY, expectedRows, HOUR, insertPlans, later, NOW, planRows, wipe, zero } from './plan-fixtures';

const policy = retentionPolicy({ batchSize: 2 });

/** Which of these plans are live, soft-deleted, or gone. */
async function states(ds: DataSource, ids: string[]): Promise<Record<string, 'live' | 'retired' | 'purged'>> {
  const out: Record<string, 'live' | 'retired' | 'purged'> = {};
  for (const id of ids) {
    const [live, deleted] = [await planRows(ds, id, 'live'), await planRows(ds, id, 'deleted')];
    out[id] = live.execution_plans ? 'live' : deleted.execution_plans ? 'retired' : 'purged';
  }
  return out;
}

/** A dry run, then the run; both must report the same plans. */
async function run(ds: DataSource, now: Date): Promise<RetentionReport['plans']> {
  const dry = await runRetention(ds, policy, { now, dryRun: true });
  const done = await runRetention(ds, policy, { now });
  expect(dry.plans).toEqual(done.plans);
  return done.plans;
}

describe.each(ALL_TEST_DBS)('retention of forked plans on %s', (kind) => {
  let ds: DataSource;
  let close: () => Promise<void>;

  beforeAll(async () => {
    ({ ds, close } = await createMigratedDb(kind));
  });
  afterAll(async () => close?.());
  beforeEach(async () => wipe(ds));

  it('keeps the ancestors of a live fork; each goes a run after its last fork, retired and then purged', async () => {
    // root <- mid <- leaf, root and mid past their 30 days, leaf two hours old; other-fork has a
    // parent of its own and is past its time: it goes at once
    await insertPlans(ds, [
      { id: 'root', status: 'completed', completedAt: ago(40 * DAY) },
      { id: 'mid', status: 'failed', completedAt: ago(100 * DAY), forkOf: 'root', sessionId: 'sess-other' },
      { id: 'leaf', status: 'completed', completedAt: ago(2 * HOUR), forkOf: 'mid' },
      { id: 'lone', status: 'completed', completedAt: ago(40 * DAY) },
      { id: 'other-fork', status: 'completed', completedAt: ago(40 * DAY), forkOf: 'lone' },
    ]);
    const ids = ['root', 'mid', 'leaf', 'lone', 'other-fork'];
    expect(await run(ds, NOW)).toEqual({ softDeleted: 1, purged: 0 });
    expect(await states(ds, ids)).toEqual({
      root: 'live',
      mid: 'live',
      leaf: 'live',
      lone: 'live', // its fork was retired by this run: a later run retires it
      'other-fork': 'retired',
    });

    // a month on, leaf is due; each ancestor follows one run after its fork
    const t1 = later(31 * DAY);
    expect(await run(ds, t1)).toEqual({ softDeleted: 2, purged: 1 }); // leaf and lone retired, other-fork purged
    expect(await states(ds, ['root', 'mid', 'leaf', 'lone'])).toEqual({
      root: 'live',
      mid: 'live',
      leaf: 'retired',
      lone: 'retired',
    });
    expect(await run(ds, later(DAY, t1))).toEqual({ softDeleted: 1, purged: 0 }); // mid
    expect(await run(ds, later(2 * DAY, t1))).toEqual({ softDeleted: 1, purged: 0 }); // root
    expect(await states(ds, ['root', 'mid'])).toEqual({ root: 'retired', mid: 'retired' });

    // past the grace period of all of them, a plan is purged only once no fork row names it, a run later
    const t4 = later(20 * DAY, t1);
    expect(await run(ds, t4)).toEqual({ softDeleted: 0, purged: 2 }); // leaf, and lone (its fork went at t1)
    expect(await states(ds, ids)).toEqual({
      root: 'retired',
      mid: 'retired',
      leaf: 'purged',
      lone: 'purged',
      'other-fork': 'purged',
    });
    expect(await run(ds, later(DAY, t4))).toEqual({ softDeleted: 0, purged: 1 }); // mid
    expect(await run(ds, later(2 * DAY, t4))).toEqual({ softDeleted: 0, purged: 1 }); // root
    for (const id of ids) expect(await planRows(ds, id, 'all')).toEqual(zero());
  });

  it('never purges a soft-deleted plan while a fork row of it exists, live or soft-deleted', async () => {
    await insertPlans(ds, [
      // soft-deleted long ago (before its forks were kept track of), its forks younger
      { id: 'old-parent', status: 'completed', deletedAt: ago(60 * DAY) },
      { id: 'live-fork', status: 'completed', completedAt: ago(HOUR), forkOf: 'old-parent' },
      { id: 'old-parent-2', status: 'completed', deletedAt: ago(60 * DAY) },
      { id: 'retired-fork', status: 'completed', deletedAt: ago(2 * DAY), forkOf: 'old-parent-2' },
    ]);
    expect(await run(ds, NOW)).toEqual({ softDeleted: 0, purged: 0 });
    expect(await states(ds, ['old-parent', 'live-fork', 'old-parent-2', 'retired-fork'])).toEqual({
      'old-parent': 'retired',
      'live-fork': 'live',
      'old-parent-2': 'retired',
      'retired-fork': 'retired',
    });
    expect(await run(ds, later(6 * DAY))).toEqual({ softDeleted: 0, purged: 1 }); // retired-fork only
    expect(await run(ds, later(7 * DAY))).toEqual({ softDeleted: 0, purged: 1 }); // old-parent-2
    expect(await states(ds, ['old-parent', 'old-parent-2'])).toEqual({
      'old-parent': 'retired',
      'old-parent-2': 'purged',
    });
  });

  it('restores the soft-deleted ancestors of a restored fork, even past their own grace period', async () => {
    const specs = [
      { id: 'anc-root', status: 'completed' as const, deletedAt: ago(20 * DAY) },
      { id: 'anc-live', status: 'completed' as const, forkOf: 'anc-root' },
      { id: 'anc-mid', status: 'completed' as const, deletedAt: ago(2 * DAY), forkOf: 'anc-live' },
      { id: 'anc-fork', status: 'completed' as const, deletedAt: ago(DAY), forkOf: 'anc-mid' },
      { id: 'anc-sibling', status: 'completed' as const, deletedAt: ago(DAY), forkOf: 'anc-mid' },
    ];
    await insertPlans(ds, specs);
    const outcome = await restorePlan(ds, 'anc-fork', policy, { now: NOW });
    expect(outcome).toMatchObject({
      status: 'restored',
      planId: 'anc-fork',
      rows: expectedRows(specs[3]),
      ancestors: [
        { planId: 'anc-mid', deletedAt: ago(2 * DAY).toISOString(), rows: expectedRows(specs[2]) },
        { planId: 'anc-root', deletedAt: ago(20 * DAY).toISOString(), rows: expectedRows(specs[0]) },
      ],
    });
    expect(
      await states(
        ds,
        specs.map((s) => s.id),
      ),
    ).toEqual({
      'anc-root': 'live',
      'anc-live': 'live',
      'anc-mid': 'live',
      'anc-fork': 'live',
      'anc-sibling': 'retired', // only the chain above the fork
    });
    // a plan with no parent restores alone, as before
    expect(await restorePlan(ds, 'anc-sibling', policy, { now: NOW })).toMatchObject({
      status: 'restored',
      ancestors: [],
    });
  });

  if (kind === 'sqlite')
    it('plans restore names the ancestors it restored', async () => {
      const { db, ds: own, close: drop } = await createMigratedDb('sqlite');
      try {
        const now = new Date();
        await insertPlans(own, [
          { id: 'cli-parent', status: 'completed', deletedAt: new Date(now.getTime() - DAY) },
          { id: 'cli-fork', status: 'completed', deletedAt: new Date(now.getTime() - HOUR), forkOf: 'cli-parent' },
        ]);
        const out = await runCli(['plans', 'restore', 'cli-fork'], { DATABASE_URL: db.url });
        expect(out.code).toBe(0);
        expect(out.stdout).toMatch(
          /^restored plan cli-fork \(soft-deleted at .*\): 15 rows \(.*\); with its soft-deleted ancestors cli-parent \(15 rows\)\n$/,
        );
        expect(await states(own, ['cli-parent', 'cli-fork'])).toEqual({ 'cli-parent': 'live', 'cli-fork': 'live' });
      } finally {
        await drop();
      }
    });
});
