import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { PlanEvent } from '../../src/contracts';
import { formatMoney, moneyFromColumn, PRICE_TABLE_VERSION } from '../../src/pricing';
import { PlanEventStore } from '../../src/store/plan-event-store';
import { ALL_TEST_DBS, createMigratedDb } from '../support/databases';
import { parsedEvent, cliIn } from '../support/parsed-event';

function ev(seq: number, type: string, payload: object, occurredAt: string, eventId: string = randomUUID()): PlanEvent {
  return parsedEvent({ planId: 'plan_ovr', sessionId: 'sess_ovr', seq, type, payload, occurredAt, eventId });
}

const created = ev(
  0,
  'plan.created',
  {
    query: 'q',
    steps: ['early', 'late', 'reported', 'other'].map((stepId, index) => ({ stepId, index, agentId: 'a', task: 't' })),
  },
  '2025-03-01T00:00:00.000Z',
);
const done = (seq: number, stepId: string, at: string, extra: object = {}, eventId?: string) =>
  ev(seq, 'step.completed', { stepId, inputTokens: 1200, outputTokens: 300, model: 'gpt-4o', ...extra }, at, eventId);
/** An event reusing an applied seq (a new event id): it lands behind the watermark, so the plan is rebuilt. */
const behind = (seq: number, checkpointId: string) =>
  ev(seq, 'checkpoint.saved', { checkpointId, layer: 0, state: {} }, '2025-03-03T00:00:03.000Z');
/** Sorts after any random event id: the event applies last among those of its seq. */
const LAST_ID = 'ffffffff-ffff-4fff-bfff-ffffffffffff';

describe.each(ALL_TEST_DBS)('price overrides and reprice on %s', (kind) => {
  let ds: DataSource;
  let url: string;
  let close: () => Promise<void>;

  beforeAll(async () => {
    let db;
    ({ ds, close, db } = await createMigratedDb(kind));
    url = db.url;
  });
  afterAll(async () => close?.());

  const cli = (...args: string[]) => cliIn(url, ...args);

  async function steps(): Promise<Record<string, [string | null, string | null, string | null]>> {
    const rows: Array<{ step_key: string; cost: unknown; cost_source: string | null; price_ref: string | null }> =
      await ds.query(`SELECT step_key, cost, cost_source, price_ref FROM plan_steps WHERE plan_id = 'plan_ovr'`);
    return Object.fromEntries(
      rows.map((r) => {
        const c = moneyFromColumn(r.cost);
        return [r.step_key, [c === null ? null : formatMoney(c), r.cost_source, r.price_ref]];
      }),
    );
  }

  async function planTotal(): Promise<string> {
    const [p] = await ds.query(`SELECT total_cost FROM execution_plans WHERE id = 'plan_ovr'`);
    return formatMoney(moneyFromColumn(p.total_cost)!);
  }

  it('an override added later prices only steps stored after it from its date; older ones only through reprice, and a rebuild keeps every stored cost', async () => {
    const store = new PlanEventStore(ds, undefined, { overridesRefreshMs: 0 });
    await store.persist([created, done(1, 'early', '2025-03-02T00:00:00.000Z')]);
    const table = `${PRICE_TABLE_VERSION}:openai/gpt-4o`;
    expect((await steps()).early).toEqual(['0.006000000000', 'table', table]);

    // a negotiated price effective from before the early step, added after it was stored
    const set = await cli(
      'prices',
      'set',
      '--model',
      'GPT-4o*',
      '--from',
      '2025-03-01',
      '--input',
      '2',
      '--output',
      '8',
      '--json',
    );
    expect(set.code).toBe(0);
    const override = JSON.parse(set.stdout) as { id: string; effectiveFrom: string; inputPerMtok: string };
    expect(override).toMatchObject({ effectiveFrom: '2025-03-01T00:00:00.000Z', inputPerMtok: '2.00' });
    expect((await cli('prices', 'list')).stdout).toContain(override.id);
    expect((await cli('prices', 'show', override.id)).stdout).toContain(
      'GPT-4o* (any provider) from 2025-03-01T00:00:00.000Z',
    );
    expect((await cli('prices', 'show', 'ovr-nope')).code).toBe(1);

    await store.persist([
      done(2, 'late', '2025-03-03T00:00:00.000Z'),
      done(3, 'reported', '2025-03-03T00:00:01.000Z', { reportedCost: '0.01' }),
      done(4, 'other', '2025-03-03T00:00:02.000Z', { model: 'in-house-7b' }),
    ]);
    const ref = `override:${override.id}`;
    expect(await steps()).toEqual({
      early: ['0.006000000000', 'table', table], // stored before: unchanged
      late: ['0.004800000000', 'override', ref], // 1,200 x $2 + 300 x $8 per Mtok
      reported: ['0.010000000000', 'reported', null],
      other: [null, 'unpriced', null],
    });
    expect(await planTotal()).toBe('0.020800000000');

    // a rebuild from the whole log keeps each stored step's cost: the early step is not priced again
    const before = await steps();
    expect(await store.persist([behind(1, 'cp-1')])).toMatchObject({ inserted: 1, rebuilt: 1 });
    expect(await steps()).toEqual(before);
    expect(await planTotal()).toBe('0.020800000000');

    // reprice: refused without --dry-run or --yes; the dry run shows the diff and writes nothing
    const refused = await cli('prices', 'reprice', '--from', '2025-01-01', '--to', '2026-01-01');
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('add --dry-run to see the diff, or --yes to apply it');
    const dry = await cli('prices', 'reprice', '--from', '2025-01-01', '--to', '2026-01-01', '--dry-run', '--json');
    expect(JSON.parse(dry.stdout)).toMatchObject({
      applied: false,
      steps: 4,
      changedSteps: 1,
      oldCost: '0.0208',
      newCost: '0.0196',
      byModel: [
        { model: 'gpt-4o', steps: 3, changedSteps: 1, oldCost: '0.0208', newCost: '0.0196' },
        { model: 'in-house-7b', steps: 1, changedSteps: 0, oldUnpriced: 1, newUnpriced: 1 },
      ],
    });
    expect((await steps()).early[1]).toBe('table');
    expect(await ds.query(`SELECT id FROM price_reprices`)).toEqual([]);

    // applied: only the named rows change, the plan total follows, one audit row
    const yes = await cli(
      'prices',
      'reprice',
      '--from',
      '2025-01-01',
      '--to',
      '2026-01-01',
      '--model',
      'gpt-4o',
      '--yes',
    );
    expect(yes.code).toBe(0);
    expect(yes.stdout).toContain('repriced 1 steps of 1 plans: $0.0208 -> $0.0196');
    expect(await steps()).toEqual({
      early: ['0.004800000000', 'override', ref],
      late: ['0.004800000000', 'override', ref],
      reported: ['0.010000000000', 'reported', null],
      other: [null, 'unpriced', null],
    });
    expect(await planTotal()).toBe('0.019600000000');
    const audit = await ds.query(`SELECT model, steps, plans, old_total, new_total FROM price_reprices`);
    expect(audit).toHaveLength(1);
    expect([audit[0].model, Number(audit[0].steps), Number(audit[0].plans)]).toEqual(['gpt-4o', 1, 1]);
    expect(formatMoney(moneyFromColumn(audit[0].new_total)!)).toBe('0.019600000000');

    // the next event of the plan starts from the repriced rows (the reprice bumped the plan's head)
    await store.persist([ev(5, 'plan.finalized', { status: 'completed' }, '2025-03-04T00:00:00.000Z')]);
    expect(await planTotal()).toBe('0.019600000000');

    // a newer override added after the reprice: a rebuild keeps the repriced costs all the same
    const newer = await cli(
      'prices',
      'set',
      '--model',
      'gpt-4o',
      '--from',
      '2025-03-02',
      '--input',
      '3',
      '--output',
      '10',
      '--json',
    );
    expect(newer.code).toBe(0);
    const newerRef = `override:${(JSON.parse(newer.stdout) as { id: string }).id}`;
    const repriced = await steps();
    expect(await store.persist([behind(2, 'cp-2')])).toMatchObject({ inserted: 1, rebuilt: 1 });
    expect(await steps()).toEqual(repriced);
    expect(await planTotal()).toBe('0.019600000000');

    // a late step.completed that changes a step's usage (it applies last of its seq): that step is
    // priced anew at the prices in force now (2,400 x $3 + 600 x $10 per Mtok), the others keep theirs
    const redo = done(1, 'early', '2025-03-02T00:00:00.000Z', { inputTokens: 2400, outputTokens: 600 }, LAST_ID);
    expect(await store.persist([redo])).toMatchObject({ inserted: 1, rebuilt: 1 });
    expect(await steps()).toEqual({ ...repriced, early: ['0.013200000000', 'override', newerRef] });
    expect(await planTotal()).toBe('0.028000000000');
  });
});
