/**
 * The tokens report's plan pages, followed by their cursors, are the whole plan list of the scan,
 * in order, while the plans' token counters grow, plans are retired, restored and purged between
 * reads: the writes that leave an index's entries to the database (IX_execution_plans_tokens is
 * on a computed column on MySQL/MariaDB and SQL Server). On MariaDB 10.11 a VIRTUAL column's index
 * read beside a rowid filter or an index merge (`deleted_at IS NULL`) lost plans here within a few
 * dozen rounds; the column is STORED since migration 1795227170000.
 */
import * as fc from 'fast-check';
import type { DataSource } from 'typeorm';
import { ENTITY } from '../../src/store/entities';
import { tokenUsage, tokenUsageScan } from '../../src/queries/token-usage.query';
import { ALL_TEST_DBS, createMigratedDb } from '../support/databases';

const ROUNDS = 120;
const DAY0 = Date.UTC(2026, 5, 1);
const HOUR = 3_600_000;

describe.each(ALL_TEST_DBS)('tokens report plan pages (%s)', (kind) => {
  let ds: DataSource;
  let close: () => Promise<void>;

  beforeAll(async () => {
    ({ ds, close } = await createMigratedDb(kind));
    await ds
      .getRepository(ENTITY.session)
      .insert({ id: 'sess-tp', createdAt: new Date(DAY0), updatedAt: new Date(DAY0) });
  });
  afterAll(async () => close?.());

  it(`every plan once, largest first, ids breaking ties, across ${ROUNDS} rounds of writes`, async () => {
    // one fixed sample: the rounds are the same on every run
    const rounds = fc.sample(
      fc.record({
        plans: fc.array(
          fc.record({
            tokens: fc.oneof(fc.constant(0), fc.nat(50)),
            grow: fc.option(fc.nat(3)),
            hour: fc.nat(99),
          }),
          { minLength: 1, maxLength: 12 },
        ),
        retire: fc.nat(9),
        purge: fc.nat(9),
        restore: fc.nat(9),
        limit: fc.integer({ min: 1, max: 3 }),
        to: fc.option(fc.nat(99)),
      }),
      { numRuns: ROUNDS, seed: 20261130 },
    );
    const plans = ds.getRepository(ENTITY.plan);
    for (const [n, round] of rounds.entries()) {
      for (const [i, p] of round.plans.entries()) {
        const id = `plan_tp_${String(n).padStart(3, '0')}_${String(i).padStart(2, '0')}`;
        const at = new Date(DAY0 + p.hour * HOUR);
        await plans.insert({
          id,
          sessionId: 'sess-tp',
          query: 'q',
          status: 'executing',
          totalSteps: 1,
          completedSteps: 0,
          failedSteps: 0,
          skippedSteps: 0,
          totalInputTokens: p.tokens,
          totalOutputTokens: 0,
          totalCost: '0',
          unpricedSteps: 0,
          requiresApproval: false,
          createdAt: at,
          updatedAt: at,
        });
        if (p.grow !== null)
          await plans
            .createQueryBuilder()
            .update()
            .set({
              totalInputTokens: () => `${ds.driver.escape('total_input_tokens')} + ${p.grow}`,
              totalOutputTokens: () => `${ds.driver.escape('total_output_tokens')} + 1`,
            })
            .where('id = :id', { id })
            .execute();
      }
      const live = await plans.find({ select: { id: true, deletedAt: true }, withDeleted: true });
      // a few plans retired, purged (when retired) and restored: every 10th of them, shifted by the round
      const pick = (shift: number, f: (p: (typeof live)[number]) => boolean) =>
        live.filter((p, i) => f(p) && (i + shift) % 10 === 0).map((p) => p.id);
      const retire = pick(round.retire, (p) => p.deletedAt === null);
      const purge = pick(round.purge, (p) => p.deletedAt !== null);
      const restore = pick(round.restore, (p) => p.deletedAt !== null && !purge.includes(p.id));
      if (retire.length) await plans.update(retire, { deletedAt: new Date(DAY0 + 400 * 24 * HOUR) });
      if (purge.length) await plans.delete(purge);
      if (restore.length) await plans.update(restore, { deletedAt: null });

      const range = round.to === null ? {} : { to: new Date(DAY0 + round.to * HOUR) };
      const whole = (await tokenUsageScan(ds, range, ['plan'])).byPlan;
      const seen: unknown[] = [];
      let cursor: string | undefined;
      do {
        const page = await tokenUsage(ds, range, ['plan'], { limit: round.limit, ...(cursor ? { cursor } : {}) });
        seen.push(...page.byPlan!);
        cursor = page.page!.nextCursor ?? undefined;
      } while (cursor);
      expect({ round: n, plans: seen }).toEqual({ round: n, plans: whole });
    }
  }, 240_000);
});
