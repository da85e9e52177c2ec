import type { DataSource } from 'typeorm';
import type { CliContext } from '../cli-context';
import { CliError } from '../exit-codes';
import { withDataSource } from '../with-data-source';

/**
 * Shared shell of the read commands (plans, sessions, workflows, steps, analytics): each parses
 * its arguments before calling these, so a bad one ends the command before anything connects; then
 * one small DataSource is opened, and always closed. The read side's errors
 * end the command by their kind (a bad argument: 2; not found: 1; see exit-codes.ts).
 */

export async function withReadSource<T>(ctx: CliContext, name: string, fn: (ds: DataSource) => Promise<T>): Promise<T> {
  const started = Date.now();
  // two connections: a read fans out a few independent SELECTs (ignored on SQLite)
  const result = await withDataSource(ctx, fn, 2);
  ctx.logger.debug({ command: name, durationMs: Date.now() - started }, 'read done');
  return result;
}

/** `--json` and `--csv` pick one output; both at once is a usage error. */
export function outputFormat(opts: { json?: boolean; csv?: boolean }): 'json' | 'csv' | 'text' {
  if (opts.json && opts.csv) throw new CliError('--json and --csv cannot be combined', 'usage');
  return opts.json ? 'json' : opts.csv ? 'csv' : 'text';
}
