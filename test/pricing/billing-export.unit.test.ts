import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BillingExportError, parseBillingExport, type BillingProvider } from '../../src/pricing/billing-export';
import { formatMoney } from '../../src/pricing';

const FIXTURES = join(__dirname, '..', 'fixtures', 'billing');
const read = (provider: BillingProvider, name: string) =>
  parseBillingExport(provider, name, readFileSync(join(FIXTURES, provider, name), 'utf8'));
const shown = (lines: ReturnType<typeof read>) =>
  lines.map((l) => ({ ...l, ...(l.cost === undefined ? {} : { cost: formatMoney(l.cost) }) }));

describe('billing exports', () => {
  it('reads an Anthropic usage report: input is uncached + cache reads + cache writes, as the ledger counts it', () => {
    expect(read('anthropic', 'usage_report_messages.json')).toEqual([
      {
        day: '2026-11-01',
        model: 'claude-sonnet-4-20250514',
        tokens: { inputTokens: 120000, outputTokens: 3000, cacheReadTokens: 90000, cacheWriteTokens: 5000 },
      },
      {
        day: '2026-11-02',
        model: 'claude-sonnet-4-20250514',
        tokens: { inputTokens: 12000, outputTokens: 600, cacheReadTokens: 0, cacheWriteTokens: 0 },
      },
      {
        day: '2026-11-02',
        model: 'claude-opus-4-20250514',
        tokens: { inputTokens: 1000, outputTokens: 100, cacheReadTokens: 0, cacheWriteTokens: 0 },
      },
    ]);
  });

  it('reads an Anthropic cost report: amounts in cents, costs without a model kept apart', () => {
    expect(shown(read('anthropic', 'cost_report.json'))).toEqual([
      { day: '2026-11-01', model: 'claude-sonnet-4-20250514', cost: '0.172000000000' },
      { day: '2026-11-02', model: 'claude-sonnet-4-20250514', cost: '0.045000000000' },
      { day: '2026-11-02', model: 'claude-opus-4-20250514', cost: '0.022500000000' },
      { day: '2026-11-02', model: null, cost: '0.010000000000' },
    ]);
  });

  it('reads OpenAI usage (input includes cached) and costs by line item (USD)', () => {
    expect(read('openai', 'usage_completions.json')).toEqual([
      {
        day: '2026-11-01',
        model: 'gpt-4o-2024-08-06',
        tokens: { inputTokens: 1000, outputTokens: 100, cacheReadTokens: 200, cacheWriteTokens: 0 },
      },
    ]);
    expect(shown(read('openai', 'costs.json'))).toEqual([
      { day: '2026-11-01', model: 'gpt-4o-2024-08-06', cost: '0.002250000000' },
      { day: '2026-11-01', model: 'gpt-4o-2024-08-06', cost: '0.000250000000' },
      { day: '2026-11-01', model: 'gpt-4o-2024-08-06', cost: '0.001000000000' },
    ]);
  });

  it.each([
    ['anthropic', 'usage_report_messages'],
    ['anthropic', 'cost_report'],
    ['openai', 'usage_completions'],
    ['openai', 'costs'],
  ] as const)('reads the CSV of %s %s as the same rows as its JSON', (provider, name) => {
    expect(shown(read(provider, `${name}.csv`))).toEqual(shown(read(provider, `${name}.json`)));
  });

  it('reads an array of pages and JSON Lines pages as the pages one after the other', () => {
    const page = readFileSync(join(FIXTURES, 'anthropic', 'usage_report_messages.json'), 'utf8');
    const one = parseBillingExport('anthropic', 'p.json', page);
    const compact = JSON.stringify(JSON.parse(page));
    expect(parseBillingExport('anthropic', 'a.json', `[${compact},${compact}]`)).toEqual([...one, ...one]);
    expect(parseBillingExport('anthropic', 'a.jsonl', `${compact}\n${compact}\n`)).toEqual([...one, ...one]);
  });

  const refused = (provider: BillingProvider, file: string, text: string) => {
    try {
      parseBillingExport(provider, file, text);
    } catch (err) {
      expect(err).toBeInstanceOf(BillingExportError);
      return (err as Error).message;
    }
    throw new Error('accepted');
  };

  it('refuses bad files with one line naming the file, the row and the field', () => {
    const page = (result: object, bucket: object = { starting_at: '2026-11-01T00:00:00Z' }) =>
      JSON.stringify({ data: [{ ...bucket, results: [{ model: 'claude-sonnet-4', ...result }] }] });
    expect(refused('anthropic', 'u.json', page({ uncached_input_tokens: 5, output_tokens: '12a' }))).toBe(
      'u.json: data[0].results[0]: output_tokens: "12a" is not a whole number of tokens',
    );
    expect(refused('anthropic', 'u.json', page({ output_tokens: 1 }, { starting_at: 'yesterday' }))).toBe(
      'u.json: data[0]: starting_at: "yesterday" is not a time (Unix seconds or RFC 3339)',
    );
    expect(refused('anthropic', 'c.json', page({ amount: '1.5', currency: 'EUR' }))).toBe(
      'c.json: data[0].results[0]: currency: "EUR" is not USD (the ledger prices in USD)',
    );
    expect(
      refused(
        'openai',
        'c.csv',
        'start_time,amount_value,line_item\n1793491200,0.1,"gpt-4o, input"\n1793491200,abc,x\n',
      ),
    ).toBe('c.csv: row 3: amount.value: "abc" is not an amount');
    expect(refused('openai', 'u.csv', 'start_time,model,input_tokens,output_tokens\n1793491200,gpt-4o,-1,3\n')).toBe(
      'u.csv: row 2: input_tokens: "-1" is not a whole number of tokens',
    );
    expect(refused('openai', 'u.csv', 'model,input_tokens\ngpt-4o,1\n')).toBe(
      'u.csv: row 2: start_time_iso: missing (the start of the bucket)',
    );
    expect(refused('openai', 'x.json', '{"object":"list","data":"nope"}')).toBe(
      'x.json: not a usage or cost page (no "data" array of buckets)',
    );
    expect(refused('openai', 'x.json', '{"data": [')).toMatch(/^x\.json: not JSON, JSON Lines or CSV \(.*; line 1\)$/);
    expect(refused('openai', 'e.json', '  ')).toBe('e.json: the file is empty');
    expect(refused('anthropic', 'u.json', page({ model: null, uncached_input_tokens: 1 }))).toBe(
      'u.json: data[0].results[0]: model: missing (export the usage grouped by model)',
    );
  });
});
