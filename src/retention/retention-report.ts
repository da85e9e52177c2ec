import { PLAN_TABLES, PlanTable } from './retention-sql';

/** Rows one table lost (or would lose, in a dry run). */
export interface TableCounts {
  /**
   * Rows retired: stamped `deleted_at` (a plan's row and head, DAG expiry, orphan retirement), or
   * hidden, unchanged, through their soft-deleted plan (its events, steps, handoffs, decisions, DAG).
   */
  softDeleted: number;
  /** Rows deleted for good (soft-deleted longer than the grace period). */
  purged: number;
}

/** Why a run stopped before finishing; the next run resumes where it left off. */
export type StopReason = 'maxBatches' | 'aborted';

/** What one retention run did, or with `dryRun` would do. JSON-ready. */
export interface RetentionReport {
  dryRun: boolean;
  /** The run's clock (ISO-8601 UTC). */
  now: string;
  /** Instants the run compared against: rows older than these qualified. */
  cutoffs: {
    completed: string;
    failed: string;
    cancelled: string;
    /** Soft-deleted at or before this instant: purged. */
    purge: string;
    /**
     * Completed/cancelled workflows ended at or before this (and not stamped later): DAG and checkpoints expire; null
     * = off.
     */
    dag: string | null;
    /** No activity since this and no plan.created: orphan events retired; null = off. */
    orphan: string | null;
  };
  /** Whole plans (execution_plans rows). */
  plans: TableCounts;
  /** Plans with events but no execution_plans row. */
  orphans: TableCounts;
  /** Sessions whose last plan was purged (no plan row, head or event of theirs left). */
  sessions: { purged: number };
  /** Workflow DAGs expired on their own (their plan stays). */
  dags: { expired: number; purged: number; stamped: number };
  /** Per table, every phase summed. */
  tables: Record<PlanTable, TableCounts>;
  /** Plan ids per statement after the per-database cap. */
  batchSize: number;
  /** Rows one transaction changes at most (a plan with more: in chunks of this many). */
  maxRowsPerTransaction: number;
  /** Transactions run (dry run: batches examined). */
  batches: number;
  complete: boolean;
  stoppedBy?: StopReason;
  durationMs: number;
  /** Of durationMs, the time rested between transactions (RETENTION_PAUSE_PERCENT). */
  pausedMs: number;
}

export function emptyReport(
  dryRun: boolean,
  now: Date,
  batchSize: number,
  maxRowsPerTransaction: number,
  cutoffs: RetentionReport['cutoffs'],
): RetentionReport {
  const tables = Object.fromEntries(PLAN_TABLES.map((t) => [t.table, { softDeleted: 0, purged: 0 }])) as Record<
    PlanTable,
    TableCounts
  >;
  return {
    dryRun,
    now: now.toISOString(),
    cutoffs,
    plans: { softDeleted: 0, purged: 0 },
    orphans: { softDeleted: 0, purged: 0 },
    sessions: { purged: 0 },
    dags: { expired: 0, purged: 0, stamped: 0 },
    tables,
    batchSize,
    maxRowsPerTransaction,
    batches: 0,
    complete: true,
    durationMs: 0,
    pausedMs: 0,
  };
}

/** Add per-table counts of one batch to the report. */
export function addTableCounts(
  report: RetentionReport,
  kind: keyof TableCounts,
  counts: Partial<Record<PlanTable | 'sessions', number>>,
): void {
  for (const [table, n] of Object.entries(counts) as Array<[PlanTable | 'sessions', number]>) {
    if (table === 'sessions') report.sessions.purged += n;
    else report.tables[table][kind] += n;
  }
}

/** Report lines for people: one per table that changed, then the totals. */
export function formatReport(r: RetentionReport): string[] {
  const soft = r.dryRun ? 'would soft-delete' : 'soft-deleted';
  const purge = r.dryRun ? 'would purge' : 'purged';
  const lines = [`${'table'.padEnd(22)}${soft.padStart(18)}${purge.padStart(14)}`];
  for (const t of PLAN_TABLES) {
    const c = r.tables[t.table];
    lines.push(`${t.table.padEnd(22)}${String(c.softDeleted).padStart(18)}${String(c.purged).padStart(14)}`);
  }
  lines.push(
    `plans: ${r.plans.softDeleted} ${soft}, ${r.plans.purged} ${purge}; ` +
      `orphan plans: ${r.orphans.softDeleted} ${soft}, ${r.orphans.purged} ${purge}; ` +
      `empty sessions: ${r.sessions.purged} ${purge}; ` +
      `DAGs: ${r.dags.stamped} ${r.dryRun ? 'would get' : 'got'} expires_at, ${r.dags.expired} ${r.dryRun ? 'would expire' : 'expired'}, ${r.dags.purged} ${purge}`,
  );
  const end = r.complete ? 'complete' : `stopped early (${r.stoppedBy}); the next run continues`;
  lines.push(
    `${r.dryRun ? 'dry run, nothing changed' : 'done'}: ${r.batches} batches of up to ${r.batchSize} plans and ${r.maxRowsPerTransaction} rows in ${r.durationMs} ms${r.pausedMs > 0 ? ` (${r.pausedMs} ms of it resting between them)` : ''}, ${end}`,
  );
  return lines;
}
