import { setTimeout as delay } from 'node:timers/promises';
import type { DataSource, EntityManager } from 'typeorm';
import type { Logger } from '../shared/logger';
import { dbErrorCode, isRetryableDbError, isTooManyLocksError } from '../store/db-errors';
import { runSerialized } from '../store/sql/serial-queue';
import type { SqlDialect } from '../store/sql/sql-dialect';
import type { RetentionPolicy } from './retention-config';
import type { RetentionReport } from './retention-report';
import { lockHeads, PlanTable } from './retention-sql';
import { sqlDialectOf } from '../store/sql/dialects';
import { keepingRollups } from '../store/rollups/rollup-measure';

/** Everything one run's phases share. Built by runRetention; nothing here outlives the run. */
export interface RunContext {
  ds: DataSource;
  dialect: SqlDialect;
  policy: Readonly<RetentionPolicy>;
  now: Date;
  dryRun: boolean;
  /** Plan ids per batch: the policy's, capped for the database. */
  batchSize: number;
  /** Rows one transaction changes at most (the policy's maxRowsPerTransaction). */
  maxRows: number;
  report: RetentionReport;
  logger?: Logger;
  signal?: AbortSignal;
  /** Stop after this many batches (tests, benchmarks, operators who want small steps). */
  maxBatches?: number;
  /** Dry run only: plans it would have soft-deleted, so later phases treat them as deleted. */
  wouldRetire: Set<string>;
  /** Dry run only: sessions it would have deleted, counted once. */
  wouldPurgeSessions: Set<string>;
  /** Parents of plans this run purged (dry run: would purge): purged by a later run, by their own age. */
  heldParents: Set<string>;
  /** The rests between the run's transactions (the policy's pausePercent). */
  pacer: Pacer;
}

/**
 * Rests between a run's transactions (RETENTION_PAUSE_PERCENT): after each, for `percent` % of the
 * time worked since the last rest (the transaction and the reads that chose its rows), so the run
 * holds the database for at most 100 / (100 + percent) of its time. An abort of `signal` ends a rest
 * at once (the run then stops before its next transaction).
 */
export class Pacer {
  private workingSince = performance.now();
  /** Time spent resting, in ms. */
  pausedMs = 0;

  constructor(
    private readonly percent: number,
    private readonly signal?: AbortSignal,
  ) {}

  async rest(): Promise<void> {
    const ms = ((performance.now() - this.workingSince) * this.percent) / 100;
    if (ms >= 1 && !this.signal?.aborted) {
      const started = performance.now();
      await delay(ms, undefined, { signal: this.signal }).catch((err: unknown) => {
        if ((err as Error).name !== 'AbortError') throw err;
      });
      this.pausedMs += performance.now() - started;
    }
    this.workingSince = performance.now();
  }
}

/** Rows per plan table, and session rows removed with them. */
export type TableCountMap = Partial<Record<PlanTable, number>> & { sessions?: number };

/**
 * Deadlocks and lock time-outs are expected when retention races a worker rebuild or another
 * run: the batch is rolled back whole and simply run again (it re-checks what still qualifies).
 */
const ATTEMPTS = 5;
const BACKOFF_MS = 100;

/** True when the run must stop before its next batch; records why in the report. */
export function shouldStop(ctx: RunContext): boolean {
  if (ctx.signal?.aborted) ctx.report.stoppedBy = 'aborted';
  else if (ctx.maxBatches !== undefined && ctx.report.batches >= ctx.maxBatches) ctx.report.stoppedBy = 'maxBatches';
  else return false;
  ctx.report.complete = false;
  return true;
}

/**
 * `work` in one READ COMMITTED transaction that first takes these plans' `plan_heads` locks in key
 * order, retried whole on a deadlock or lock time-out. Shared by retention and session erasure.
 * What `work` changes of these plans' rows is carried into the analytics rollups in the same
 * transaction (keepingRollups).
 */
export async function underHeadLocks<T>(
  ds: DataSource,
  ids: string[],
  work: (m: EntityManager) => Promise<T>,
  logger?: Logger,
): Promise<T> {
  return inTransaction(
    ds,
    async (m) => {
      await lockHeads(m, lockOrder(ids)).execute();
      return keepingRollups(m, ids, () => work(m));
    },
    logger,
    { plans: ids.length },
  );
}

/**
 * `work` in one write transaction (see `transaction`), retried whole on a deadlock or lock time-out.
 * A transaction refused for holding too many locks is not retried as it was: it would fail again
 * (row-batches.ts runs it again over fewer rows).
 */
export async function inTransaction<T>(
  ds: DataSource,
  work: (m: EntityManager) => Promise<T>,
  logger?: Logger,
  logFields: Record<string, unknown> = {},
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await runSerialized(ds, () => transaction(ds, work));
    } catch (err) {
      if (isTooManyLocksError(err) || !isRetryableDbError(err) || attempt >= ATTEMPTS) throw err;
      logger?.warn({ attempt, code: dbErrorCode(err), ...logFields }, 'batch hit a lock conflict; retrying');
      await sleep(BACKOFF_MS * 2 ** (attempt - 1) * (0.5 + Math.random()));
    }
  }
}

/**
 * The dialect's write transaction, the worker's too: once a head lock is granted, the next
 * statement must see what its previous holder committed, which MySQL's REPEATABLE READ would not.
 */
function transaction<T>(ds: DataSource, work: (m: EntityManager) => Promise<T>): Promise<T> {
  return sqlDialectOf(ds).transaction(ds, work);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Sorted, de-duplicated ids: the lock order every batch uses. */
export function lockOrder(ids: Iterable<string>): string[] {
  return [...new Set(ids)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

/** Keyset value to pass back to the database exactly as it came (SQLite text, Dates elsewhere). */
export type Keyset = { at: unknown; id: string };
