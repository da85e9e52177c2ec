import * as fc from 'fast-check';
import { DataSource } from 'typeorm';
import type { PlanEvent } from '../../src/contracts';
import {
  agentUsage,
  agentUsageScan,
  handoffPatterns,
  handoffPatternsScan,
  plansPerDay,
  plansPerDayScan,
} from '../../src/queries/analytics.query';
import { costUsage, costUsageScan } from '../../src/queries/cost-usage.query';
import type { DateRange } from '../../src/queries/query-args';
import { TOKEN_DIMENSIONS, tokenUsage, tokenUsageScan } from '../../src/queries/token-usage.query';
import { DEFAULT_RETENTION_POLICY, restorePlan, runRetention } from '../../src/retention';
import { eraseSession } from '../../src/retention/session-erasure';
import { PlanEventStore } from '../../src/store/plan-event-store';
import { rebuildRollups } from '../../src/store/rollups/rollup-rebuild';
import { sqlDialectOf } from '../../src/store/sql/dialects';
import { ALL_TEST_DBS, createMigratedDb } from '../support/databases';
import { planEvents } from '../support/fork-events';
import { arrivalArb, planLifeArb, schedule, seqLayoutArb, toEvents } from '../store/plan-events.arbitrary';

/**
 * The analytics read from the rollups (analytics_rollups) answer exactly what the full scans of
 * plans and steps answer, for random ranges (whole days, parts of days, open ends), after random
 * histories: plans of several sessions over several days, events in any order with duplicates,
 * seqs used twice (rebuilds), priced and unpriced steps, forks, retention (soft delete, restore,
 * purge) and session erasure; the handoff matrix too. The tokens report's pages of two lines,
 * followed by their cursors, are its whole session and plan lists. And `rollups rebuild` changes no answer.
 */
const RUNS = Number(process.env.PROPERTY_RUNS ?? 25);
const HOUR = 3_600_000;
const BASE = Date.UTC(2026, 5, 1, 12, 0, 0);

/** A plan's events moved by `hours` (the generator starts every plan at the same instant). */
function shifted(events: PlanEvent[], hours: number): PlanEvent[] {
  return events.map((e) => ({ ...e, occurredAt: new Date(Date.parse(e.occurredAt) + hours * HOUR).toISOString() }));
}

/** Half of the generator's models are ones the price table knows: those steps are priced, the others unpriced. */
const knownModel = (drafts: Array<{ type: string; payload: Record<string, unknown> }>) =>
  drafts.map((d) =>
    d.payload.model === 'm-large' ? { ...d, payload: { ...d.payload, model: 'gpt-4o', provider: 'openai' } } : d,
  );

/**
 * Cache and reasoning tokens on some completed steps (by `parts`, cycled: 0 leaves a step as it
 * is), a few on steps with no input or output tokens: the parts the tokens report sums.
 */
const withUsageParts = (drafts: Array<{ type: string; payload: Record<string, unknown> }>, parts: number[]) =>
  drafts.map((d, i) => {
    const n = parts[i % parts.length];
    if (d.type !== 'step.completed' || n === 0) return d;
    const usage = { cacheReadTokens: n, cacheWriteTokens: n % 3, reasoningTokens: n % 2 === 0 ? n * 2 : 0 };
    return { ...d, payload: { ...d.payload, ...usage, ...(n % 5 === 0 ? { inputTokens: 0, outputTokens: 0 } : {}) } };
  });

const planArb = fc.record({
  drafts: fc
    .tuple(
      planLifeArb,
      fc.array(fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 400 })), { minLength: 1, maxLength: 6 }),
    )
    .map(([drafts, parts]) => withUsageParts(knownModel(drafts), parts)),
  layout: seqLayoutArb,
  hours: fc.integer({ min: -30, max: 80 }),
  session: fc.nat(2),
});

type Op =
  { kind: 'retire' } | { kind: 'purge' } | { kind: 'restore'; plan: number } | { kind: 'erase'; session: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.constant<Op>({ kind: 'retire' }),
  fc.constant<Op>({ kind: 'purge' }),
  fc.nat(5).map((plan): Op => ({ kind: 'restore', plan })),
  fc.nat(2).map((session): Op => ({ kind: 'erase', session })),
);

/** An instant from a day before the first plan to a day after the last, on the hour or anywhere in it. */
const instantArb = fc
  .tuple(fc.integer({ min: -60, max: 110 }), fc.oneof(fc.constant(0), fc.nat(HOUR - 1)))
  .map(([h, ms]) => new Date(BASE + h * HOUR + ms));

const rangeArb: fc.Arbitrary<DateRange> = fc
  .record({ from: fc.option(instantArb), to: fc.option(instantArb) })
  .map(({ from, to }) => {
    const range: DateRange = {};
    if (from) range.from = from;
    if (to) range.to = to;
    if (from && to && from.getTime() >= to.getTime()) return { from: to, to: new Date(from.getTime() + 1) };
    return range;
  });

const caseArb = fc.record({
  plans: fc.array(planArb, { minLength: 1, maxLength: 5 }),
  forkDone: fc.option(fc.nat(2)),
  ops: fc.array(opArb, { maxLength: 3 }),
  late: fc.boolean(),
  ranges: fc.array(rangeArb, { minLength: 1, maxLength: 3 }),
});

async function expectSameAnswers(ds: DataSource, range: DateRange): Promise<void> {
  expect(await plansPerDay(ds, range)).toEqual(await plansPerDayScan(ds, range));
  expect(await agentUsage(ds, range)).toEqual(await agentUsageScan(ds, range));
  expect(await handoffPatterns(ds, range)).toEqual(await handoffPatternsScan(ds, range));
  const { page, ...tokens } = await tokenUsage(ds, range, TOKEN_DIMENSIONS, { limit: 1000 });
  expect(page?.hasMore).toBe(false);
  expect(tokens).toEqual(await tokenUsageScan(ds, range));
  for (const by of ['model', 'agent', 'session'] as const)
    expect(await costUsage(ds, range, by)).toEqual(await costUsageScan(ds, range, by));
  await expectWholeInPages(ds, range, 2);
  // pages of one session line: the page read from the sessions of all time, settled or not
  await expectWholeInPages(ds, range, 1, ['session']);
}

/**
 * Pages of `limit` lines, followed by their cursors, are the whole session and plan lists (those of
 * `dimensions`) in order, each with the whole total.
 */
async function expectWholeInPages(
  ds: DataSource,
  range: DateRange,
  limit: number,
  dimensions: ReadonlyArray<'session' | 'plan'> = ['session', 'plan'],
): Promise<void> {
  const whole = await tokenUsageScan(ds, range);
  const seen = { bySession: [] as unknown[], byPlan: [] as unknown[] };
  let cursor: string | undefined;
  do {
    const usage = await tokenUsage(ds, range, dimensions, { limit, ...(cursor ? { cursor } : {}) });
    expect(usage.bySession?.length ?? 0).toBeLessThanOrEqual(limit);
    expect(usage.byPlan?.length ?? 0).toBeLessThanOrEqual(limit);
    expect(usage.total).toEqual(whole.total);
    seen.bySession.push(...(usage.bySession ?? []));
    seen.byPlan.push(...(usage.byPlan ?? []));
    cursor = usage.page!.nextCursor ?? undefined;
  } while (cursor);
  expect(seen).toEqual({
    bySession: dimensions.includes('session') ? whole.bySession : [],
    byPlan: dimensions.includes('plan') ? whole.byPlan : [],
  });
}

describe.each(ALL_TEST_DBS)('analytics from rollups on %s', (kind) => {
  let ds: DataSource;
  let close: () => Promise<void>;
  let store: PlanEventStore;
  let run = 0;

  beforeAll(async () => {
    ({ ds, close } = await createMigratedDb(kind, { poolSize: 4 }));
    store = new PlanEventStore(ds);
  });
  afterAll(async () => close?.());

  it(`answer what the full scans answer after random histories, for random ranges (${RUNS} runs)`, async () => {
    await fc.assert(
      fc.asyncProperty(caseArb, async (c) => {
        const tag = `${kind}_${run++}`;
        const sessions = [0, 1, 2].map((s) => `sess_${tag}_${s}`);
        const planIds = c.plans.map((_, i) => `plan_${tag}_${i}`);
        const all = c.plans.flatMap((p, i) =>
          shifted(toEvents(p.drafts, planIds[i], sessions[p.session], p.layout), p.hours),
        );
        if (c.forkDone !== null) {
          const origin = { planId: planIds[0], kind: 'fork' as const, layer: 0 };
          all.push(
            ...planEvents(`fork_${tag}`, sessions[2], new Date(BASE + 30 * HOUR).toISOString(), {
              forkOf: origin,
              done: c.forkDone,
            }),
          );
        }
        // events in a random order, some twice, in batches of 1-6; the last third after the operations
        const batches = schedule(all, fc.sample(arrivalArb(all.length), { numRuns: 1, seed: run })[0]);
        const cut = c.late ? Math.ceil((batches.length * 2) / 3) : batches.length;
        for (const batch of batches.slice(0, cut)) await store.persist(batch);
        const now = new Date(BASE + 400 * 24 * HOUR);
        for (const op of c.ops) await apply(ds, op, { now, planIds, sessions });
        for (const batch of batches.slice(cut)) await store.persist(batch);
        for (const range of [{}, ...c.ranges]) await expectSameAnswers(ds, range);
      }),
      { numRuns: RUNS },
    );
    // the rollups rebuilt from the rows answer the same
    await sqlDialectOf(ds).transaction(ds, (m) => rebuildRollups(m));
    await expectSameAnswers(ds, {});
    // pages of 7 lines, followed by their cursors, are the whole session and plan lists in order
    await expectWholeInPages(ds, {}, 7);
  }, 300_000);
});

async function apply(ds: DataSource, op: Op, at: { now: Date; planIds: string[]; sessions: string[] }): Promise<void> {
  const policy = { ...DEFAULT_RETENTION_POLICY, graceDays: 7 };
  if (op.kind === 'retire') await runRetention(ds, policy, { now: at.now });
  else if (op.kind === 'purge') await runRetention(ds, policy, { now: new Date(at.now.getTime() + 8 * 24 * HOUR) });
  else if (op.kind === 'restore')
    await restorePlan(ds, at.planIds[op.plan % at.planIds.length], policy, { now: at.now });
  else await eraseSession(ds, at.sessions[op.session], { includeForks: true }).catch(ignoreNotFound);
}

function ignoreNotFound(err: unknown): void {
  if (!(err instanceof Error) || !/not found|unknown|no such/i.test(err.message)) throw err;
}
