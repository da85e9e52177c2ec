import { readFileSync } from 'node:fs';
import type { CliContext } from '../cli-context';
import {
  BillingExportError,
  type BillingProvider,
  type BillLine,
  parseBillingExport,
} from '../../pricing/billing-export';
import { parseDateRange } from '../../queries/query-args';
import { parseFailOver, reconcileReport, type Reconciliation } from '../../queries/reconcile.query';
import { formatInt, renderTable } from '../../queries/text-output';
import { pushAll } from '../../shared/arrays';
import { escapeControl } from '../../shared/terminal-text';
import { CheckFailedError, CliError } from '../exit-codes';
import { printJson } from '../cli-context';
import { withReadSource } from './read-command';

/** `cost reconcile`'s options as commander gives them (the file options repeat). */
export interface ReconcileOptions {
  openai?: string[];
  anthropic?: string[];
  from?: string;
  to?: string;
  failOver?: string;
  json?: boolean;
}

export async function runReconcile(ctx: CliContext, opts: ReconcileOptions): Promise<void> {
  // arguments first, before anything connects
  const chosen = (['openai', 'anthropic'] as const).filter((p) => (opts[p]?.length ?? 0) > 0);
  if (chosen.length !== 1)
    throw new CliError('give the export of one provider: --openai <file> or --anthropic <file>', 'usage');
  const provider: BillingProvider = chosen[0]!;
  const files = opts[provider]!;
  const range = parseDateRange(opts.from, opts.to);
  const failOver = opts.failOver === undefined ? undefined : parseFailOver(opts.failOver);
  const bill: BillLine[] = [];
  for (const file of files) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      throw new BillingExportError(`${file}: cannot be read (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
    }
    pushAll(bill, parseBillingExport(provider, file, text));
  }
  const result = await withReadSource(ctx, 'cost reconcile', (ds) =>
    reconcileReport(ds, provider, bill, range, failOver),
  );
  if (opts.json) printJson(ctx, result);
  else for (const line of reconcileText(result)) ctx.out(line);
  if (result.check?.beyond) throw new CheckFailedError(`cost reconcile: ${result.check.beyond}`);
}

const n = (v: number) => formatInt(v);
const pctText = (v: number | null) => (v === null ? '-' : `${v.toFixed(2)} %`);

function reconcileText(r: Reconciliation): string[] {
  const out = [
    `${r.provider} bill from ${r.from ?? '(start)'} to ${r.to ?? '(end)'} (UTC days; to exclusive)`,
    r.billed.usage
      ? `tokens: ledger ${n(r.ledger.totalTokens)}, billed ${n(r.billedTotals.totalTokens)}, coverage ${pctText(r.coveragePct)}` +
        ` (cache read ${n(r.ledger.cacheReadTokens)}/${n(r.billedTotals.cacheReadTokens)}, cache write ${n(r.ledger.cacheWriteTokens)}/${n(r.billedTotals.cacheWriteTokens)})`
      : 'tokens: the export has no usage rows',
    r.billed.cost
      ? `cost: ledger ${r.ledger.cost} USD, billed ${r.billedTotals.cost} USD, delta ${r.costDelta} USD (${pctText(r.costDeltaPct)})`
      : `cost: ledger ${r.ledger.cost} USD; the export has no cost rows`,
  ];
  if (r.ledger.unpricedSteps > 0) out.push(`unpriced ledger steps (no cost counted): ${n(r.ledger.unpricedSteps)}`);
  out.push('');
  pushAll(
    out,
    renderTable(
      ['model', 'ledger_tokens', 'billed_tokens', 'coverage', 'ledger_usd', 'billed_usd', 'delta_usd'],
      r.byModel.map((m) => [
        escapeControl(m.model),
        n(m.ledger.totalTokens),
        m.billed ? n(m.billed.totalTokens) : '-',
        pctText(m.coveragePct),
        m.ledger.cost,
        m.billed?.cost ?? '-',
        m.costDelta ?? '-',
      ]),
    ),
  );
  const u = r.unattributed;
  if (u.billedModelsNotInLedger.length > 0)
    out.push('', `billed, no ledger step: ${u.billedModelsNotInLedger.map((m) => escapeControl(m.model)).join(', ')}`);
  if (u.ledgerModelsNotBilled.length > 0)
    out.push('', `in the ledger, not billed: ${u.ledgerModelsNotBilled.map((m) => escapeControl(m.model)).join(', ')}`);
  if (u.costWithoutModel !== null && u.costWithoutModel !== '0.00')
    out.push('', `billed cost naming no model (tools, storage): ${u.costWithoutModel} USD`);
  const differing = r.byDay.filter((d) => d.coveragePct !== 100 && d.coveragePct !== null).length;
  out.push('', `days x models: ${n(r.byDay.length)}, with a token difference: ${n(differing)} (--json lists each)`);
  return out;
}
