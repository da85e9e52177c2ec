import type { PriceOverrideRow } from '../../src/store/entities';

/** A gpt-4o override (2 / 8 USD per million input / output tokens) in force from `from`. */
export function gpt4oOverride(from: Date): Omit<PriceOverrideRow, 'id' | 'createdAt'> {
  return {
    modelPattern: 'gpt-4o*',
    provider: null,
    effectiveFrom: from,
    inputPerMtok: '2',
    outputPerMtok: '8',
    cacheReadPerMtok: null,
    cacheWritePerMtok: null,
    currency: 'USD',
  };
}
