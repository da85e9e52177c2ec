import { type CliContext, printJson } from '../cli-context';
import { withDataSource } from '../with-data-source';
import { createProgressReporter } from '../../dead-letters/replay-progress';
import { parseDateRange } from '../../queries/query-args';
import { QueryArgumentError } from '../../queries/query-errors';
import { countRebuildPlans, rebuildRollups, type RollupRebuild } from '../../store/rollups/rollup-rebuild';
import { sqlDialectOf } from '../../store/sql/dialects';
import { DAY_MS } from '../../shared/time-units';

export interface RebuildOptions {
  from?: string;
  to?: string;
  json?: boolean;
}

/** `--from`/`--to` as whole UTC days (`YYYY-MM-DD`): the rollups hold days, so a rebuild covers days. */
export function parseRebuildDays(opts: RebuildOptions): Pick<RollupRebuild, 'from' | 'to'> {
  const range = parseDateRange(opts.from, opts.to);
  const day = (argument: string, raw: string | undefined, at: Date | undefined) => {
    if (!at) return undefined;
    if (at.getTime() % DAY_MS !== 0)
      throw new QueryArgumentError(argument, `"${raw}" is not the start of a UTC day: give a date, e.g. 2026-02-01`);
    return at.toISOString().slice(0, 10);
  };
  const from = day('--from', opts.from, range.from);
  const to = day('--to', opts.to, range.to);
  return { ...(from ? { from } : {}), ...(to ? { to } : {}) };
}

/**
 * `analytics rebuild-rollups`: the rollups of the days asked for (all by default) deleted and summed
 * again from the stored plans and steps, in one transaction, a page of plans at a time; progress on
 * stderr. For a store whose rollups are suspect or that was loaded behind the worker's back.
 */
export async function runRebuildRollups(ctx: CliContext, opts: RebuildOptions): Promise<void> {
  const days = parseRebuildDays(opts);
  const started = Date.now();
  const result = await withDataSource(ctx, async (ds) => {
    const total = await countRebuildPlans(ds.manager, days);
    const reporter = total > 0 ? createProgressReporter(process.stderr, { label: 'rebuild-rollups' }) : undefined;
    try {
      return await sqlDialectOf(ds).transaction(ds, (m) =>
        rebuildRollups(m, { ...days, onProgress: (done) => reporter?.update({ done, total }) }),
      );
    } finally {
      reporter?.finish();
    }
  });
  const seconds = Math.round((Date.now() - started) / 100) / 10;
  const summary = { from: days.from ?? null, to: days.to ?? null, plans: result.plans, seconds };
  if (opts.json) return printJson(ctx, summary);
  const span = `${days.from ?? 'the first day'} to ${days.to ? `${days.to} (exclusive)` : 'the last'}`;
  ctx.out(`rebuilt the analytics rollups of ${result.plans} live plan(s), ${span}, in ${seconds} s`);
}
