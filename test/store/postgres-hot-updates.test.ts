import { randomUUID } from 'node:crypto';
import { PlanEventStore } from '../../src/store/plan-event-store';
import { createMigratedDb } from '../support/databases';
import { ev } from '../stalled/support/stall-events';

/**
 * PostgreSQL updates a row on its page without touching the table's indexes (a HOT update) only
 * when no indexed column changes. The updates the worker writes with nearly every event must stay
 * so: a plan head's new due time, a rollup row's new sums. Counted by PostgreSQL itself for the
 * transaction (pg_stat_xact_user_tables), then rolled back.
 */
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
      // the connection's counts not yet sent to the statistics may include earlier transactions': a delta
      const counts = async () =>
        Object.fromEntries(
          (
            (await qr.query(
              `SELECT relname, n_tup_upd AS upd, n_tup_hot_upd AS hot FROM pg_stat_xact_user_tables
                 WHERE schemaname = current_schema() AND relname IN ('plan_heads', 'analytics_rollups')`,
            )) as Array<{ relname: string; upd: string; hot: string }>
          ).map((c) => [c.relname, { upd: Number(c.upd), hot: Number(c.hot) }]),
        ) as Record<string, { upd: number; hot: number }>;
      try {
        const before = await counts();
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
        const after = await counts();
        const delta = (t: string) => ({
          upd: after[t].upd - (before[t]?.upd ?? 0),
          hot: after[t].hot - (before[t]?.hot ?? 0),
        });
        expect(delta('plan_heads')).toEqual({ upd: 1, hot: 1 });
        expect(rollups).toBeGreaterThan(1);
        expect(delta('analytics_rollups')).toEqual({ upd: rollups, hot: rollups });
      } finally {
        await qr.rollbackTransaction();
        await qr.release();
      }
    } finally {
      await db.close();
    }
  });
});
