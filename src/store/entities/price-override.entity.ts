import { defineEntity, ext, int, label, money, str, text, ts, uuid } from './define-entity';

/** `price_overrides`: a negotiated or internal price (`plan-ledger prices set`). */
export interface PriceOverrideRow {
  id: string;
  /** `*` matches any run of characters; case-insensitive. */
  modelPattern: string;
  /** Any provider when null. */
  provider: string | null;
  effectiveFrom: Date;
  /** USD per million tokens, 12 decimals. */
  inputPerMtok: string;
  outputPerMtok: string;
  cacheReadPerMtok: string | null;
  cacheWritePerMtok: string | null;
  currency: string;
  createdAt: Date;
}

export const PriceOverrideEntity = defineEntity<PriceOverrideRow>('PriceOverride', 'price_overrides', {
  id: ext('id', { primary: true }),
  modelPattern: label('model_pattern', 100),
  provider: str('provider', 100, true),
  effectiveFrom: ts('effective_from'),
  inputPerMtok: money('input_per_mtok', false),
  outputPerMtok: money('output_per_mtok', false),
  cacheReadPerMtok: money('cache_read_per_mtok'),
  cacheWritePerMtok: money('cache_write_per_mtok'),
  currency: label('currency', 3),
  createdAt: ts('created_at'),
});

/** `price_reprices`: the audit row of one `plan-ledger prices reprice --yes`. */
export interface PriceRepriceRow {
  id: string;
  ranAt: Date;
  fromAt: Date;
  toAt: Date;
  model: string | null;
  steps: number;
  plans: number;
  oldTotal: string;
  newTotal: string;
  /** JSON: per model, the old and new totals. */
  diff: string;
}

export const PriceRepriceEntity = defineEntity<PriceRepriceRow>('PriceReprice', 'price_reprices', {
  id: uuid('id', { primary: true }),
  ranAt: ts('ran_at'),
  fromAt: ts('from_at'),
  toAt: ts('to_at'),
  model: label('model', 100, true),
  steps: int('steps'),
  plans: int('plans'),
  oldTotal: money('old_total', false),
  newTotal: money('new_total', false),
  diff: text('diff', false),
});
