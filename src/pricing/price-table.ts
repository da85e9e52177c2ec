import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { calcPrice, type ModelInfo, type ModelPrice, type TieredPrices } from '@pydantic/genai-prices';

/**
 * The bundled price table of `@pydantic/genai-prices` (pinned exactly in package.json): prices per
 * model with start dates and tiers. Nothing is fetched at run time: the package's data ships in
 * the package and this module never calls its `updatePrices`.
 */
export const PRICE_TABLE_VERSION = `genai-prices@${installedVersion()}`;

function installedVersion(): string {
  // the package exports no package.json: read the one beside its entry point
  const entry = require.resolve('@pydantic/genai-prices');
  const pkg = JSON.parse(readFileSync(join(dirname(entry), '..', 'package.json'), 'utf8')) as { version: string };
  return pkg.version;
}

/** A model the table knows, as matched for a (provider, model) pair. */
export interface TableModel {
  providerId: string;
  modelId: string;
  info: ModelInfo;
}

const MAX_CACHED = 10_000;
const models = new Map<string, TableModel | null>();

/**
 * The table's model for a model name and optional provider id, or null when the table has none.
 * Matching walks every provider's patterns, so answers are kept (a bounded map, cleared when full).
 */
export function tableModel(model: string, provider: string | null): TableModel | null {
  const key = `${provider ?? ''}\u0000${model}`;
  const known = models.get(key);
  if (known !== undefined) return known;
  const found = calcPrice({}, model, provider ? { providerId: provider } : {});
  const answer = found ? { providerId: found.provider.id, modelId: found.model.id, info: found.model } : null;
  if (models.size >= MAX_CACHED) models.clear();
  models.set(key, answer);
  return answer;
}

/**
 * The model's prices in force at `at`: the last dated price set whose constraint holds (a start
 * date on or before `at`, or a time-of-day window containing it), else the first, as the package
 * itself chooses.
 */
export function pricesAt(info: ModelInfo, at: Date): ModelPrice {
  if (!Array.isArray(info.prices)) return info.prices;
  for (let i = info.prices.length - 1; i >= 0; i--) {
    const { constraint, prices } = info.prices[i]!;
    if (constraint === undefined) return prices;
    if (constraint.type === 'start_date') {
      if (at >= new Date(constraint.start_date)) return prices;
    } else if (withinTimeOfDay(at, constraint.start_time, constraint.end_time)) return prices;
  }
  return info.prices[0]!.prices;
}

function withinTimeOfDay(at: Date, start: string, end: string): boolean {
  const now = at.getUTCHours() * 3600 + at.getUTCMinutes() * 60 + at.getUTCSeconds() + at.getUTCMilliseconds() / 1000;
  const s = secondsOfDay(start);
  const e = secondsOfDay(end);
  return e < s ? now >= s || now < e : now >= s && now < e;
}

/** "HH:MM:SS[.fff](Z|±HH:MM)" as seconds after UTC midnight. */
function secondsOfDay(text: string): number {
  const m = /^(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(Z|([+-])(\d{2}):(\d{2}))$/.exec(text);
  if (!m) throw new Error(`invalid time of day in the price table: ${text}`);
  const local = Number(m[1]) * 3600 + Number(m[2]) * 60 + Number(m[3]) + Number(`0.${m[4] ?? ''}`);
  const offset = m[5] === 'Z' ? 0 : (m[6] === '+' ? 1 : -1) * (Number(m[7]) * 3600 + Number(m[8]) * 60);
  return (local - offset + 86400) % 86400;
}

export type TablePrice = number | TieredPrices | undefined;
