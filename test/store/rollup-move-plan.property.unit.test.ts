import fc from 'fast-check';
import type { PlanStatus } from '../../src/store/entities';
import { allZero, ROLLUP_COUNTS, RollupDelta, type RollupPlan } from '../../src/store/rollups/rollup-rows';

/**
 * RollupDelta.movePlan, what the applier calls for a stored plan whose day, session and
 * retirement stay: the rows it changes are those `addPlan(before, [], -1)` then
 * `addPlan(now, [], 1)` change, whatever the statuses and tokens.
 */
const STATUSES: PlanStatus[] = ['planning', 'executing', 'completed', 'failed', 'cancelled'];

const planArb = (base: Pick<RollupPlan, 'id' | 'sessionId' | 'createdAt' | 'deletedAt'>) =>
  fc
    .record({
      status: fc.constantFrom(...STATUSES),
      totalInputTokens: fc.integer({ min: 0, max: 5_000_000 }),
      totalOutputTokens: fc.integer({ min: 0, max: 5_000_000 }),
    })
    .map((p): RollupPlan => ({ ...base, ...p }));

const pairArb = fc
  .record({
    sessionId: fc.constantFrom('s-1', 's-2'),
    createdAt: fc.date({
      min: new Date('2026-01-01T00:00:00Z'),
      max: new Date('2026-12-31T23:59:59Z'),
      noInvalidDate: true,
    }),
    deleted: fc.boolean(),
  })
  .chain(({ sessionId, createdAt, deleted }) => {
    const base = { id: 'p-1', sessionId, createdAt, deletedAt: deleted ? new Date('2027-01-01T00:00:00Z') : null };
    return fc.tuple(planArb(base), planArb(base));
  });

describe('RollupDelta.movePlan', () => {
  it('writes the rows addPlan -1 then +1 writes, with a plan already counted in the same delta', () => {
    fc.assert(
      fc.property(pairArb, fc.boolean(), ([before, now], counted) => {
        const moved = new RollupDelta();
        const added = new RollupDelta();
        for (const d of [moved, added]) if (counted) d.addPlan(before, [], 1);
        moved.movePlan(before, now);
        added.addPlan(before, [], -1);
        added.addPlan(now, [], 1);
        expect(moved.changed()).toEqual(added.changed());
      }),
      { numRuns: 500 },
    );
  });
});

describe('allZero', () => {
  it('looks at every counter of ROLLUP_COUNTS: a row with any one of them set is written', () => {
    const zero = Object.fromEntries(ROLLUP_COUNTS.map((k) => [k, 0])) as Record<(typeof ROLLUP_COUNTS)[number], number>;
    expect(allZero(zero)).toBe(true);
    for (const k of ROLLUP_COUNTS) expect([k, allZero({ ...zero, [k]: 1 })]).toEqual([k, false]);
  });
});
