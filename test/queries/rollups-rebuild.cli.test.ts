import type { DataSource } from 'typeorm';
import { MigrationExecutor } from 'typeorm';
import { MIGRATIONS } from '../../migrations';
import type { PlanEvent } from '../../src/contracts';
import { handoffPatterns, handoffPatternsScan, plansPerDay, plansPerDayScan } from '../../src/queries/analytics.query';
import { TOKEN_DIMENSIONS, tokenUsage, tokenUsageScan } from '../../src/queries/token-usage.query';
import { runMigrations } from '../../src/store/migrator';
import { PlanEventStore } from '../../src/store/plan-event-store';
import { runCli } from '../support/cli';
import { ALL_TEST_DBS, createMigratedDb } from '../support/databases';
import { planRun } from '../support/event-factory';

/**
 * `plan-ledger analytics rebuild-rollups` and the RollupSessionTokens migration's backfill: the
 * rollups of stored plans summed again from their rows, on SQLite, PostgreSQL and MariaDB.
 */

/** Plans on 2026-03-01..03 (two a day), their completed steps with cache and reasoning tokens. */
function history(): PlanEvent[] {
  const out: PlanEvent[] = [];
  for (let day = 1; day <= 3; day++)
    for (let n = 0; n < 2; n++) {
      const events = planRun({
        seed: day * 10 + n,
        planId: `rb-plan-${day}-${n}`,
        sessionId: `rb-sess-${n}`,
        startAt: new Date(`2026-03-0${day}T1${n}:00:00Z`),
      });
      out.push(
        ...events.map((e) =>
          e.type === 'step.completed'
            ? ({ ...e, payload: { ...e.payload, cacheReadTokens: 40 + day, reasoningTokens: 7 * n } } as PlanEvent)
            : e,
        ),
      );
    }
  return out;
}

async function rollupRows(ds: DataSource, where = '1 = 1'): Promise<Array<{ day: string; kind: string }>> {
  return ds.query(`SELECT day, kind FROM analytics_rollups WHERE ${where} ORDER BY day, kind`);
}

async function expectRollupAnswers(ds: DataSource): Promise<void> {
  const { page, ...tokens } = await tokenUsage(ds, {}, TOKEN_DIMENSIONS, { limit: 1000 });
  expect(page?.hasMore).toBe(false);
  expect(tokens).toEqual(await tokenUsageScan(ds, {}));
  expect(tokens.total.cacheReadTokens).toBeGreaterThan(0);
  expect(await plansPerDay(ds, {})).toEqual(await plansPerDayScan(ds, {}));
  const handoffs = await handoffPatterns(ds, {});
  expect(handoffs).toEqual(await handoffPatternsScan(ds, {}));
  expect(handoffs.length).toBeGreaterThan(0);
}

describe.each(ALL_TEST_DBS)('rollups rebuilt on %s', (kind) => {
  let ds: DataSource;
  let url: string;
  let close: () => Promise<void>;

  beforeAll(async () => {
    const made = await createMigratedDb(kind);
    ({ ds, close } = made);
    url = made.db.url;
    await new PlanEventStore(ds).persist(history());
  });
  afterAll(async () => close?.());

  const cli = (...args: string[]) => runCli(['analytics', 'rebuild-rollups', ...args], { DATABASE_URL: url }, 120_000);

  it('rebuilds the days asked for, then all of them, to the answers of the full scans', async () => {
    await expectRollupAnswers(ds);
    await ds.query('DELETE FROM analytics_rollups');

    const some = await cli('--from', '2026-03-02', '--to', '2026-03-03', '--json');
    expect(some.code).toBe(0);
    expect(JSON.parse(some.stdout)).toMatchObject({ from: '2026-03-02', to: '2026-03-03', plans: 2 });
    expect(new Set((await rollupRows(ds)).map((r) => r.day))).toEqual(new Set(['2026-03-02']));

    const all = await cli();
    expect(all.code).toBe(0);
    expect(all.stdout).toMatch(
      /^rebuilt the analytics rollups of 6 live plan\(s\), the first day to the last, in [\d.]+ s\n$/,
    );
    // the days, and the sessions' rows of all days (0000-00-00)
    expect(new Set((await rollupRows(ds)).map((r) => r.day))).toEqual(
      new Set(['0000-00-00', '2026-03-01', '2026-03-02', '2026-03-03']),
    );
    await expectRollupAnswers(ds);
    // again: the days' rows are replaced, not added to
    expect((await cli('--from', '2026-03-01')).code).toBe(0);
    await expectRollupAnswers(ds);
  });

  it('refuses a bound that is not a whole UTC day, in one line, exit 2, nothing changed', async () => {
    const before = await rollupRows(ds);
    const bad = await cli('--from', '2026-03-02T10:00:00Z');
    expect(bad.code).toBe(2);
    expect(bad.stderr.trim().split('\n')).toEqual([
      expect.stringContaining(
        '--from: "2026-03-02T10:00:00Z" is not the start of a UTC day: give a date, e.g. 2026-02-01',
      ),
    ]);
    expect(await rollupRows(ds)).toEqual(before);
  });

  it('the RollupSessionTokens migration fills the session-tokens rows of stored plans', async () => {
    const names = MIGRATIONS.map((M) => new M().name);
    const at = names.indexOf('RollupSessionTokens1795224800000');
    for (let i = at; i < names.length; i++) await new MigrationExecutor(ds).undoLastMigration();
    expect(await rollupRows(ds, `kind = 'session-tokens'`)).toEqual([]);
    expect((await runMigrations(ds)).applied).toEqual(names.slice(at));
    expect((await rollupRows(ds, `kind = 'session-tokens'`)).length).toBe(6);
    await expectRollupAnswers(ds);
  });

  it('the HandoffRollups migration fills the handoff rows of stored plans', async () => {
    const names = MIGRATIONS.map((M) => new M().name);
    const at = names.indexOf('HandoffRollups1795227090000');
    const before = await rollupRows(ds, `kind = 'handoff'`);
    expect(before.length).toBeGreaterThan(0);
    for (let i = at; i < names.length; i++) await new MigrationExecutor(ds).undoLastMigration();
    expect(await rollupRows(ds, `kind = 'handoff'`)).toEqual([]);
    expect((await runMigrations(ds)).applied).toEqual(names.slice(at));
    expect(await rollupRows(ds, `kind = 'handoff'`)).toEqual(before);
    await expectRollupAnswers(ds);
  });
});
