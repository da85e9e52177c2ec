import { readFileSync } from 'node:fs';
import { calcPrice } from '@pydantic/genai-prices';
import fc from 'fast-check';
import {
  displayMoney,
  formatMoney,
  moneyFromColumn,
  parseMoney,
  PRICE_TABLE_VERSION,
  priceStep,
  type PriceOverride,
  type StepUsage,
} from '../../src/pricing';

const usage = (over: Partial<StepUsage> = {}): StepUsage => ({
  model: 'gpt-4o',
  provider: null,
  inputTokens: 1200,
  outputTokens: 300,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  reasoningTokens: 0,
  reportedCost: null,
  ...over,
});
const at = (iso: string) => new Date(iso);
const usd = (text: string) => parseMoney(text)!;

describe('priceStep with the bundled table', () => {
  it('prices gpt-4o 1,200 in / 300 out at $0.006 and names the table version and model', () => {
    const cost = priceStep(usage(), at('2025-01-01T00:00:00Z'));
    expect(cost).toEqual({ cost: usd('0.006'), source: 'table', priceRef: `${PRICE_TABLE_VERSION}:openai/gpt-4o` });
    expect(displayMoney(cost.cost!)).toBe('0.006');
  });

  it('the pinned package is the one installed, and the reference carries its exact version', () => {
    const pinned = (JSON.parse(readFileSync('package.json', 'utf8')) as { dependencies: Record<string, string> })
      .dependencies['@pydantic/genai-prices'];
    expect(pinned).toMatch(/^\d+\.\d+\.\d+$/);
    expect(PRICE_TABLE_VERSION).toBe(`genai-prices@${pinned}`);
  });

  it('a dated price change: o3 before and after its 2025 cut', () => {
    const million = usage({ model: 'o3', inputTokens: 1_000_000, outputTokens: 1_000_000 });
    expect(priceStep(million, at('2025-06-09T23:59:59Z')).cost).toBe(usd('50'));
    expect(priceStep(million, at('2025-06-10T00:00:00Z')).cost).toBe(usd('10'));
  });

  it('tiered prices: the whole usage at the tier its input tokens reach', () => {
    const small = usage({ model: 'claude-sonnet-4-5', inputTokens: 200_000, outputTokens: 1000 });
    const large = usage({ model: 'claude-sonnet-4-5', inputTokens: 200_001, outputTokens: 1000 });
    const when = at('2025-10-01T00:00:00Z');
    expect(priceStep(small, when).cost).toBe(usd('0.615')); // 200,000 x $3 + 1,000 x $15 per Mtok
    expect(priceStep(large, when).cost).toBe(usd('1.2225060')); // 200,001 x $6 + 1,000 x $22.5
  });

  it('cached tokens: cache reads and writes at their own prices, the rest of the input at the input price', () => {
    const when = at('2025-10-01T00:00:00Z');
    const cached = usage({
      model: 'claude-sonnet-4-5',
      inputTokens: 10_000,
      cacheReadTokens: 6000,
      cacheWriteTokens: 2000,
      outputTokens: 500,
    });
    // 2,000 x $3 + 6,000 x $0.30 + 2,000 x $3.75 + 500 x $15 per Mtok
    expect(priceStep(cached, when).cost).toBe(usd('0.0228'));
    // gpt-4o has a cache-read price only: cache writes are input
    const openai = usage({ inputTokens: 1000, cacheReadTokens: 800, cacheWriteTokens: 100, outputTokens: 0 });
    expect(priceStep(openai, when).cost).toBe(usd('0.0015')); // 200 x $2.50 + 800 x $1.25
  });

  it('a reported cost wins over the table, exactly as sent', () => {
    expect(priceStep(usage({ reportedCost: '0.123456789012' }), at('2025-01-01T00:00:00Z'))).toEqual({
      cost: usd('0.123456789012'),
      source: 'reported',
      priceRef: null,
    });
  });

  it('an unknown model, or tokens without a model, are unpriced, never zero', () => {
    expect(priceStep(usage({ model: 'in-house-llm-7' }), at('2025-01-01T00:00:00Z'))).toEqual({
      cost: null,
      source: 'unpriced',
      priceRef: null,
    });
    expect(priceStep(usage({ model: null }), at('2025-01-01T00:00:00Z')).source).toBe('unpriced');
    expect(priceStep(usage({ provider: 'no-such-provider' }), at('2025-01-01T00:00:00Z')).source).toBe('unpriced');
  });

  it('a step with no tokens and no reported cost has nothing to price', () => {
    expect(priceStep(usage({ inputTokens: 0, outputTokens: 0 }), at('2025-01-01T00:00:00Z'))).toEqual({
      cost: null,
      source: null,
      priceRef: null,
    });
  });

  it('agrees with the package (which sums floats) on random usages of table models', () => {
    const models = ['gpt-4o', 'gpt-4o-mini', 'o3', 'claude-sonnet-4-5', 'claude-3-5-haiku-latest', 'gemini-2.5-pro'];
    fc.assert(
      fc.property(
        fc.constantFrom(...models),
        fc.integer({ min: 0, max: 2_000_000 }),
        fc.integer({ min: 0, max: 200_000 }),
        fc.integer({ min: 0, max: 100 }),
        fc.date({ min: at('2024-06-01T00:00:00Z'), max: at('2026-11-01T00:00:00Z'), noInvalidDate: true }),
        (model, input, output, cachedPercent, when) => {
          const cacheRead = Math.floor((input * cachedPercent) / 100);
          const mine = priceStep(
            usage({ model, inputTokens: input, outputTokens: output, cacheReadTokens: cacheRead }),
            when,
          );
          const theirs = calcPrice(
            { input_tokens: input, output_tokens: output, cache_read_tokens: cacheRead },
            model,
            {
              timestamp: when,
            },
          );
          if (input === 0 && output === 0) return expect(mine.source).toBeNull();
          expect(mine.source).toBe('table');
          const exact = Number(formatMoney(mine.cost!));
          expect(Math.abs(exact - theirs!.total_price)).toBeLessThanOrEqual(1e-9 * Math.max(1, theirs!.total_price));
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('priceStep with overrides', () => {
  const override = (over: Partial<PriceOverride> = {}): PriceOverride => ({
    id: 'o1',
    modelPattern: 'gpt-4o*',
    provider: null,
    effectiveFrom: at('2025-03-01T00:00:00Z'),
    inputPerMtok: '2',
    outputPerMtok: '8',
    cacheReadPerMtok: null,
    cacheWritePerMtok: null,
    currency: 'USD',
    ...over,
  });

  it('applies from its effective date only', () => {
    const o = [override()];
    expect(priceStep(usage(), at('2025-02-28T23:59:59.999Z'), o).source).toBe('table');
    expect(priceStep(usage(), at('2025-03-01T00:00:00Z'), o)).toEqual({
      cost: usd('0.0048'), // 1,200 x $2 + 300 x $8 per Mtok
      source: 'override',
      priceRef: 'override:o1',
    });
  });

  it('the newest effective date wins, a provider restricts it, a reported cost still wins', () => {
    const o = [
      override({ id: 'o1' }),
      override({ id: 'o2', effectiveFrom: at('2025-04-01T00:00:00Z'), inputPerMtok: '1' }),
      override({ id: 'o3', effectiveFrom: at('2025-05-01T00:00:00Z'), provider: 'azure', inputPerMtok: '0.5' }),
    ];
    expect(priceStep(usage(), at('2025-06-01T00:00:00Z'), o).priceRef).toBe('override:o2');
    expect(priceStep(usage({ provider: 'Azure' }), at('2025-06-01T00:00:00Z'), o).priceRef).toBe('override:o3');
    expect(priceStep(usage({ reportedCost: '1' }), at('2025-06-01T00:00:00Z'), o).source).toBe('reported');
  });

  it('prices a model the table does not know', () => {
    const o = [override({ modelPattern: 'in-house-*' })];
    expect(priceStep(usage({ model: 'In-House-7b' }), at('2025-06-01T00:00:00Z'), o).source).toBe('override');
  });
});

describe('money', () => {
  it('parses, formats and reads back database forms exactly', () => {
    expect(parseMoney('12.5')).toBe(12_500_000_000_000n);
    expect(parseMoney('1e3')).toBeUndefined();
    expect(parseMoney('-1')).toBeUndefined();
    expect(formatMoney(6_000_000_000n)).toBe('0.006000000000');
    expect(moneyFromColumn('0.006000000000')).toBe(6_000_000_000n);
    expect(moneyFromColumn('0.006')).toBe(6_000_000_000n);
    expect(moneyFromColumn(null)).toBeNull();
    expect(moneyFromColumn(1e-7)).toBe(100_000n); // SQL Server's driver reads DECIMAL as a number
    expect(moneyFromColumn(0.006)).toBe(6_000_000_000n);
    expect(displayMoney(0n)).toBe('0.00');
    expect(displayMoney(usd('12.5'))).toBe('12.50');
  });

  it('sums of column forms are exact (no float drift)', () => {
    fc.assert(
      fc.property(fc.array(fc.bigInt({ min: 0n, max: 10n ** 18n })), (amounts) => {
        const sum = amounts.reduce((a, b) => a + b, 0n);
        expect(amounts.map((a) => moneyFromColumn(formatMoney(a))!).reduce((a, b) => a + b, 0n)).toBe(sum);
      }),
    );
  });
});
