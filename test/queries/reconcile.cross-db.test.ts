import { join } from 'node:path';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { run } from '../../src/cli/main';
import { PlanEventStore } from '../../src/store/plan-event-store';
import { createMigratedDb } from '../support/databases';
import { billingLedgerEvents as events } from '../support/billing-ledger';
import { softDeletePlan } from '../support/read-dataset';

/**
 * `cost reconcile` against the billing fixtures on a ledger written through the store
 * (test/support/billing-ledger.ts), on SQLite, PostgreSQL and MariaDB: the same exact coverage,
 * delta and unattributed lists on each.
 */
const FIXTURES = join(__dirname, '..', 'fixtures', 'billing');
const ANTHROPIC = ['--anthropic', join(FIXTURES, 'anthropic', 'usage_report_messages.json')];
const ANTHROPIC_COST = ['--anthropic', join(FIXTURES, 'anthropic', 'cost_report.json')];
const OPENAI = [
  '--openai',
  join(FIXTURES, 'openai', 'usage_completions.csv'),
  '--openai',
  join(FIXTURES, 'openai', 'costs.json'),
];

interface Output {
  code: number;
  stdout: string;
  stderr: string;
}

async function cli(url: string, args: string[]): Promise<Output> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await run(['node', 'plan-ledger', 'cost', 'reconcile', ...args], {
    env: { DATABASE_URL: url, LOG_LEVEL: 'warn' },
    out: (l) => out.push(l),
    err: (l) => err.push(l),
  });
  return { code, stdout: out.join('\n'), stderr: err.join('\n') };
}

const RUNS: Record<string, string[]> = {
  anthropic: [...ANTHROPIC, ...ANTHROPIC_COST, '--json'],
  anthropicCsv: [
    '--anthropic',
    join(FIXTURES, 'anthropic', 'usage_report_messages.csv'),
    '--anthropic',
    join(FIXTURES, 'anthropic', 'cost_report.csv'),
    '--json',
  ],
  anthropicText: [...ANTHROPIC, ...ANTHROPIC_COST],
  openai: [...OPENAI, '--json'],
  usageOnly: [...ANTHROPIC, '--from', '2026-11-01', '--to', '2026-11-02', '--json'],
  within: [...ANTHROPIC, ...ANTHROPIC_COST, '--fail-over', '15'],
  beyond: [...ANTHROPIC, ...ANTHROPIC_COST, '--fail-over', '14', '--json'],
  openaiExact: [...OPENAI, '--fail-over', '0'],
};

describe('cost reconcile on every database', () => {
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

  it('gives the same output, byte for byte, on SQLite, PostgreSQL and MariaDB', () => {
    for (const name of Object.keys(RUNS)) {
      expect({ name, ...on('postgres', name) }).toEqual({ name, ...on('sqlite', name) });
      expect({ name, ...on('mariadb', name) }).toEqual({ name, ...on('sqlite', name) });
    }
  });

  it('states coverage, the money delta and what could not be attributed, exactly', () => {
    const r = on('sqlite', 'anthropic');
    expect(r).toMatchObject({ code: 0, stderr: '' });
    const json = JSON.parse(r.stdout);
    expect(json).toMatchObject({
      provider: 'anthropic',
      from: '2026-11-01T00:00:00.000Z',
      to: '2026-11-03T00:00:00.000Z',
      billed: { usage: true, cost: true },
      ledger: {
        inputTokens: 134000,
        outputTokens: 3900,
        cacheReadTokens: 90000,
        cacheWriteTokens: 5000,
        totalTokens: 137900,
        cost: '0.2143',
        steps: 4,
      },
      billedTotals: { inputTokens: 133000, outputTokens: 3700, totalTokens: 136700, cost: '0.2495' },
      coveragePct: 100.88, // 137,900 / 136,700
      costDelta: '-0.0352',
      costDeltaPct: -14.11, // -0.0352 / 0.2495
      unattributed: {
        billedModelsNotInLedger: [{ model: 'claude-opus-4-20250514', totalTokens: 1100, cost: '0.0225' }],
        ledgerModelsNotBilled: [{ model: 'claude-3-5-haiku-20241022', totalTokens: 4400, cost: '0.0048' }],
        costWithoutModel: '0.01',
      },
    });
    expect(json.byDay).toEqual([
      expect.objectContaining({
        day: '2026-11-01',
        model: 'claude-sonnet-4-20250514',
        coveragePct: 100,
        costDelta: '0.00',
      }),
      expect.objectContaining({
        day: '2026-11-02',
        model: 'claude-3-5-haiku-20241022',
        billed: null,
        coveragePct: null,
      }),
      expect.objectContaining({
        day: '2026-11-02',
        model: 'claude-opus-4-20250514',
        coveragePct: 0,
        costDelta: '-0.0225',
      }),
      // claude-sonnet-4 (no provider, no date) is the billed claude-sonnet-4-20250514: 10,500 of 12,600
      expect.objectContaining({
        day: '2026-11-02',
        model: 'claude-sonnet-4-20250514',
        coveragePct: 83.33,
        costDelta: '-0.0075',
      }),
    ]);
    expect(json.byDay[0].ledger).toMatchObject({ inputTokens: 120000, cacheReadTokens: 90000, cacheWriteTokens: 5000 });
    expect(json.byDay[0].billed).toMatchObject({ inputTokens: 120000, cacheReadTokens: 90000, cacheWriteTokens: 5000 });
  });

  it('reads the CSV exports to the same answer as the JSON ones', () => {
    expect(on('sqlite', 'anthropicCsv')).toEqual(on('sqlite', 'anthropic'));
  });

  it('prints a readable summary', () => {
    const r = on('sqlite', 'anthropicText');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('tokens: ledger 137,900, billed 136,700, coverage 100.88 %');
    expect(r.stdout).toContain('cost: ledger 0.2143 USD, billed 0.2495 USD, delta -0.0352 USD (-14.11 %)');
    expect(r.stdout).toContain('billed, no ledger step: claude-opus-4-20250514');
    expect(r.stdout).toContain('in the ledger, not billed: claude-3-5-haiku-20241022');
    expect(r.stdout).toContain('billed cost naming no model (tools, storage): 0.01 USD');
  });

  it('counts only the provider of the bill: OpenAI reconciles exactly', () => {
    const json = JSON.parse(on('sqlite', 'openai').stdout);
    expect(json).toMatchObject({
      from: '2026-11-01T00:00:00.000Z',
      to: '2026-11-02T00:00:00.000Z',
      ledger: { totalTokens: 1100, cacheReadTokens: 200, cost: '0.0035', steps: 1 },
      billedTotals: { totalTokens: 1100, cacheReadTokens: 200, cost: '0.0035' },
      coveragePct: 100,
      costDelta: '0.00',
      costDeltaPct: 0,
      unattributed: { billedModelsNotInLedger: [], ledgerModelsNotBilled: [] },
    });
    expect(json.byModel.map((m: { model: string }) => m.model)).toEqual(['gpt-4o-2024-08-06']);
  });

  it('takes --from/--to as the window of both sides; a usage export alone has no money delta', () => {
    const json = JSON.parse(on('sqlite', 'usageOnly').stdout);
    expect(json).toMatchObject({
      billed: { usage: true, cost: false },
      ledger: { totalTokens: 123000, cost: '0.172' },
      billedTotals: { totalTokens: 123000, cost: null },
      coveragePct: 100,
      costDelta: null,
      costDeltaPct: null,
    });
  });

  it('--fail-over: exit 0 within it, exit 3 beyond it with the report printed and one line saying why', () => {
    expect(on('sqlite', 'within')).toMatchObject({ code: 0, stderr: '' });
    const beyond = on('sqlite', 'beyond');
    expect(beyond.code).toBe(3);
    expect(JSON.parse(beyond.stdout).costDeltaPct).toBe(-14.11);
    expect(beyond.stderr).toBe(
      "plan-ledger: cost reconcile: the ledger's cost differs from the bill by -14.11 % (-0.0352 USD): beyond --fail-over 14 %",
    );
    expect(on('sqlite', 'openaiExact')).toMatchObject({ code: 0, stderr: '' });
  });
});

describe('cost reconcile refuses bad input before it connects', () => {
  const dir = mkdtempSync(join(tmpdir(), 'reconcile-'));
  const url = 'postgres://nobody@127.0.0.1:1/none';

  it.each([
    [['--json'], 'give the export of one provider: --openai <file> or --anthropic <file>'],
    [[...ANTHROPIC, '--openai', 'x.json'], 'give the export of one provider: --openai <file> or --anthropic <file>'],
    [[...ANTHROPIC, '--fail-over', 'ten'], '--fail-over: "ten" is not a percentage (e.g. 5 or 2.5)'],
    [
      [...ANTHROPIC, '--from', '2026-11-02', '--to', '2026-11-01'],
      '--to: "2026-11-01" must be after --from "2026-11-02" (--to is exclusive)',
    ],
  ] as [string[], string][])('refuses: %#', async (args, message) => {
    expect(await cli(url, args)).toEqual({ code: 2, stdout: '', stderr: `plan-ledger: ${message}` });
  });

  it('names the file, the row and the field of a bad export; a missing file by its name', async () => {
    const bad = join(dir, 'usage.csv');
    writeFileSync(
      bad,
      'starting_at,model,uncached_input_tokens,output_tokens\n2026-11-01T00:00:00Z,claude-sonnet-4,10,x\n',
    );
    expect(await cli(url, ['--anthropic', bad])).toEqual({
      code: 2,
      stdout: '',
      stderr: `plan-ledger: ${bad}: row 2: output_tokens: "x" is not a whole number of tokens`,
    });
    const missing = join(dir, 'nope.json');
    expect(await cli(url, ['--anthropic', missing])).toEqual({
      code: 2,
      stdout: '',
      stderr: `plan-ledger: ${missing}: cannot be read (ENOENT)`,
    });
  });
});
