import type { Command } from 'commander';
import type { DataSource } from 'typeorm';
import type { CliContext } from '../cli-context';
import { ConfigError } from '../../config/config';
import { openDataSource } from '../../store/data-source';
import { loadRetentionPolicy, RetentionPolicy, RETENTION_ENV_HELP } from '../../retention/retention-config';
import { runRetention } from '../../retention/retention.service';
import { formatReport } from '../../retention/retention-report';
import { CliError, EXIT } from '../exit-codes';

interface RunOptions {
  dryRun?: boolean;
  json?: boolean;
}

export const RETENTION_ENV_TEXT = `\nRetention policy (environment):\n${RETENTION_ENV_HELP.map(([name, help]) => `  ${name.padEnd(26)}${help}`).join('\n')}`;

export function registerRetention(program: Command, context: () => CliContext): void {
  const retention = program
    .command('retention')
    .description('retire old plans: soft delete past retention, purge after the grace period, expire finished workflows\' DAGs');
  retention
    .command('run')
    .description('run retention once now with the RETENTION_* policy and report, per table, what it did (the worker also runs it on RETENTION_CRON)')
    .option('--dry-run', 'report what would be soft-deleted, expired and purged; change nothing, lock nothing')
    .option('--json', 'print the report as one JSON object')
    .addHelpText('after', `${RETENTION_ENV_TEXT}\n\nExamples:\n  plan-ledger retention run --dry-run\n  RETENTION_COMPLETED_DAYS=14 plan-ledger retention run --json`)
    .action(async (opts: RunOptions) => retentionRun(context(), opts));
}

export async function retentionRun(ctx: CliContext, opts: RunOptions): Promise<void> {
  const policy = retentionPolicyFromEnv(ctx.env);
  const report = await withRetentionSource(ctx, (ds) => runRetention(ds, policy, { dryRun: opts.dryRun ?? false, logger: ctx.logger }));
  if (opts.json) return ctx.out(JSON.stringify(report));
  for (const line of formatReport(report)) ctx.out(line);
}

/** The RETENTION_* variables, from the environment the CLI's config was read from. */
export function retentionPolicyFromEnv(env: Record<string, string | undefined>): Readonly<RetentionPolicy> {
  try {
    return loadRetentionPolicy(env);
  } catch (err) {
    if (err instanceof ConfigError) throw new CliError(err.message, EXIT.usage);
    throw err;
  }
}

const MISSING_SCHEMA = /no such table|relation .* does not exist|doesn't exist|Invalid object name/i;

/** One small DataSource for the command, always closed; a missing schema says how to fix it. */
export async function withRetentionSource<T>(ctx: CliContext, fn: (ds: DataSource) => Promise<T>): Promise<T> {
  const ds = await openDataSource(ctx.config.database, { poolSize: 2 });
  try {
    return await fn(ds);
  } catch (err) {
    const message = (err as Error)?.message ?? String(err);
    if (MISSING_SCHEMA.test(message)) throw new CliError(`${message} (is the schema migrated? run: plan-ledger migrate)`, EXIT.failed);
    throw err;
  } finally {
    await ds.destroy().catch(() => undefined);
  }
}
