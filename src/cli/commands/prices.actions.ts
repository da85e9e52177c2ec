import { type CliContext, printJson } from '../cli-context';
import { displayMoney, moneyFromColumn } from '../../pricing';
import { parseDateRange } from '../../queries/query-args';
import { renderTable } from '../../queries/text-output';
import { addPriceOverride, getPriceOverride, listPriceOverrides } from '../../store/price-overrides';
import { repriceSteps } from '../../store/price-reprice';
import type { PriceOverrideRow } from '../../store/entities';
import { CliError } from '../exit-codes';
import { withDataSource } from '../with-data-source';

type Opts = Record<string, string | boolean | undefined>;

const PRICE = /^\d{1,6}(\.\d{1,6})?$/;

function price(name: string, raw: string | boolean | undefined): string | null {
  if (raw === undefined || raw === false) return null;
  const text = String(raw).trim();
  if (!PRICE.test(text))
    throw new CliError(
      `${name}: "${raw}" is not a price in USD per million tokens (e.g. 2.5, at most 6 decimals)`,
      'usage',
    );
  return text;
}

function text(name: string, raw: string | boolean | undefined, max: number): string | null {
  if (raw === undefined || raw === false) return null;
  const value = String(raw).trim();
  if (value.length === 0 || value.length > max) throw new CliError(`${name}: must be 1 to ${max} characters`, 'usage');
  return value;
}

/** The override `prices set` stores, from its flags (before anything connects: a bad one is exit 2). */
function overrideOf(opts: Opts) {
  const currency = String(opts.currency ?? 'USD').toUpperCase();
  if (currency !== 'USD')
    throw new CliError(`--currency: "${opts.currency}" is not USD, the only currency costs are kept in`, 'usage');
  const { from } = parseDateRange(String(opts.from), undefined);
  return {
    modelPattern: text('--model', opts.model, 100)!,
    provider: text('--provider', opts.provider, 100),
    effectiveFrom: from!,
    inputPerMtok: price('--input', opts.input)!,
    outputPerMtok: price('--output', opts.output)!,
    cacheReadPerMtok: price('--cache-read', opts.cacheRead),
    cacheWritePerMtok: price('--cache-write', opts.cacheWrite),
    currency,
  };
}

export async function pricesSet(ctx: CliContext, opts: Opts): Promise<void> {
  const input = overrideOf(opts);
  const row = await withDataSource(ctx, (ds) => addPriceOverride(ds, input));
  if (opts.json) return printJson(ctx, overrideJson(row));
  ctx.out(`stored price override ${row.id}: ${describe(row)}`);
}

export async function pricesList(ctx: CliContext, opts: { json?: boolean }): Promise<void> {
  const rows = await withDataSource(ctx, (ds) => listPriceOverrides(ds));
  if (opts.json) return printJson(ctx, { overrides: rows.map(overrideJson) });
  if (rows.length === 0) return ctx.out('no price overrides: every step is priced by the bundled price table');
  const table = rows.map((r) => {
    const j = overrideJson(r);
    return [
      j.id,
      j.modelPattern,
      j.provider ?? '(any)',
      j.effectiveFrom,
      j.inputPerMtok,
      j.outputPerMtok,
      j.cacheReadPerMtok ?? '',
      j.cacheWritePerMtok ?? '',
    ];
  });
  for (const line of renderTable(
    ['ID', 'MODEL', 'PROVIDER', 'FROM', 'INPUT/Mtok', 'OUTPUT/Mtok', 'CACHE READ', 'CACHE WRITE'],
    table,
  ))
    ctx.out(line);
}

export async function pricesShow(ctx: CliContext, id: string, opts: { json?: boolean }): Promise<void> {
  const row = await withDataSource(ctx, (ds) => getPriceOverride(ds, String(id).trim()));
  if (!row) throw new CliError(`price override "${id}" not found (plan-ledger prices list shows them)`, 'not-found');
  if (opts.json) return printJson(ctx, overrideJson(row));
  ctx.out(`${row.id}: ${describe(row)}`);
}

/** What `prices reprice` is asked to do, from its flags (before anything connects). */
function repriceRequestOf(opts: Opts) {
  if (opts.dryRun && opts.yes) throw new CliError('--dry-run and --yes cannot be combined', 'usage');
  if (!opts.dryRun && !opts.yes)
    throw new CliError(
      'prices reprice changes stored costs: add --dry-run to see the diff, or --yes to apply it',
      'usage',
    );
  const range = parseDateRange(String(opts.from), String(opts.to));
  return {
    from: range.from!,
    to: range.to!,
    model: text('--model', opts.model, 100) ?? undefined,
    apply: Boolean(opts.yes),
  };
}

export async function pricesReprice(ctx: CliContext, opts: Opts): Promise<void> {
  const req = repriceRequestOf(opts);
  const outcome = await withDataSource(ctx, (ds) => repriceSteps(ds, req));
  const json = {
    ...outcome,
    oldCost: show(outcome.oldCost),
    newCost: show(outcome.newCost),
    byModel: outcome.byModel.map((l) => ({ ...l, oldCost: show(l.oldCost), newCost: show(l.newCost) })),
  };
  if (opts.json) return printJson(ctx, json);
  const rows = json.byModel.map((l) => [
    l.model ?? '(no model)',
    l.steps,
    l.changedSteps,
    l.oldCost,
    l.newCost,
    l.oldUnpriced,
    l.newUnpriced,
  ]);
  for (const line of renderTable(
    ['MODEL', 'STEPS', 'CHANGED', 'OLD USD', 'NEW USD', 'OLD UNPRICED', 'NEW UNPRICED'],
    rows,
  ))
    ctx.out(line);
  ctx.out(
    outcome.applied
      ? `repriced ${outcome.changedSteps} steps of ${outcome.plans} plans: $${json.oldCost} -> $${json.newCost} (audit ${outcome.auditId})`
      : opts.dryRun
        ? `dry run: ${outcome.changedSteps} of ${outcome.steps} steps would change, $${json.oldCost} -> $${json.newCost}; nothing written`
        : `nothing to change: ${outcome.steps} steps already at these prices`,
  );
}

const show = (column: string) => displayMoney(moneyFromColumn(column) ?? 0n);

function overrideJson(r: PriceOverrideRow) {
  const p = (v: string | null) => (v === null ? null : show(v));
  return {
    id: r.id,
    modelPattern: r.modelPattern,
    provider: r.provider ?? null,
    effectiveFrom: new Date(r.effectiveFrom).toISOString(),
    inputPerMtok: p(r.inputPerMtok)!,
    outputPerMtok: p(r.outputPerMtok)!,
    cacheReadPerMtok: p(r.cacheReadPerMtok ?? null),
    cacheWritePerMtok: p(r.cacheWritePerMtok ?? null),
    currency: r.currency,
    createdAt: new Date(r.createdAt).toISOString(),
  };
}

function describe(r: PriceOverrideRow): string {
  const j = overrideJson(r);
  const cache = [
    j.cacheReadPerMtok && `cache read $${j.cacheReadPerMtok}`,
    j.cacheWritePerMtok && `cache write $${j.cacheWritePerMtok}`,
  ].filter(Boolean);
  return `${j.modelPattern} (${j.provider ?? 'any provider'}) from ${j.effectiveFrom}: input $${j.inputPerMtok}, output $${j.outputPerMtok}${cache.length ? `, ${cache.join(', ')}` : ''} per million tokens`;
}
