import type { DataSource } from 'typeorm';
import type { Logger } from '../shared/logger';
import { sqlDialectOf } from '../store/sql/dialects';
import type { RetentionPolicy } from './retention-config';
import { Pacer, RunContext } from './retention-batch';
import { emptyReport, RetentionReport } from './retention-report';
import { maxIdsPerStatement } from './retention-sql';
import { retirementCutoff, retirePlans } from './plan-retirement';
import { purgeCutoff, purgeOrphans, purgePlans } from './plan-purge';
import { orphanCutoff, retireOrphans } from './orphan-retirement';
import { dagCutoff, expireDags } from './dag-expiry';

export interface RetentionRunOptions {
  /** The run's clock: ages are measured against it. @defaultValue `new Date()` */
  now?: Date;
  /** Report what would be done without changing anything (reads only, takes no lock). @defaultValue false */
  dryRun?: boolean;
  /** One structured line per run (and a warning per retried batch). @defaultValue none */
  logger?: Logger;
  /** Stops the run between two batches; what is done stays done, the next run continues. */
  signal?: AbortSignal;
  /** Stop after this many batches (small steps; tests of an interrupted run). @defaultValue no limit */
  maxBatches?: number;
}

/**
 * One retention pass over `ds`, the library call behind the scheduler, the CLI and the tests:
 *  1. purge plans (then orphans) soft-deleted longer ago than the grace period, children first;
 *  2. soft-delete terminal plans past their status's retention, with everything they own;
 *  3. soft-delete orphan plans (events, no plan.created) idle for RETENTION_ORPHAN_DAYS;
 *  4. expire DAGs/checkpoints of finished workflows, and purge expired ones past the grace period.
 * Purging first means a plan soft-deleted today is purged by a run at least `graceDays` later,
 * never by this one. Every batch is one transaction under the plans' head locks, of at most
 * `batchSize` plans and `maxRowsPerTransaction` rows (a larger plan in chunks: row-batches.ts), so
 * two runs at once (or a worker rebuilding a plan) neither double-delete nor deadlock, and a run
 * stopped at any point is finished by the next.
 */
export async function runRetention(
  ds: DataSource,
  policy: Readonly<RetentionPolicy>,
  options: RetentionRunOptions = {},
): Promise<RetentionReport> {
  const started = Date.now();
  const now = options.now ?? new Date();
  const dialect = sqlDialectOf(ds);
  const batchSize = Math.min(policy.batchSize, maxIdsPerStatement(dialect));
  const clock = { now, policy };
  const iso = (d: Date | null) => (d ? d.toISOString() : null);
  const report = emptyReport(options.dryRun ?? false, now, batchSize, policy.maxRowsPerTransaction, {
    completed: retirementCutoff(clock, 'completed').toISOString(),
    failed: retirementCutoff(clock, 'failed').toISOString(),
    cancelled: retirementCutoff(clock, 'cancelled').toISOString(),
    purge: purgeCutoff(clock).toISOString(),
    dag: iso(dagCutoff(clock)),
    orphan: iso(orphanCutoff(clock)),
  });
  const ctx: RunContext = {
    ds,
    dialect,
    policy,
    now,
    dryRun: report.dryRun,
    batchSize,
    maxRows: policy.maxRowsPerTransaction,
    report,
    logger: options.logger,
    signal: options.signal,
    maxBatches: options.maxBatches,
    wouldRetire: new Set(),
    wouldPurgeSessions: new Set(),
    heldParents: new Set(),
    // a dry run writes nothing and holds no locks: nothing to rest for (an operator waits for its answer)
    pacer: new Pacer(report.dryRun ? 0 : policy.pausePercent, options.signal),
  };
  // a failure propagates as is: the caller reports it once (the CLI as one line, the scheduler's worker as a failed
  // job)
  // every statement of the run gets retention's request timeout (SQL Server), not the worker's
  await dialect.withRequestTimeout(policy.requestTimeoutSeconds * 1000, async () => {
    for (const phase of [purgePlans, purgeOrphans, retirePlans, retireOrphans, expireDags]) await phase(ctx);
  });
  report.durationMs = Date.now() - started;
  report.pausedMs = Math.round(ctx.pacer.pausedMs);
  options.logger?.info(
    {
      dryRun: report.dryRun,
      plansSoftDeleted: report.plans.softDeleted,
      plansPurged: report.plans.purged,
      orphansSoftDeleted: report.orphans.softDeleted,
      orphansPurged: report.orphans.purged,
      dagsExpired: report.dags.expired,
      dagsPurged: report.dags.purged,
      dagsStamped: report.dags.stamped,
      batches: report.batches,
      complete: report.complete,
      stoppedBy: report.stoppedBy,
      durationMs: report.durationMs,
      pausedMs: report.pausedMs,
    },
    report.dryRun ? 'retention dry run' : 'retention run',
  );
  return report;
}
