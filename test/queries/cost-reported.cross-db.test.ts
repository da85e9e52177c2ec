import { calcPrice } from '@pydantic/genai-prices';
import { run } from '../../src/cli/main';
import { PlanEventStore } from '../../src/store/plan-event-store';
import { createMigratedDb } from '../support/databases';
import { billingLedgerEvents as events } from '../support/billing-ledger';
import { softDeletePlan } from '../support/read-dataset';

/**
 * `analytics cost` beside the providers' reported costs, on a ledger whose every step reported
 * one (test/support/billing-ledger.ts), written through the store on SQLite, PostgreSQL and
 * MariaDB: each line's reported cost, what the prices give for the same steps, and the flag when
 * they differ, the same on each database.
 */
interface Output {
  code: number;
  stdout: string;
}

async function cli(url: string, args: string[]): Promise<Output> {
  const out: string[] = [];
  const code = await run(['node', 'plan-ledger', 'analytics', 'cost', ...args], {
    env: { DATABASE_URL: url, LOG_LEVEL: 'warn' },
    out: (l) => out.push(l),
    err: (l) => out.push(`stderr: ${l}`),
  });
  return { code, stdout: out.join('\n') };
}

const RUNS: Record<string, string[]> = {
  model: ['--json'],
  modelText: [],
  modelCsv: ['--csv'],
  agent: ['--by', 'agent', '--json'],
  session: ['--by', 'session', '--json'],
  plan: ['--by', 'plan', '--json'],
  // a part of a day: the rollups' edge read (from the steps), the reported steps read the same way
  partial: ['--from', '2026-11-01T09:00:00Z', '--to', '2026-11-01T23:00:00Z', '--json'],
};

/** USD the price package gives for a step of claude-sonnet-4 at its time (input counts the cache). */
function sonnet(input: number, output: number, cache: { read?: number; write?: number }, at: string): number {
  const price = calcPrice(
    { input_tokens: input, output_tokens: output, cache_read_tokens: cache.read, cache_write_tokens: cache.write },
    'claude-sonnet-4-20250514',
    { providerId: 'anthropic', timestamp: new Date(at) },
  );
  return price!.total_price;
}

describe('analytics cost: reported costs beside the prices, on every database', () => {
  const answers = new Map<string, Map<string, Output>>();

  beforeAll(async () => {
    for (const kind of ['sqlite', 'postgres', 'mariadb'] as const) {
      const { db, ds, close } = await createMigratedDb(kind, { poolSize: 2 });
      try {
        await new PlanEventStore(ds).persist(events());
        await softDeletePlan(ds, 'plan-deleted');
        const results = new Map<string, Output>();
        for (const [name, args] of Object.entries(RUNS)) results.set(name, await cli(db.url, args));
        answers.set(kind, results);
      } finally {
        await close();
      }
    }
  }, 180_000);

  const on = (kind: string, name: string) => answers.get(kind)!.get(name)!;
  const json = (name: string) => JSON.parse(on('sqlite', name).stdout);

  it('gives the same output, byte for byte, on SQLite, PostgreSQL and MariaDB', () => {
    for (const name of Object.keys(RUNS)) {
      expect(on('sqlite', name).code).toBe(0);
      expect(on('postgres', name)).toEqual(on('sqlite', name));
      expect(on('mariadb', name)).toEqual(on('sqlite', name));
    }
  });

  it("keeps each line's reported cost beside what the prices give for the same steps, and flags the difference", () => {
    const sonnetLine = json('model').lines.find((l: { key: string }) => l.key === 'claude-sonnet-4-20250514');
    // the two steps of 2026-11-01 and the one of 2026-10-31 (the deleted plan's is left out)
    expect(sonnetLine.cost).toBe('0.672');
    expect(sonnetLine.reported).toMatchObject({ steps: 3, reportedCost: '0.672', unpricedSteps: 0, differs: true });
    // step a: 100,000 input of which 90,000 cache reads and 1,000 output are $0.072 at the table's
    // prices, as reported; step b's $0.1 is not what 20,000 + 2,000 tokens (5,000 cache writes) cost
    const priced =
      sonnet(100000, 1000, { read: 90000 }, '2026-11-01T10:00:00Z') +
      sonnet(20000, 2000, { write: 5000 }, '2026-11-01T10:00:00Z') +
      sonnet(7777, 77, {}, '2026-10-31T12:00:00Z');
    expect(Number(sonnetLine.reported.pricedCost)).toBeCloseTo(priced, 9);
    expect(json('model').total.reported).toMatchObject({ steps: 6, differs: true });
  });

  it('says the same per agent, session and plan', () => {
    expect(json('agent').lines).toEqual([
      expect.objectContaining({ key: 'agent', reported: expect.objectContaining({ steps: 6 }) }),
    ]);
    expect(json('session').total.reported).toEqual(json('model').total.reported);
    const plans = json('plan').lines as { key: string; reported: { steps: number } }[];
    expect(plans.map((l) => [l.key, l.reported.steps]).sort()).toEqual([
      ['plan-before', 1],
      ['plan-day1', 3],
      ['plan-day2', 2],
    ]);
  });

  it('prints the reported and priced columns, and a line when they differ', () => {
    const text = on('sqlite', 'modelText').stdout;
    expect(text).toMatch(
      /model\s+cost_usd\s+priced_steps\s+unpriced_steps\s+reported_steps\s+reported_usd\s+priced_usd\s+differs/,
    );
    expect(text).toMatch(/claude-sonnet-4-20250514\s+0\.672\s+3\s+0\s+3\s+0\.672\s+\S+\s+yes/);
    expect(text).toMatch(/^reported: 6 steps at the provider's own cost, \$0\.7178; the prices give \$\S+ for them/m);
    expect(on('sqlite', 'modelCsv').stdout.split('\n')[0]).toBe(
      'model,cost_usd,priced_steps,unpriced_steps,reported_steps,reported_usd,priced_usd,differs',
    );
  });
});
