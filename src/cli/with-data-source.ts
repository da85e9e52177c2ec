import type { DataSource } from 'typeorm';
import { openDataSource } from '../store/data-source';
import type { CliContext } from './cli-context';
import { CliError } from './exit-codes';

const MISSING_SCHEMA = /no such table|relation .* does not exist|doesn't exist|Invalid object name/i;

/**
 * One small DataSource for a one-shot command, always closed. A missing table says how to fix it
 * (run plan-ledger migrate) instead of surfacing as a bare driver error.
 */
export async function withDataSource<T>(ctx: CliContext, fn: (ds: DataSource) => Promise<T>, poolSize = 2): Promise<T> {
  const ds = await openDataSource(ctx.config.database, { poolSize });
  try {
    return await fn(ds);
  } catch (err) {
    const message = (err as Error)?.message ?? String(err);
    if (MISSING_SCHEMA.test(message))
      throw new CliError(`${message} (is the schema migrated? run: plan-ledger migrate)`);
    throw err;
  } finally {
    await ds.destroy().catch(() => undefined);
  }
}
