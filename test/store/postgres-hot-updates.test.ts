import { randomUUID } from 'node:crypto';
import type { QueryRunner } from 'typeorm';
import { PlanEventStore } from '../../src/store/plan-event-store';
import { createMigratedDb } from '../support/databases';
import { ev } from '../stalled/support/stall-events';

/**
 * PostgreSQL updates a row on its page without touching the table's indexes (a HOT update) only
 * when no indexed column changes. The updates the worker writes with nearly every event must stay
 * so: a plan head's new due time, a rollup row's new sums, a running plan's token counters, a
 * step's end with a priced cost. Counted by PostgreSQL itself for the transaction
 * (pg_stat_xact_user_tables), then rolled back.
 */
/**
 * The updates and HOT updates of `table` since the last call for it (the first: since `hotCounter`),
 * in `qr`'s transaction. The connection's counts not yet sent to the statistics may include earlier
 * transactions': deltas only.
 */
async function hotCounter(qr: QueryRunner): Promise<(table: string) => Promise<{ upd: number; hot: number }>> {
  const counts = async () =>
    Object.fromEntries(
      (
        (await qr.query(
          `SELECT relname, n_tup_upd AS upd, n_tup_hot_upd AS hot FROM pg_stat_xact_user_tables
             WHERE schemaname = current_schema()`,
        )) as Array<{ relname: string; upd: string; hot: string }>
      ).map((c) => [c.relname, { upd: Number(c.upd), hot: Number(c.hot) }]),
    ) as Record<string, { upd: number; hot: number }>;
  const before = await counts();
  return async (table) => {
    const now = (await counts())[table] ?? { upd: 0, hot: 0 };
    const was = before[table] ?? { upd: 0, hot: 0 };
    before[table] = now;
    return { upd: now.upd - was.upd, hot: now.hot - was.hot };
  };
}

describe('PostgreSQL: HOT updates of the rows events update', () => {
  it('a head update that moves the due time and a rollup update that moves tokens touch no index', async () => {
    const db = await createMigratedDb('postgres');
    try {
      const planId = `hot-${randomUUID()}`;
      const steps = [{ stepId: 'a', index: 0, agentId: 'coder', task: 'a' }];
      await new PlanEventStore(db.ds).persist([
        ev(planId, 0, 'plan.created', { query: 'q', steps }),
        ev(planId, 1, 'step.started', { stepId: 'a' }),
        ev(planId, 2, 'step.completed', { stepId: 'a', inputTokens: 10, outputTokens: 5 }),
      ]);
      // the session-total row holds its sum in the indexed column; every other kind NULL
      const totals: Array<{ kind: string; sum: string; total: string | null }> = await db.ds.query(
        'SELECT kind, input_tokens + output_tokens AS sum, total_tokens AS total FROM analytics_rollups ORDER BY kind',
      );
      expect(totals.length).toBeGreaterThan(2);
      for (const r of totals) expect([r.kind, r.total]).toEqual([r.kind, r.kind === 'session-total' ? r.sum : null]);

      const qr = db.ds.createQueryRunner();
      await qr.startTransaction();
      try {
        const delta = await hotCounter(qr);
        await qr.query(
          `UPDATE plan_heads SET stall_due_at = stall_due_at + interval '1 minute', version = version + 1,
             event_count = event_count + 1, last_seq = last_seq + 1, updated_at = now() WHERE plan_id = $1`,
          [planId],
        );
        const moved = "kind IN ('step', 'plan', 'session-cost')";
        const [{ n: rollups }] = await qr.query(`SELECT count(*)::int AS n FROM analytics_rollups WHERE ${moved}`);
        await qr.query(
          `UPDATE analytics_rollups SET items = items + 1, input_tokens = input_tokens + 7, output_tokens = output_tokens + 3 WHERE ${moved}`,
        );
        expect(await delta('plan_heads')).toEqual({ upd: 1, hot: 1 });
        expect(rollups).toBeGreaterThan(1);
        expect(await delta('analytics_rollups')).toEqual({ upd: rollups, hot: rollups });
      } finally {
        await qr.rollbackTransaction();
        await qr.release();
      }
    } finally {
      await db.close();
    }
  });

  it("a running plan's token counters and a step's end with a priced cost touch no index; an ended plan's and a reported step's do", async () => {
    const db = await createMigratedDb('postgres');
    try {
      const running = `hot-run-${randomUUID()}`;
      const ended = `hot-end-${randomUUID()}`;
      const steps = [
        { stepId: 'a', index: 0, agentId: 'coder', task: 'a' },
        { stepId: 'b', index: 1, agentId: 'coder', task: 'b' },
      ];
      const usage = { inputTokens: 10, outputTokens: 5, model: 'gpt-4o', provider: 'openai' };
      await new PlanEventStore(db.ds).persist([
        ev(running, 0, 'plan.created', { query: 'q', steps }),
        ev(running, 1, 'step.started', { stepId: 'a' }),
        ev(running, 2, 'step.completed', { stepId: 'a', ...usage }),
        ev(running, 3, 'step.started', { stepId: 'b' }),
        ev(ended, 0, 'plan.created', { query: 'q', steps }),
        ev(ended, 1, 'step.started', { stepId: 'a' }),
        ev(ended, 2, 'step.completed', { stepId: 'a', ...usage, reportedCost: '0.01' }),
        ev(ended, 3, 'plan.finalized', { status: 'completed' }),
      ]);
      // the indexed columns: the token total of ended plans only, the plan id of reported steps only
      expect(
        await db.ds.query('SELECT id, status, final_total_tokens AS total FROM execution_plans ORDER BY id = $1 DESC', [
          running,
        ]),
      ).toEqual([
        { id: running, status: 'executing', total: null },
        { id: ended, status: 'completed', total: '15' },
      ]);
      expect(
        await db.ds.query(
          'SELECT plan_id, step_index, cost_source, reported_plan_id FROM plan_steps ORDER BY plan_id = $1 DESC, step_index',
          [running],
        ),
      ).toEqual([
        { plan_id: running, step_index: 0, cost_source: 'table', reported_plan_id: null },
        { plan_id: running, step_index: 1, cost_source: null, reported_plan_id: null },
        { plan_id: ended, step_index: 0, cost_source: 'reported', reported_plan_id: ended },
        { plan_id: ended, step_index: 1, cost_source: null, reported_plan_id: null },
      ]);

      const qr = db.ds.createQueryRunner();
      await qr.startTransaction();
      try {
        const delta = await hotCounter(qr);
        const moveTokens = `UPDATE execution_plans SET total_input_tokens = total_input_tokens + 7,
            total_output_tokens = total_output_tokens + 3, completed_steps = completed_steps + 1, updated_at = now()
            WHERE id = $1`;
        await qr.query(moveTokens, [running]);
        expect(await delta('execution_plans')).toEqual({ upd: 1, hot: 1 });
        const endStep = (source: string) =>
          qr.query(
            `UPDATE plan_steps SET status = 'completed', cost_source = $2, input_tokens = 7, output_tokens = 3,
               completed_at = now() WHERE plan_id = $1 AND step_index = 1`,
            [running, source],
          );
        await endStep('table');
        expect(await delta('plan_steps')).toEqual({ upd: 1, hot: 1 });
        // the same updates where the indexed columns change: not HOT (the counts can tell)
        await qr.query(moveTokens, [ended]);
        expect(await delta('execution_plans')).toEqual({ upd: 1, hot: 0 });
        await endStep('reported');
        expect(await delta('plan_steps')).toEqual({ upd: 1, hot: 0 });
      } finally {
        await qr.rollbackTransaction();
        await qr.release();
      }
    } finally {
      await db.close();
    }
  });
});
