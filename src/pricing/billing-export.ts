import { PlanLedgerError } from '../shared/errors';
import { decimalToScaled, MONEY_SCALE } from './money';

/**
 * The usage and cost exports OpenAI and Anthropic let an organization's admin download, read into
 * one shape: tokens and money per UTC day and model. Read from the documented field names only
 * (no network call):
 *
 * - OpenAI, `GET /v1/organization/usage/completions` pages: buckets (`start_time`, Unix seconds)
 *   of results with `input_tokens` (cached included), `input_cached_tokens`, `output_tokens`,
 *   `model`; `GET /v1/organization/costs` pages: results with `amount.value` (USD) and, grouped by
 *   line item, `line_item` ("<model>, input").
 * - Anthropic, `GET /v1/organizations/usage_report/messages` pages: buckets (`starting_at`, RFC 3339)
 *   of results with `uncached_input_tokens`, `cache_read_input_tokens`,
 *   `cache_creation.ephemeral_5m_input_tokens` / `ephemeral_1h_input_tokens`, `output_tokens`,
 *   `model`; `GET /v1/organizations/cost_report` pages: results with `amount` (a decimal string in
 *   cents), `currency`, `model` (null for costs that are not tokens).
 *
 * A file is one page, an array of pages or one page per line (JSON Lines), or CSV whose header
 * names the same fields (a nested field as `amount.value` or `amount_value`) with the bucket's
 * start as its own column.
 */

export type BillingProvider = 'openai' | 'anthropic';
export const BILLING_PROVIDERS: readonly BillingProvider[] = ['openai', 'anthropic'];

/** Tokens in the ledger's meaning: `inputTokens` includes the cache reads and writes. */
export interface BilledTokens {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
}

/** One row of an export: tokens (a usage export) or money (a cost export) of a UTC day. */
export interface BillLine {
  /** `YYYY-MM-DD`, the UTC day the bucket starts. */
  day: string;
  /** As the provider names it; null for a cost that names no model (tools, storage). */
  model: string | null;
  tokens?: BilledTokens;
  /** Pico-dollars (USD). */
  cost?: bigint;
}

/** A file that cannot be read as an export: says which file, row and field. */
export class BillingExportError extends PlanLedgerError {
  override readonly name = 'BillingExportError';
  readonly kind = 'usage';
}

type Json = unknown;

/** Reads one export file's text; `file` names it in errors. */
export function parseBillingExport(provider: BillingProvider, file: string, text: string): BillLine[] {
  const body = text.replace(/^\uFEFF/, '');
  const first = body.trimStart()[0];
  if (first === undefined) throw new BillingExportError(`${file}: the file is empty`);
  if (first === '{' || first === '[') return parseJsonPages(provider, file, body);
  return parseCsv(provider, file, body);
}

function parseJsonPages(provider: BillingProvider, file: string, body: string): BillLine[] {
  let pages: Json[];
  try {
    const value = JSON.parse(body) as Json;
    pages = Array.isArray(value) ? value : [value];
  } catch (err) {
    // JSON Lines: one page per line
    pages = [];
    const lines = body.split('\n');
    for (let i = 0; i < lines.length; i++) {
      if (lines[i]!.trim() === '') continue;
      try {
        pages.push(JSON.parse(lines[i]!) as Json);
      } catch {
        throw new BillingExportError(
          `${file}: not JSON, JSON Lines or CSV (${(err as Error).message.split('\n')[0]}; line ${i + 1})`,
        );
      }
    }
  }
  const out: BillLine[] = [];
  pages.forEach((page, p) => {
    const where = pages.length > 1 ? `page ${p + 1}: ` : '';
    if (!isObject(page) || !Array.isArray(page.data))
      throw new BillingExportError(`${file}: ${where}not a usage or cost page (no "data" array of buckets)`);
    page.data.forEach((bucket: Json, b: number) => {
      const at = `${file}: ${where}data[${b}]`;
      if (!isObject(bucket) || !Array.isArray(bucket.results))
        throw new BillingExportError(`${at}: not a bucket (no "results" array)`);
      const day = bucketDay(provider, at, (k) => bucket[k]);
      bucket.results.forEach((result: Json, r: number) => {
        const row = `${at}.results[${r}]`;
        if (!isObject(result)) throw new BillingExportError(`${row}: not an object`);
        out.push(readResult(provider, row, day, (k) => jsonField(result, k)));
      });
    });
  });
  return out;
}

/** A field of a result by its dotted name (`amount.value`). */
function jsonField(result: Record<string, Json>, name: string): Json {
  let value: Json = result;
  for (const part of name.split('.')) value = isObject(value) ? value[part] : undefined;
  return value;
}

const isObject = (v: Json): v is Record<string, Json> => typeof v === 'object' && v !== null && !Array.isArray(v);

function parseCsv(provider: BillingProvider, file: string, body: string): BillLine[] {
  const records = csvRecords(file, body);
  const header = records[0];
  if (header === undefined) throw new BillingExportError(`${file}: the file is empty`);
  const columns = new Map<string, number>();
  header.forEach((name, i) => columns.set(name.trim().toLowerCase().replace(/\./g, '_'), i));
  const out: BillLine[] = [];
  for (let r = 1; r < records.length; r++) {
    const record = records[r]!;
    if (record.length === 1 && record[0]!.trim() === '') continue;
    const get = (name: string): Json => {
      const i = columns.get(name.replace(/\./g, '_'));
      const cell = i === undefined ? undefined : record[i];
      return cell === undefined || cell === '' ? undefined : cell;
    };
    const at = `${file}: row ${r + 1}`;
    const day = bucketDay(provider, at, get);
    out.push(readResult(provider, at, day, get));
  }
  return out;
}

/** RFC 4180 records: quoted fields may hold commas, quotes ("") and line breaks. */
function csvRecords(file: string, body: string): string[][] {
  const records: string[][] = [];
  let record: string[] = [];
  let field = '';
  let quoted = false;
  let line = 1;
  for (let i = 0; i < body.length; i++) {
    const c = body[i]!;
    if (quoted) {
      if (c === '"') {
        if (body[i + 1] === '"') {
          field += '"';
          i++;
        } else quoted = false;
      } else {
        if (c === '\n') line++;
        field += c;
      }
    } else if (c === '"' && field === '') quoted = true;
    else if (c === ',') {
      record.push(field);
      field = '';
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && body[i + 1] === '\n') i++;
      record.push(field);
      records.push(record);
      record = [];
      field = '';
      line++;
    } else field += c;
  }
  if (quoted)
    throw new BillingExportError(`${file}: row ${records.length + 1}: a quoted field is not closed (line ${line})`);
  if (field !== '' || record.length > 0) {
    record.push(field);
    records.push(record);
  }
  return records;
}

/** The UTC day a bucket starts: OpenAI `start_time` (Unix seconds), Anthropic `starting_at` (RFC 3339). */
function bucketDay(provider: BillingProvider, at: string, get: (name: string) => Json): string {
  const names = provider === 'openai' ? ['start_time_iso', 'start_time', 'starting_at'] : ['starting_at', 'start_time'];
  for (const name of names) {
    const raw = get(name);
    if (raw === undefined || raw === null) continue;
    const seconds = typeof raw === 'number' ? raw : /^\d{9,11}$/.test(String(raw).trim()) ? Number(raw) : undefined;
    const date = seconds === undefined ? instantOf(String(raw)) : new Date(seconds * 1000);
    if (date === undefined || Number.isNaN(date.getTime()))
      throw new BillingExportError(
        `${at}: ${name}: ${JSON.stringify(String(raw).slice(0, 40))} is not a time (Unix seconds or RFC 3339)`,
      );
    return date.toISOString().slice(0, 10);
  }
  throw new BillingExportError(`${at}: ${names[0]}: missing (the start of the bucket)`);
}

function instantOf(text: string): Date | undefined {
  const t = text.trim();
  // a bare date is that day; an instant must say its offset (a bucket is in UTC)
  if (/^\d{4}-\d{2}-\d{2}$/.test(t)) return new Date(`${t}T00:00:00Z`);
  if (!/^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/i.test(t)) return undefined;
  return new Date(t.replace(' ', 'T'));
}

function readResult(provider: BillingProvider, at: string, day: string, get: (name: string) => Json): BillLine {
  const isCost =
    provider === 'openai'
      ? get('amount.value') !== undefined || get('amount') !== undefined
      : get('amount') !== undefined;
  if (isCost) return { day, model: costModel(provider, at, get), cost: readCost(provider, at, get) };
  const tokens = provider === 'openai' ? openaiTokens(at, get) : anthropicTokens(at, get);
  const model = get('model');
  if (model === undefined || model === null || String(model).trim() === '')
    throw new BillingExportError(`${at}: model: missing (export the usage grouped by model)`);
  return { day, model: String(model), tokens };
}

function openaiTokens(at: string, get: (name: string) => Json): BilledTokens {
  if (get('input_tokens') === undefined && get('output_tokens') === undefined)
    throw new BillingExportError(`${at}: input_tokens: missing (neither a usage nor a cost result)`);
  return {
    inputTokens: count(at, 'input_tokens', get),
    outputTokens: count(at, 'output_tokens', get),
    cacheReadTokens: count(at, 'input_cached_tokens', get),
    cacheWriteTokens: 0,
  };
}

function anthropicTokens(at: string, get: (name: string) => Json): BilledTokens {
  if (get('uncached_input_tokens') === undefined && get('output_tokens') === undefined)
    throw new BillingExportError(`${at}: uncached_input_tokens: missing (neither a usage nor a cost result)`);
  const uncached = count(at, 'uncached_input_tokens', get);
  const cacheRead = count(at, 'cache_read_input_tokens', get);
  const cacheWrite =
    count(at, 'cache_creation.ephemeral_5m_input_tokens', get) +
    count(at, 'cache_creation.ephemeral_1h_input_tokens', get);
  // Anthropic's input excludes the cache; the ledger's includes it
  return {
    inputTokens: uncached + cacheRead + cacheWrite,
    outputTokens: count(at, 'output_tokens', get),
    cacheReadTokens: cacheRead,
    cacheWriteTokens: cacheWrite,
  };
}

function count(at: string, name: string, get: (name: string) => Json): number {
  const raw = get(name);
  if (raw === undefined || raw === null) return 0;
  const n = typeof raw === 'number' ? raw : /^\s*\d+\s*$/.test(String(raw)) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(n) || n < 0)
    throw new BillingExportError(
      `${at}: ${name}: ${JSON.stringify(String(raw).slice(0, 40))} is not a whole number of tokens`,
    );
  return n;
}

/** OpenAI names a line item "<model>, <kind>" ("gpt-4o-2024-08-06, cached input"); Anthropic has `model`. */
function costModel(provider: BillingProvider, at: string, get: (name: string) => Json): string | null {
  if (provider === 'anthropic') {
    const model = get('model');
    return model === undefined || model === null || String(model).trim() === '' ? null : String(model);
  }
  const item = get('line_item');
  if (item === undefined || item === null) return null;
  const m = /^(.+?),\s*[^,]+$/.exec(String(item).trim());
  return m ? m[1]!.trim() : null;
}

/** OpenAI: `amount.value` in USD (a number); Anthropic: `amount` in cents (a decimal string). */
function readCost(provider: BillingProvider, at: string, get: (name: string) => Json): bigint {
  const field = provider === 'openai' ? (get('amount.value') !== undefined ? 'amount.value' : 'amount') : 'amount';
  const currencyField = provider === 'openai' ? 'amount.currency' : 'currency';
  const currency = get(currencyField) ?? (provider === 'openai' ? get('currency') : undefined);
  if (currency !== undefined && currency !== null && String(currency).trim().toLowerCase() !== 'usd')
    throw new BillingExportError(
      `${at}: ${currencyField}: ${JSON.stringify(String(currency).slice(0, 20))} is not USD (the ledger prices in USD)`,
    );
  const raw = get(field);
  const units = amountOf(raw, provider === 'anthropic' ? 2 : 0);
  if (units === undefined)
    throw new BillingExportError(`${at}: ${field}: ${JSON.stringify(String(raw).slice(0, 40))} is not an amount`);
  return units;
}

/** Pico-dollars of a decimal amount (a JSON number or a decimal string) divided by 10^shift, rounded half-up. */
function amountOf(raw: Json, shift: number): bigint | undefined {
  if (typeof raw === 'number') {
    if (!Number.isFinite(raw)) return undefined;
    const abs = decimalToScaled(Math.abs(raw), MONEY_SCALE - shift);
    return raw < 0 ? -abs : abs;
  }
  if (typeof raw !== 'string') return undefined;
  const m = /^\s*(-)?(\d+)(?:\.(\d+))?\s*$/.exec(raw);
  if (!m) return undefined;
  const scale = MONEY_SCALE - shift;
  const frac = m[3] ?? '';
  const digits = BigInt(m[2]! + frac);
  const exp = scale - frac.length;
  let units: bigint;
  if (exp >= 0) units = digits * 10n ** BigInt(exp);
  else {
    const divisor = 10n ** BigInt(-exp);
    units = digits / divisor + ((digits % divisor) * 2n >= divisor ? 1n : 0n);
  }
  return m[1] ? -units : units;
}
