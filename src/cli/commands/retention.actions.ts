import type { DataSource } from 'typeorm';
import type { CliContext } from '../cli-context';
import { loadRetentionPolicy, RetentionPolicy } from '../../retention/retention-config';
import { runRetention } from '../../retention/retention.service';
import { formatReport } from '../../retention/retention-report';
import { withDataSource } from '../with-data-source';

export interface RunOptions {
  dryRun?: boolean;
  json?: boolean;
}

export async function retentionRun(ctx: CliContext, opts: RunOptions): Promise<void> {
  const policy = retentionPolicyFromEnv(ctx.env);
  const report = await withRetentionSource(ctx, (ds) =>
    runRetention(ds, policy, { dryRun: opts.dryRun ?? false, logger: ctx.logger }),
  );
  if (opts.json) return ctx.raw(JSON.stringify(report));
  for (const line of formatReport(report)) ctx.out(line);
}

/** The RETENTION_* variables, from the environment the CLI's config was read from. */
export function retentionPolicyFromEnv(env: Record<string, string | undefined>): Readonly<RetentionPolicy> {
  return loadRetentionPolicy(env);
}

/** One small DataSource for the command, always closed; a missing schema says how to fix it. */
export function withRetentionSource<T>(ctx: CliContext, fn: (ds: DataSource) => Promise<T>): Promise<T> {
  return withDataSource(ctx, fn, 2);
}
