/**
 * A session row deleted by retention or erasure while a worker writes a new plan for that session.
 * The worker's transaction takes the new plan's head lock, upserts the session row, then inserts
 * the plan row (PlanWrites.write); here it is held open, uncommitted, while retention or erasure runs.
 * A snapshot read sees no plan of the session; a session row deleted on that basis would take the
 * new plan with it (execution_plans references sessions ON DELETE CASCADE).
 */
import type { DataSource, QueryRunner } from 'typeorm';
import { createMigratedDb, withMssql } from '../support/databases';
import { planRun } from '../support/event-factory';
import { runRetention } from '../../src/retention/retention.service';
import { eraseSession } from '../../src/retention/session-erasure';
import { retentionPolicy } from '../../src/retention/retention-config';
import { PlanWrites } from '../../src/store/apply/plan-writes';
import { lockHeads } from '../../src/store/ledger/plan-heads';
import { newHead } from '../../src/store/ledger/plan-heads';
import { foldPlan } from '../../src/store/projection/fold-plan';
import { sqlDialectOf } from '../../src/store/sql/dialects';
import { DAY, expectedRows, insertPlans, NOW, planRows, sessionRows, wipe, zero } from './plan-fixtures';

/** A worker's transaction for plan.created of `planId` in `sessionId`, left open: the caller commits it. */
async function openWorkerTransaction(ds: DataSource, planId: string, sessionId: string): Promise<QueryRunner> {
  const dialect = sqlDialectOf(ds);
  const runner = ds.createQueryRunner();
  await runner.connect();
  await runner.startTransaction('READ COMMITTED');
  try {
    const events = planRun({ seed: 7, planId, sessionId, steps: 2, startAt: new Date(NOW.getTime() - DAY) });
    await lockHeads(runner.manager, dialect, [newHead(planId, sessionId, NOW)]);
    const writes = new PlanWrites();
    writes.addRebuilt(foldPlan(events.slice(0, 1))!, null);
    await writes.write(dialect.rows(runner.manager));
  } catch (err) {
    await runner.rollbackTransaction();
    await runner.release();
    throw err;
  }
  return runner;
}

/** Runs `work` while the worker's transaction is open; commits the worker once `work` has waited 500 ms. */
async function whileWorkerWrites<T>(
  worker: QueryRunner,
  work: () => Promise<T>,
): Promise<{ result: T; finishedBeforeCommit: boolean }> {
  let finished = false;
  const running = work().finally(() => (finished = true));
  running.catch(() => undefined);
  try {
    await new Promise((resolve) => setTimeout(resolve, 500));
    const finishedBeforeCommit = finished;
    await worker.commitTransaction();
    return { result: await running, finishedBeforeCommit };
  } finally {
    if (worker.isTransactionActive) await worker.rollbackTransaction();
    await worker.release();
  }
}

// SQLite runs one writer at a time: a worker's transaction and a purge cannot interleave there.
describe.each(withMssql(['postgres', 'mariadb']))('a session written to while its rows are deleted, on %s', (kind) => {
  let ds: DataSource;
  let close: () => Promise<void>;

  beforeAll(async () => {
    ({ ds, close } = await createMigratedDb(kind));
  });
  afterAll(async () => close?.());
  beforeEach(async () => wipe(ds));

  it("retention's purge keeps a session a worker is adding a plan to, and the new plan", async () => {
    // the session's only plan is due for purge
    await insertPlans(ds, [{ id: 'old-plan', sessionId: 'sess-R', status: 'completed', deletedAt: NOW }]);
    const worker = await openWorkerTransaction(ds, 'new-plan', 'sess-R');
    const { result: report } = await whileWorkerWrites(worker, () =>
      runRetention(ds, retentionPolicy(), { now: new Date(NOW.getTime() + 8 * DAY) }),
    );

    expect(report.plans.purged).toBe(1);
    expect(report.sessions.purged).toBe(0);
    expect(await planRows(ds, 'old-plan', 'all')).toEqual(zero());
    expect(await sessionRows(ds, ['sess-R'])).toEqual({ 'sess-R': 1 });
    const kept = await planRows(ds, 'new-plan', 'all');
    expect(kept.execution_plans).toBe(1);
    expect(kept.plan_steps).toBe(2);
    expect(kept.plan_heads).toBe(1);
  });

  it('erasure waits for the worker, then erases the plan it wrote too, and counts it', async () => {
    await insertPlans(ds, [{ id: 'old-plan', sessionId: 'sess-E', status: 'completed' }]);
    const worker = await openWorkerTransaction(ds, 'new-plan', 'sess-E');
    const { result: report } = await whileWorkerWrites(worker, () => eraseSession(ds, 'sess-E'));

    expect(await sessionRows(ds, ['sess-E'])).toEqual({ 'sess-E': 0 });
    for (const id of ['old-plan', 'new-plan']) expect(await planRows(ds, id, 'all')).toEqual(zero());
    const old = expectedRows({ id: 'old-plan', status: 'completed' });
    // the new plan: its plan row, 2 steps, its DAG and its head (no event rows: this worker wrote none)
    expect(report.tables).toMatchObject({
      execution_plans: 2,
      plan_steps: old.plan_steps + 2,
      workflow_dags: 2,
      plan_heads: 2,
      sessions: 1,
    });
    expect(report.plans).toBe(2);
  });
});
