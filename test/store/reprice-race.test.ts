import { DataSource } from 'typeorm';
import { PlanEvent } from '../../src/contracts';
import { costColumn, priceStep } from '../../src/pricing';
import { openDataSource } from '../../src/store/data-source';
import { PlanEventStore } from '../../src/store/plan-event-store';
import { addPriceOverride, listPriceOverrides, toPriceOverride } from '../../src/store/price-overrides';
import { repriceSteps } from '../../src/store/price-reprice';
import { ALL_TEST_DBS, createMigratedDb } from '../support/databases';
import { parsedEvent } from '../support/parsed-event';
import { stableUuid } from '../support/event-factory';

jest.setTimeout(180_000);

/**
 * `prices reprice --yes` while a worker re-runs the steps it reprices: every step must end with the
 * cost of its final usage. A reprice that priced a step from usage read before a re-run, and wrote
 * that cost after it, would leave the step's new tokens with the old tokens' cost.
 */

const PLANS = 30;
const STEPS = 6;
const AT = '2025-03-02T00:00:00.000Z';

const planId = (p: number) => `race_${String(p).padStart(3, '0')}`;
function ev(p: number, seq: number, type: string, payload: object): PlanEvent {
  return parsedEvent({
    planId: planId(p),
    sessionId: 'sess_race',
    seq,
    type,
    payload,
    occurredAt: AT,
    eventId: stableUuid(`${planId(p)}#${seq}`),
  });
}
const created = (p: number) =>
  ev(p, 0, 'plan.created', {
    query: 'q',
    steps: Array.from({ length: STEPS }, (_, i) => ({ stepId: `s${i}`, index: i, agentId: 'a', task: 't' })),
  });
/** Step `i` of plan `p` completed (again, from round 1 on) with usage that differs per round. */
const completed = (p: number, i: number, round: number) =>
  ev(p, 1 + round * STEPS + i, 'step.completed', {
    stepId: `s${i}`,
    inputTokens: 1000 + 97 * round + i,
    outputTokens: 300 + 13 * round,
    model: 'gpt-4o',
  });

describe.each(ALL_TEST_DBS)('reprice while a worker re-runs steps, on %s', (kind) => {
  let ds: DataSource;
  let operator: DataSource;
  let close: () => Promise<void>;

  beforeAll(async () => {
    let db;
    ({ ds, close, db } = await createMigratedDb(kind));
    // the operator's CLI has a connection of its own
    operator = await openDataSource(db.target, { poolSize: 2 });
  });
  afterAll(async () => {
    await operator?.destroy();
    await close?.();
  });

  it('ends with every step priced from its final usage', async () => {
    const store = new PlanEventStore(ds, undefined, { overridesRefreshMs: 0, rowCacheBytes: 0 });
    const plans = Array.from({ length: PLANS }, (_, p) => p);
    await store.persist(
      plans.flatMap((p) => [created(p), ...Array.from({ length: STEPS }, (_, i) => completed(p, i, 0))]),
    );
    await addPriceOverride(operator, {
      modelPattern: 'gpt-4o*',
      provider: null,
      effectiveFrom: new Date('2025-03-01T00:00:00.000Z'),
      inputPerMtok: '2',
      outputPerMtok: '8',
      cacheReadPerMtok: null,
      cacheWritePerMtok: null,
      currency: 'USD',
    });

    // the worker re-runs every step twice, a plan at a time, while the reprice runs
    const worker = (async () => {
      for (const round of [1, 2])
        for (const p of plans) await store.persist(Array.from({ length: STEPS }, (_, i) => completed(p, i, round)));
    })();
    const reprice = repriceSteps(operator, {
      from: new Date('2025-03-01T00:00:00.000Z'),
      to: new Date('2025-04-01T00:00:00.000Z'),
      apply: true,
    });
    await Promise.all([worker, reprice]);

    const overrides = (await listPriceOverrides(ds)).map(toPriceOverride);
    const rows: Array<Record<string, unknown>> = await ds.query(
      `SELECT plan_id, step_key, model, provider, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, reported_cost, cost, completed_at FROM plan_steps WHERE plan_id LIKE 'race_%'`,
    );
    expect(rows).toHaveLength(PLANS * STEPS);
    const wrong = rows.filter((r) => {
      const usage = {
        model: r.model as string,
        provider: (r.provider as string | null) ?? null,
        inputTokens: Number(r.input_tokens),
        outputTokens: Number(r.output_tokens),
        cacheReadTokens: Number(r.cache_read_tokens),
        cacheWriteTokens: Number(r.cache_write_tokens),
        reasoningTokens: Number(r.reasoning_tokens),
        reportedCost: null,
      };
      const expected = costColumn(priceStep(usage, new Date(AT), overrides));
      return (
        expected !== costColumn({ cost: r.cost === null ? null : toPico(r.cost), source: 'table', priceRef: null })
      );
    });
    expect(wrong.map((r) => `${String(r.plan_id)}/${String(r.step_key)}`)).toEqual([]);
    // the final usage is the last round's
    expect(rows.every((r) => Number(r.output_tokens) === 300 + 13 * 2)).toBe(true);
  });
});

/** Lock waits on the server now (the reprice waiting for a head the test holds). */
const LOCK_WAITS: Record<string, string> = {
  postgres: 'SELECT COUNT(*) AS n FROM pg_locks WHERE NOT granted',
  mariadb: "SELECT COUNT(*) AS n FROM information_schema.INNODB_TRX WHERE trx_state = 'LOCK WAIT'",
};

describe.each(['postgres', 'mariadb'] as const)('a step re-run while the reprice waits for its plan, on %s', (kind) => {
  it('is priced from the usage of the re-run, not from the usage read before it', async () => {
    const { ds, close, db } = await createMigratedDb(kind);
    const operator = await openDataSource(db.target, { poolSize: 2 });
    try {
      const store = new PlanEventStore(ds, undefined, { overridesRefreshMs: 0, rowCacheBytes: 0 });
      await store.persist([created(0), ...Array.from({ length: STEPS }, (_, i) => completed(0, i, 0))]);
      const override = await addPriceOverride(operator, {
        modelPattern: 'gpt-4o*',
        provider: null,
        effectiveFrom: new Date('2025-03-01T00:00:00.000Z'),
        inputPerMtok: '2',
        outputPerMtok: '8',
        cacheReadPerMtok: null,
        cacheWritePerMtok: null,
        currency: 'USD',
      });
      // a writer of the plan (the worker re-running step s0) holds its head lock
      const writer = ds.createQueryRunner();
      await writer.connect();
      await writer.startTransaction();
      await writer.query(`UPDATE plan_heads SET version = version + 1 WHERE plan_id = '${planId(0)}'`);
      const reprice = repriceSteps(operator, {
        from: new Date('2025-03-01T00:00:00.000Z'),
        to: new Date('2025-04-01T00:00:00.000Z'),
        apply: true,
      });
      let settled = false;
      reprice.then(
        () => (settled = true),
        () => (settled = true),
      );
      // until the reprice waits for the head (or, if the server's view never shows that wait, 10 s:
      // the re-run then commits first, and the reprice must still price it from its own usage)
      const deadline = Date.now() + 10_000;
      for (;;) {
        const [{ n }] = await ds.query(LOCK_WAITS[kind]);
        if (Number(n) > 0 || Date.now() > deadline) break;
        if (settled) throw new Error("the reprice ended without waiting for the plan's head lock");
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      // the re-run's new usage and its cost, as the worker writes them, then its commit
      const usage = {
        model: 'gpt-4o',
        provider: null,
        inputTokens: 5000,
        outputTokens: 2000,
        cacheReadTokens: 0,
        cacheWriteTokens: 0,
        reasoningTokens: 0,
        reportedCost: null,
      };
      const cost = costColumn(priceStep(usage, new Date(AT), [toPriceOverride(override)]));
      await writer.query(
        `UPDATE plan_steps SET input_tokens = 5000, output_tokens = 2000, cost = '${cost}' WHERE plan_id = '${planId(0)}' AND step_key = 's0'`,
      );
      await writer.commitTransaction();
      await writer.release();
      await reprice;
      const [row] = await ds.query(`SELECT cost FROM plan_steps WHERE plan_id = '${planId(0)}' AND step_key = 's0'`);
      expect(costColumn({ cost: toPico(row.cost), source: 'table', priceRef: null })).toBe(cost);
    } finally {
      await operator.destroy();
      await close();
    }
  });
});

/** A stored money value (DECIMAL string or SQLite text, or SQL Server's number) in pico-dollars. */
function toPico(v: unknown): bigint {
  const [whole, frac = ''] = String(v).split('.');
  return BigInt(whole) * 10n ** 12n + BigInt(frac.padEnd(12, '0').slice(0, 12));
}
