import type { DataSource } from 'typeorm';
import type { CliContext } from '../cli-context';
import { QueryArgumentError } from '../../queries/query-errors';
import { CliError, EXIT } from '../exit-codes';
import { withDataSource } from '../with-data-source';

/**
 * Shared shell of the read commands (plans, sessions, workflows, steps, analytics): validate
 * arguments before connecting, open one small DataSource, always close it, and map the read
 * side's errors to exit codes (bad argument: 2; not found: 1 through main's default).
 */
export function parseArgs<T>(parse: () => T): T {
  try {
    return parse();
  } catch (err) {
    if (err instanceof QueryArgumentError) throw new CliError(err.message, EXIT.usage);
    throw err;
  }
}

export async function withReadSource<T>(ctx: CliContext, name: string, fn: (ds: DataSource) => Promise<T>): Promise<T> {
  const started = Date.now();
  try {
    // two connections: a read fans out a few independent SELECTs (ignored on SQLite)
    const result = await withDataSource(ctx, fn, 2);
    ctx.logger.debug({ command: name, durationMs: Date.now() - started }, 'read done');
    return result;
  } catch (err) {
    if (err instanceof QueryArgumentError) throw new CliError(err.message, EXIT.usage);
    throw err;
  }
}

export function printJson(ctx: CliContext, value: unknown): void {
  ctx.raw(JSON.stringify(value, null, 2));
}

/** `--json` and `--csv` pick one output; both at once is a usage error. */
export function outputFormat(opts: { json?: boolean; csv?: boolean }): 'json' | 'csv' | 'text' {
  if (opts.json && opts.csv) throw new CliError('--json and --csv cannot be combined', EXIT.usage);
  return opts.json ? 'json' : opts.csv ? 'csv' : 'text';
}
