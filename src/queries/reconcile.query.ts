import type { DataSource, SelectQueryBuilder } from 'typeorm';
import { displayMoney } from '../pricing';
import type { BilledTokens, BillingProvider, BillLine } from '../pricing/billing-export';
import { ENTITY, PlanStepRow } from '../store/entities';
import { SqlDialect, sqlDialectOf } from '../store/sql/dialects';
import { echoRange, type RangeEcho } from './analytics.query';
import { groupByText } from './query-clauses';
import type { DateRange } from './query-args';
import { QueryArgumentError } from './query-errors';
import { compareText, toDay, toNum } from './row-normalize';

/**
 * The ledger against the provider's bill, by UTC day and model. A step counts on the UTC day it
 * completed (else started, else was stored), in `[from, to)` by that instant; a bill's row counts
 * on the day its bucket starts. Sums run in SQL (one row per day, provider and model); matching,
 * division and rounding run here in integers, so every database gives the same answer.
 */

export interface TokenCounts extends BilledTokens {
  /** input + output */
  totalTokens: number;
}

export interface ReconcileLine {
  /** The model as the bill names it (the ledger's name when the bill has none). */
  model: string;
  ledger: TokenCounts & { cost: string; steps: number; unpricedSteps: number };
  billed: (TokenCounts & { cost: string | null }) | null;
  /** ledger total tokens / billed total tokens, in %, 2 decimals; null without billed tokens. */
  coveragePct: number | null;
  /** ledger cost - billed cost (USD); null without a billed cost. */
  costDelta: string | null;
}

export interface ReconcileDay extends ReconcileLine {
  day: string;
}

export interface Reconciliation extends RangeEcho {
  provider: BillingProvider;
  /** What the export holds: usage (tokens), cost (money), or both. */
  billed: { usage: boolean; cost: boolean };
  ledger: TokenCounts & { cost: string; steps: number; unpricedSteps: number };
  billedTotals: TokenCounts & { cost: string | null };
  /** ledger tokens / billed tokens in %, 2 decimals; null when the export has no usage. */
  coveragePct: number | null;
  /** ledger cost - billed cost in USD; null when the export has no cost. */
  costDelta: string | null;
  /** costDelta / billed cost in %, 2 decimals; null without a billed cost (or a zero one). */
  costDeltaPct: number | null;
  byModel: ReconcileLine[];
  byDay: ReconcileDay[];
  unattributed: {
    /** Billed models no ledger step names (tokens and cost the ledger never saw). */
    billedModelsNotInLedger: { model: string; totalTokens: number; cost: string | null }[];
    /** Ledger models the bill does not name. */
    ledgerModelsNotBilled: { model: string; totalTokens: number; cost: string }[];
    /** Billed cost lines that name no model (tools, storage...), USD; null when the export has no cost. */
    costWithoutModel: string | null;
  };
}

/** The instant a step's usage counts at: when it completed, else started, else was stored. */
const STEP_TIME = 'COALESCE(s.completedAt, s.startedAt, s.createdAt)';

/** Steps with tokens or a cost, summed per UTC day, provider and model. */
export function buildLedgerUsageQuery(ds: DataSource, range: DateRange): SelectQueryBuilder<PlanStepRow> {
  const d = sqlDialectOf(ds);
  const day = d.utcDay(STEP_TIME);
  const qb = ds
    .getRepository<PlanStepRow>(ENTITY.step)
    .createQueryBuilder('s')
    .innerJoin(ENTITY.plan, 'p', 'p.id = s.planId AND p.deletedAt IS NULL')
    .select(day, 'day')
    .addSelect('s.provider', 'provider')
    .addSelect('s.model', 'model')
    .addSelect(d.sumInt('s.inputTokens'), 'input')
    .addSelect(d.sumInt('s.outputTokens'), 'output')
    .addSelect(d.sumInt('s.cacheReadTokens'), 'cacheRead')
    .addSelect(d.sumInt('s.cacheWriteTokens'), 'cacheWrite')
    .addSelect(d.sumMoney('s.cost'), 'cost')
    .addSelect('COUNT(*)', 'steps')
    .addSelect(`SUM(CASE WHEN s.costSource = 'unpriced' THEN 1 ELSE 0 END)`, 'unpriced')
    .where('(s.inputTokens > 0 OR s.outputTokens > 0 OR s.cost IS NOT NULL)');
  if (range.from) qb.andWhere(`${STEP_TIME} >= :from`, { from: d.instant(range.from) });
  if (range.to) qb.andWhere(`${STEP_TIME} < :to`, { to: d.instant(range.to) });
  groupByText(ds, qb, ['s.provider', 's.model']);
  qb.addGroupBy(day);
  return qb;
}

/** One side's sums of a day and model, or of a total: the ledger's (steps) or the bill's (has...). */
interface Sums {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  cost: bigint;
  steps: number;
  unpriced: number;
  hasUsage: boolean;
  hasCost: boolean;
}

const zero = (): Sums => ({
  input: 0,
  output: 0,
  cacheRead: 0,
  cacheWrite: 0,
  cost: 0n,
  steps: 0,
  unpriced: 0,
  hasUsage: false,
  hasCost: false,
});

/**
 * The key two names of one model share: lower case, without a snapshot date suffix
 * (`gpt-4o-2024-08-06` and `gpt-4o`, `claude-sonnet-4-20250514` and `claude-sonnet-4`).
 */
export function modelKey(model: string): string {
  return model
    .trim()
    .toLowerCase()
    .replace(/-(\d{4}-\d{2}-\d{2}|\d{8})$/, '');
}

/** Models of each provider's own families, for steps stored without a provider. */
const FAMILY: Record<BillingProvider, RegExp> = {
  openai: /^(gpt-|chatgpt-|o\d|text-embedding-|codex-|computer-use-)/i,
  anthropic: /^claude-/i,
};

/**
 * Reconciles the ledger with an export. Ledger steps count when their provider is the bill's, or
 * when they name no provider and their model is billed or of the provider's families.
 */
export async function reconcile(
  ds: DataSource,
  provider: BillingProvider,
  bill: BillLine[],
  range: DateRange = {},
): Promise<Reconciliation> {
  const d = sqlDialectOf(ds);
  const inRange = (day: string) =>
    (!range.from || day >= range.from.toISOString().slice(0, 10)) &&
    (!range.to || new Date(`${day}T00:00:00Z`).getTime() < range.to.getTime());

  const { billed, billedNames, costWithoutModel, hasUsage, hasCost } = sumBill(bill, inRange);
  const raw = await buildLedgerUsageQuery(ds, range).getRawMany<Record<string, unknown>>();
  const { ledger, ledgerNames } = sumLedger(raw, { provider, billedNames, dialect: d });

  const nameOf = (key: string) => billedNames.get(key) ?? ledgerNames.get(key) ?? key;
  const byDay: ReconcileDay[] = [];
  const models = new Map<string, { ledger: Sums; billed: Sums }>();
  for (const k of new Set([...billed.keys(), ...ledger.keys()])) {
    const [day, key] = k.split('\t') as [string, string];
    const l = ledger.get(k) ?? zero();
    const b = billed.get(k) ?? zero();
    byDay.push({ day, ...line(nameOf(key), l, b, hasUsage, hasCost) });
    const m = getOr(models, key, () => ({ ledger: zero(), billed: zero() }));
    add(m.ledger, l);
    add(m.billed, b);
  }
  byDay.sort((a, b) => compareText(a.day, b.day) || compareText(a.model, b.model));

  const total = { ledger: zero(), billed: zero() };
  const byModel: ReconcileLine[] = [];
  for (const [key, m] of models) {
    add(total.ledger, m.ledger);
    add(total.billed, m.billed);
    byModel.push(line(nameOf(key), m.ledger, m.billed, hasUsage, hasCost));
  }
  total.billed.cost += costWithoutModel;
  byModel.sort(
    (a, b) =>
      b.ledger.totalTokens + (b.billed?.totalTokens ?? 0) - a.ledger.totalTokens - (a.billed?.totalTokens ?? 0) ||
      compareText(a.model, b.model),
  );

  const billedCost = hasCost ? total.billed.cost : null;
  return {
    ...echoRange(range),
    provider,
    billed: { usage: hasUsage, cost: hasCost },
    ledger: ledgerCounts(total.ledger),
    billedTotals: { ...billedCounts(total.billed), cost: billedCost === null ? null : displayMoney(billedCost) },
    coveragePct: hasUsage ? pct(tokensOf(total.ledger), tokensOf(total.billed)) : null,
    costDelta: billedCost === null ? null : displayMoney(total.ledger.cost - billedCost),
    costDeltaPct: billedCost === null ? null : pct(total.ledger.cost - billedCost, billedCost),
    byModel,
    byDay,
    unattributed: {
      billedModelsNotInLedger: [...models]
        .filter(([, m]) => m.ledger.steps === 0)
        .map(([key, m]) => ({
          model: nameOf(key),
          totalTokens: tokensOf(m.billed),
          cost: hasCost ? displayMoney(m.billed.cost) : null,
        })),
      ledgerModelsNotBilled: [...models]
        .filter(([, m]) => !m.billed.hasUsage && !m.billed.hasCost)
        .map(([key, m]) => ({
          model: nameOf(key),
          totalTokens: tokensOf(m.ledger),
          cost: displayMoney(m.ledger.cost),
        })),
      costWithoutModel: hasCost ? displayMoney(costWithoutModel) : null,
    },
  };
}

/** The bill, summed per day and model key (`day<TAB>key`), with the shortest name of each model key. */
function sumBill(bill: BillLine[], inRange: (day: string) => boolean) {
  const billed = new Map<string, Sums>();
  const billedNames = new Map<string, string>();
  let costWithoutModel = 0n;
  let hasUsage = false;
  let hasCost = false;
  for (const line of bill) {
    if (!inRange(line.day)) continue;
    if (line.cost !== undefined) hasCost = true;
    if (line.tokens !== undefined) hasUsage = true;
    if (line.model === null) {
      costWithoutModel += line.cost ?? 0n;
      continue;
    }
    const key = modelKey(line.model);
    if (!billedNames.has(key) || line.model.length < billedNames.get(key)!.length) billedNames.set(key, line.model);
    const sums = getOr(billed, `${line.day}\t${key}`, zero);
    if (line.tokens) {
      sums.hasUsage = true;
      sums.input += line.tokens.inputTokens;
      sums.output += line.tokens.outputTokens;
      sums.cacheRead += line.tokens.cacheReadTokens;
      sums.cacheWrite += line.tokens.cacheWriteTokens;
    }
    if (line.cost !== undefined) {
      sums.hasCost = true;
      sums.cost += line.cost;
    }
  }
  return { billed, billedNames, costWithoutModel, hasUsage, hasCost };
}

/** The ledger's rows of the bill's provider, summed per day and model key as sumBill's. */
function sumLedger(
  raw: Record<string, unknown>[],
  of: { provider: BillingProvider; billedNames: Map<string, string>; dialect: SqlDialect },
) {
  const { provider, billedNames, dialect } = of;
  const ledger = new Map<string, Sums>();
  const ledgerNames = new Map<string, string>();
  for (const r of raw) {
    const model = r.model === null || r.model === undefined ? null : String(r.model);
    const stepProvider = r.provider === null || r.provider === undefined ? null : String(r.provider).toLowerCase();
    if (model === null) continue;
    const key = modelKey(model);
    const counts =
      stepProvider === provider ||
      (stepProvider === null && (billedNames.has(key) || FAMILY[provider].test(model.trim())));
    if (!counts) continue;
    if (!ledgerNames.has(key) || model.length < ledgerNames.get(key)!.length) ledgerNames.set(key, model);
    const sums = getOr(ledger, `${toDay(r.day)}\t${key}`, zero);
    sums.input += toNum(r.input);
    sums.output += toNum(r.output);
    sums.cacheRead += toNum(r.cacheRead);
    sums.cacheWrite += toNum(r.cacheWrite);
    sums.cost += dialect.summedMoney(r.cost);
    sums.steps += toNum(r.steps);
    sums.unpriced += toNum(r.unpriced);
  }
  return { ledger, ledgerNames };
}

function line(model: string, l: Sums, b: Sums, hasUsage: boolean, hasCost: boolean): ReconcileLine {
  const billedAny = b.hasUsage || b.hasCost;
  return {
    model,
    ledger: ledgerCounts(l),
    billed: billedAny ? { ...billedCounts(b), cost: hasCost ? displayMoney(b.cost) : null } : null,
    coveragePct: hasUsage ? pct(tokensOf(l), tokensOf(b)) : null,
    costDelta: hasCost ? displayMoney(l.cost - b.cost) : null,
  };
}

const tokensOf = (s: { input: number; output: number }) => s.input + s.output;

function ledgerCounts(s: Sums): Reconciliation['ledger'] {
  return {
    inputTokens: s.input,
    outputTokens: s.output,
    cacheReadTokens: s.cacheRead,
    cacheWriteTokens: s.cacheWrite,
    totalTokens: tokensOf(s),
    cost: displayMoney(s.cost),
    steps: s.steps,
    unpricedSteps: s.unpriced,
  };
}

function billedCounts(b: Sums): TokenCounts {
  return {
    inputTokens: b.input,
    outputTokens: b.output,
    cacheReadTokens: b.cacheRead,
    cacheWriteTokens: b.cacheWrite,
    totalTokens: tokensOf(b),
  };
}

function add(to: Sums, s: Sums): void {
  to.input += s.input;
  to.output += s.output;
  to.cacheRead += s.cacheRead;
  to.cacheWrite += s.cacheWrite;
  to.cost += s.cost;
  to.steps += s.steps;
  to.unpriced += s.unpriced;
  to.hasUsage ||= s.hasUsage;
  to.hasCost ||= s.hasCost;
}

/** part / whole in %, rounded half away from zero at 2 decimals, in integers; null for a zero whole. */
export function pct(part: number | bigint, whole: number | bigint): number | null {
  const p = BigInt(part);
  const w = BigInt(whole);
  if (w === 0n) return null;
  const scaled = p * 10000n; // % with 2 decimals = part * 100 * 100 / whole
  const negative = scaled < 0n !== w < 0n;
  const a = scaled < 0n ? -scaled : scaled;
  const b = w < 0n ? -w : w;
  const q = a / b + ((a % b) * 2n >= b ? 1n : 0n);
  return Number(negative ? -q : q) / 100;
}

function getOr<K, V>(map: Map<K, V>, key: K, make: () => V): V {
  let value = map.get(key);
  if (value === undefined) map.set(key, (value = make()));
  return value;
}

/**
 * Why a reconciliation is beyond `failOverPct` (the money delta's %, or how far token coverage is
 * from 100 %), or null when it is within: the CLI's `--fail-over` and the HTTP `failOver` decide
 * here.
 */
export function reconcileBeyond(r: Reconciliation, failOverPct: number): string | null {
  const problems: string[] = [];
  if (r.costDeltaPct !== null && Math.abs(r.costDeltaPct) > failOverPct)
    problems.push(`the ledger's cost differs from the bill by ${r.costDeltaPct} % (${r.costDelta} USD)`);
  if (r.coveragePct !== null && Math.abs(100 - r.coveragePct) > failOverPct)
    problems.push(`the ledger saw ${r.coveragePct} % of the billed tokens`);
  if (
    r.coveragePct === null &&
    r.costDeltaPct === null &&
    (r.billedTotals.totalTokens > 0 || r.billedTotals.cost !== null)
  )
    problems.push('the bill has nothing the ledger can be compared with');
  return problems.length === 0 ? null : `${problems.join('; ')}: beyond --fail-over ${failOverPct} %`;
}

/** `--fail-over` (`failOver` over HTTP): a percentage, 0 or more. */
export function parseFailOver(raw: string, argument = '--fail-over'): number {
  const text = raw.trim().replace(/%$/, '');
  const n = /^\d+(\.\d+)?$/.test(text) ? Number(text) : NaN;
  if (!Number.isFinite(n)) throw new QueryArgumentError(argument, `"${raw}" is not a percentage (e.g. 5 or 2.5)`);
  return n;
}

/** What `cost reconcile --json` prints and `POST /v1/analytics/reconcile` answers. */
export type ReconcileReport = Reconciliation & {
  /** With `--fail-over` (`failOver`): the threshold and why the answer is beyond it, or null. */
  check?: { failOverPct: number; beyond: string | null };
};

/**
 * Reconciles over `range`, or, where it leaves an end open, from the export's first day to the day
 * after its last; with `failOverPct`, says whether the answer is beyond it.
 */
export async function reconcileReport(
  ds: DataSource,
  provider: BillingProvider,
  bill: BillLine[],
  range: DateRange,
  failOverPct?: number,
): Promise<ReconcileReport> {
  const window = { ...range };
  const days = bill.map((l) => l.day).sort();
  if (days.length > 0) {
    window.from ??= new Date(`${days[0]}T00:00:00Z`);
    window.to ??= new Date(Date.parse(`${days[days.length - 1]}T00:00:00Z`) + 86_400_000);
  }
  const result = await reconcile(ds, provider, bill, window);
  if (failOverPct === undefined) return result;
  return { ...result, check: { failOverPct, beyond: reconcileBeyond(result, failOverPct) } };
}
