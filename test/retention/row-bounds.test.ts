import type { DataSource } from 'typeorm';
import { ALL_TEST_DBS, createMigratedDb } from '../support/databases';
import { runRetention } from '../../src/retention/retention.service';
import { eraseSession } from '../../src/retention/session-erasure';
import { retentionPolicy } from '../../src/retention/retention-config';
import type { RetentionReport } from '../../src/retention/retention-report';
import {
  ago,
  DAY,
  expectedRows,
  insertPlans,
  later,
  NOW,
  PlanSpec,
  planRows,
  sessionRows,
  sum,
  wipe,
  zero,
} from './plan-fixtures';

/**
 * Transactions bounded by rows: plans with more rows than RETENTION_MAX_ROWS are purged and erased
 * in chunks, one transaction each, and what a stopped run leaves half done is finished by the
 * next. A soft delete changes two rows a plan (its row and head), whatever its size.
 */
const MAX_ROWS = 100;
const policy = retentionPolicy({ maxRowsPerTransaction: MAX_ROWS, batchSize: 50 });

/** 120 steps: 247 rows besides its plan row and head, 3 chunks of 98 (100 less the plan row and head). */
const big = (id: string, extra: Partial<PlanSpec> = {}): PlanSpec => ({
  id,
  status: 'completed',
  completedAt: ago(40 * DAY),
  steps: 120,
  sessionId: 'sess-big',
  ...extra,
});
const children = (spec: PlanSpec) => {
  const rows = expectedRows(spec);
  return Object.values(rows).reduce((a, b) => a + b, 0) - rows.execution_plans - rows.plan_heads;
};

function counts(report: RetentionReport, kind: 'softDeleted' | 'purged') {
  return Object.fromEntries(Object.entries(report.tables).map(([t, c]) => [t, c[kind]]));
}

describe.each(ALL_TEST_DBS)('transactions bounded by rows on %s', (kind) => {
  let ds: DataSource;
  let close: () => Promise<void>;

  beforeAll(async () => {
    ({ ds, close } = await createMigratedDb(kind));
  });
  afterAll(async () => close?.());
  beforeEach(async () => wipe(ds));

  it('soft-deletes plans larger than the budget whole, purges them in chunks, and leaves nothing behind', async () => {
    const plans: PlanSpec[] = [
      big('big-1'),
      big('big-2'),
      // 15 rows each: 6 of them per transaction
      ...Array.from({ length: 10 }, (_, i) => ({
        id: `small-${i}`,
        status: 'completed' as const,
        completedAt: ago(40 * DAY),
        sessionId: 'sess-big',
      })),
    ];
    expect(children(plans[0])).toBe(247);
    await insertPlans(ds, plans);

    const dry = await runRetention(ds, policy, { now: NOW, dryRun: true });
    const soft = await runRetention(ds, policy, { now: NOW });
    expect(soft).toMatchObject({ complete: true, plans: { softDeleted: 12 }, maxRowsPerTransaction: MAX_ROWS });
    expect(counts(soft, 'softDeleted')).toEqual(sum(plans));
    // two rows a plan: the 12 plans in one transaction; the dry run counts the same
    expect(soft.batches).toBe(1);
    expect({ ...dry, durationMs: 0, pausedMs: 0 }).toEqual({ ...soft, dryRun: true, durationMs: 0, pausedMs: 0 });
    for (const p of plans) expect(await planRows(ds, p.id, 'deleted')).toEqual(expectedRows(p));

    const purgeDry = await runRetention(ds, policy, { now: later(8 * DAY), dryRun: true });
    const purge = await runRetention(ds, policy, { now: later(8 * DAY) });
    expect(purge).toMatchObject({ complete: true, plans: { purged: 12 }, sessions: { purged: 1 } });
    expect(counts(purge, 'purged')).toEqual(sum(plans));
    // 3 chunks per big plan, 2 transactions for the small ones
    expect(purge.batches).toBe(3 + 3 + 2);
    // the dry run leaves the plans' events in place, so it also examines them as orphans: more batches
    const timeless = { durationMs: 0, pausedMs: 0, batches: 0 };
    expect({ ...purgeDry, ...timeless }).toEqual({ ...purge, dryRun: true, ...timeless });
    for (const p of plans) expect(await planRows(ds, p.id, 'all')).toEqual(zero());
    expect(await sessionRows(ds, ['sess-big'])).toEqual({ 'sess-big': 0 });
  });

  it('a purge stopped between chunks leaves the plan row, so the next run finishes the plan', async () => {
    const plan = big('big-cut', { deletedAt: ago(30 * DAY) });
    await insertPlans(ds, [plan]);
    const first = await runRetention(ds, policy, { now: NOW, maxBatches: 2 });
    expect(first).toMatchObject({ complete: false, stoppedBy: 'maxBatches', batches: 2, plans: { purged: 0 } });
    const left = await planRows(ds, plan.id, 'all');
    // two chunks of 98 child rows gone; the plan row and head stay until the last
    expect(Object.values(left).reduce((a, b) => a + b, 0)).toBe(children(plan) - 2 * (MAX_ROWS - 2) + 2);
    expect(left).toMatchObject({ execution_plans: 1, plan_heads: 1 });
    expect(await sessionRows(ds, ['sess-big'])).toEqual({ 'sess-big': 1 });

    const rest = await runRetention(ds, policy, { now: NOW });
    expect(rest).toMatchObject({ complete: true, batches: 1, plans: { purged: 1 }, sessions: { purged: 1 } });
    const total = sum([plan]);
    const both = Object.fromEntries(
      Object.keys(total).map((t) => [t, counts(first, 'purged')[t] + counts(rest, 'purged')[t]]),
    );
    expect(both).toEqual(total);
    expect(await planRows(ds, plan.id, 'all')).toEqual(zero());
  });

  it('a soft delete of a plan larger than the budget is one transaction stamping its row and head only', async () => {
    const plan = big('big-retire');
    await insertPlans(ds, [plan]);
    const first = await runRetention(ds, policy, { now: NOW, maxBatches: 1 });
    expect(first).toMatchObject({ batches: 1, plans: { softDeleted: 1 } });
    expect(counts(first, 'softDeleted')).toEqual(expectedRows(plan));
    expect(await planRows(ds, plan.id, 'live')).toEqual(zero());
    expect(await planRows(ds, plan.id, 'deleted')).toEqual(expectedRows(plan));
    expect(await planRows(ds, plan.id, 'stamped')).toEqual({ ...zero(), execution_plans: 1, plan_heads: 1 });
  });

  it('erases a session whose plans are larger than the budget, in chunks, counting every row', async () => {
    const plans = [big('big-e1', { status: 'executing', completedAt: null }), big('big-e2')];
    await insertPlans(ds, plans);
    const dry = await eraseSession(ds, 'sess-big', { dryRun: true, maxRowsPerTransaction: MAX_ROWS });
    const done = await eraseSession(ds, 'sess-big', { maxRowsPerTransaction: MAX_ROWS });
    expect(done.tables).toEqual({ ...sum(plans), sessions: 1 });
    expect(dry.tables).toEqual(done.tables);
    for (const p of plans) expect(await planRows(ds, p.id, 'all')).toEqual(zero());
    expect(await sessionRows(ds, ['sess-big'])).toEqual({ 'sess-big': 0 });
  });
});
