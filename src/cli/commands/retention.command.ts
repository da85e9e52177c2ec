import type { Command } from 'commander';
import type { DataSource } from 'typeorm';
import type { CliContext } from '../cli-context';
import { ConfigError } from '../../config/config';
import { loadRetentionPolicy, RetentionPolicy, RETENTION_ENV_HELP } from '../../retention/retention-config';
import { runRetention } from '../../retention/retention.service';
import { formatReport } from '../../retention/retention-report';
import { CliError, EXIT } from '../exit-codes';
import { withDataSource } from '../with-data-source';

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
  if (opts.json) return ctx.raw(JSON.stringify(report));
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

/** One small DataSource for the command, always closed; a missing schema says how to fix it. */
export function withRetentionSource<T>(ctx: CliContext, fn: (ds: DataSource) => Promise<T>): Promise<T> {
  return withDataSource(ctx, fn, 2);
}
