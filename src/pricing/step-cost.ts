import { decimalToScaled, formatMoney, MAX_MONEY, parseMoney, picoPerTokenOfMtokPrice } from './money';
import { PRICE_TABLE_VERSION, pricesAt, tableModel, type TablePrice } from './price-table';

/** Where a step's cost comes from. */
export type CostSource = 'reported' | 'table' | 'override' | 'unpriced';
export const COST_SOURCES: readonly CostSource[] = ['reported', 'table', 'override', 'unpriced'];

/** What a step used, as its step.completed / step.failed said. */
export interface StepUsage {
  model: string | null;
  provider: string | null;
  /** All input tokens, cache reads and writes included. */
  inputTokens: number;
  /** All output tokens, reasoning included. */
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  /** Part of the output tokens; priced as output. */
  reasoningTokens: number;
  /** The provider's own figure in USD, as a decimal string; it wins over any price. */
  reportedCost: string | null;
}

/**
 * A negotiated or internal price: for models matching `modelPattern` (`*` matches any run of
 * characters; case-insensitive) of `provider` (any provider when null), from `effectiveFrom` on.
 * Prices are USD per million tokens as decimal strings (at most 6 decimals).
 */
export interface PriceOverride {
  id: string;
  modelPattern: string;
  provider: string | null;
  effectiveFrom: Date;
  inputPerMtok: string;
  outputPerMtok: string;
  cacheReadPerMtok: string | null;
  cacheWritePerMtok: string | null;
  currency: 'USD';
}

/** A step's cost: pico-dollars (null when unpriced or nothing to price), its source and price reference. */
export interface StepCost {
  cost: bigint | null;
  source: CostSource | null;
  /** `genai-prices@<version>:<provider>/<model>` for a table price, `override:<id>` for an override. */
  priceRef: string | null;
}

export const NOTHING_TO_PRICE: StepCost = Object.freeze({ cost: null, source: null, priceRef: null });

/**
 * The cost of a step at the prices in force at `at` (its occurredAt): the reported cost if any,
 * else the newest override in force for its model, else the bundled table's price, else unpriced.
 * A step with no tokens and no reported cost has nothing to price. Pure: the same inputs give the
 * same cost, to the pico-dollar.
 */
export function priceStep(usage: StepUsage, at: Date, overrides: readonly PriceOverride[] = []): StepCost {
  if (usage.reportedCost !== null) {
    const reported = parseMoney(usage.reportedCost);
    if (reported !== undefined) return { cost: reported, source: 'reported', priceRef: null };
  }
  if (usage.inputTokens === 0 && usage.outputTokens === 0) return NOTHING_TO_PRICE;
  const uncachedBase = usage.inputTokens;
  if (usage.model === null || uncachedBase < usage.cacheReadTokens + usage.cacheWriteTokens) return UNPRICED;
  const override = overrideFor(overrides, usage.model, usage.provider, at);
  if (override) {
    const cost = costOf(usage, {
      input_mtok: Number(override.inputPerMtok),
      output_mtok: Number(override.outputPerMtok),
      ...(override.cacheReadPerMtok !== null ? { cache_read_mtok: Number(override.cacheReadPerMtok) } : {}),
      ...(override.cacheWritePerMtok !== null ? { cache_write_mtok: Number(override.cacheWritePerMtok) } : {}),
    });
    return cost === null ? UNPRICED : { cost, source: 'override', priceRef: `override:${override.id}` };
  }
  const model = tableModel(usage.model, usage.provider);
  if (!model) return UNPRICED;
  const cost = costOf(usage, pricesAt(model.info, at));
  if (cost === null) return UNPRICED;
  return { cost, source: 'table', priceRef: `${PRICE_TABLE_VERSION}:${model.providerId}/${model.modelId}` };
}

const UNPRICED: StepCost = Object.freeze({ cost: null, source: 'unpriced', priceRef: null });

/** The override in force at `at` for a model: the latest effective date wins, then the highest id. */
export function overrideFor(
  overrides: readonly PriceOverride[],
  model: string,
  provider: string | null,
  at: Date,
): PriceOverride | null {
  let best: PriceOverride | null = null;
  for (const o of overrides) {
    if (o.effectiveFrom > at) continue;
    if (o.provider !== null && (provider === null || o.provider.toLowerCase() !== provider.toLowerCase())) continue;
    if (!patternMatches(o.modelPattern, model)) continue;
    if (!best || o.effectiveFrom > best.effectiveFrom || (+o.effectiveFrom === +best.effectiveFrom && o.id > best.id))
      best = o;
  }
  return best;
}

const patterns = new Map<string, RegExp>();
/** `*` matches any run of characters, everything else itself; case-insensitive, whole name. */
export function patternMatches(pattern: string, model: string): boolean {
  let re = patterns.get(pattern);
  if (!re) {
    const body = pattern
      .split('*')
      .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*');
    re = new RegExp(`^${body}$`, 'is');
    if (patterns.size > 1000) patterns.clear();
    patterns.set(pattern, re);
  }
  return re.test(model);
}

/**
 * Pico-dollars of a usage at a price set, or null when the set prices no tokens. Like the package:
 * cache reads and writes are the part of the input priced at their own price when the set has one
 * (else at the input price), a tiered price applies to the whole usage at the tier the input tokens
 * reach, and a per-request price counts one request.
 */
export function costOf(usage: StepUsage, prices: Record<string, TablePrice>): bigint | null {
  const input = prices.input_mtok;
  const output = prices.output_mtok;
  if (input === undefined && output === undefined) return null;
  const tierInput = usage.inputTokens;
  let uncached = usage.inputTokens;
  let total = 0n;
  const add = (price: TablePrice, tokens: number) => {
    if (price === undefined || tokens === 0) return;
    total += BigInt(tokens) * picoPerTokenOfMtokPrice(tierPrice(price, tierInput));
  };
  if (prices.cache_read_mtok !== undefined) {
    add(prices.cache_read_mtok, usage.cacheReadTokens);
    uncached -= usage.cacheReadTokens;
  }
  if (prices.cache_write_mtok !== undefined) {
    add(prices.cache_write_mtok, usage.cacheWriteTokens);
    uncached -= usage.cacheWriteTokens;
  }
  add(input, uncached);
  add(output, usage.outputTokens);
  const perRequest = prices.requests_kcount;
  if (perRequest !== undefined) total += decimalToScaled(tierPrice(perRequest, tierInput), 9);
  return total > MAX_MONEY ? null : total;
}

function tierPrice(price: NonNullable<TablePrice>, inputTokens: number): number {
  if (typeof price === 'number') return price;
  let chosen = price.base;
  let from = -1;
  for (const tier of price.tiers)
    if (inputTokens > tier.start && tier.start > from) [chosen, from] = [tier.price, tier.start];
  return chosen;
}

/** A step cost in its column form (see money.ts). */
export function costColumn(cost: StepCost): string | null {
  return cost.cost === null ? null : formatMoney(cost.cost);
}
