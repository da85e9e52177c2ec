import type { DataSource, EntityManager } from 'typeorm';
import type { PlanEventOf } from '../../contracts';
import { sleep } from '../../shared/backoff';
import { isRetryableDbError } from '../db-errors';
import { ENTITY, type ApprovalRow } from '../entities';
import { lockStoredHeads } from '../ledger/plan-heads';
import { sqlDialectOf } from '../sql/dialects';
import { runSerialized } from '../sql/serial-queue';
import { type ApprovalChange, decideByStoredDecisions, decidedChange, writeDecisions } from './approval-apply';

/** Undecided approvals read per page (and decided per transaction) unless the caller says otherwise. */
export const REPAIR_PAGE_SIZE = 500;

/** Tries of one page's transaction that met another writer (SQLite busy, a deadlock victim). */
const PAGE_ATTEMPTS = 20;

/** An approval the repair decided (or, in a dry run, would decide), with the decision that decides it. */
export interface RepairedApproval {
  approvalId: string;
  planId: string;
  decision: string;
  decidedBy: string;
  /** The eventId of the `approval.decided` that decides it. */
  decisionEventId: string;
  /** Its decidedAt: the decision's occurredAt, ISO 8601. */
  decidedAt: string;
}

export interface ApprovalRepairOptions {
  /** Only find them: no lock taken, nothing written. */
  dryRun?: boolean;
  /** Undecided approvals per page and transaction. @defaultValue REPAIR_PAGE_SIZE */
  pageSize?: number;
  /**
   * Told after each page (after its commit, when not a dry run): the undecided approvals scanned so
   * far, and what the page decided as the worker reports it (ApprovalChange), for its waiters.
   */
  onPage?(page: { scanned: number; changes: readonly ApprovalChange[] }): void | Promise<void>;
}

export interface ApprovalRepairResult {
  /** Undecided, unconsumed approvals looked at. */
  scanned: number;
  /** Those a decision of the log decided (dry run: would decide), in approvalId order. */
  repaired: RepairedApproval[];
}

/** How many approvals are undecided and unconsumed: what a repair scans (its progress' total). */
export async function countUndecidedApprovals(m: EntityManager): Promise<number> {
  const row = await m
    .createQueryBuilder()
    .select('COUNT(*)', 'n')
    .from(ENTITY.approval, 'a')
    .where('a.decision IS NULL AND a.consumedAt IS NULL')
    .getRawOne<{ n: unknown }>();
  return Number(row?.n ?? 0);
}

/**
 * The next page of undecided, unconsumed approvals after `after` in approvalId order (`''`: from the
 * first): a keyset over the primary key, one statement text whatever the page.
 */
export function undecidedPageStatement(m: EntityManager, after: string, limit: number) {
  return m
    .getRepository<ApprovalRow>(ENTITY.approval)
    .createQueryBuilder('a')
    .where('a.decision IS NULL AND a.consumedAt IS NULL AND a.approvalId > :after', { after })
    .orderBy('a.approvalId', 'ASC')
    .limit(limit);
}

/**
 * Decides the approvals a worker of an earlier version left pending although the log holds their
 * decision: an `approval.decided` stored before its `approval.requested` (it overtook the request
 * on the way) decided nothing then. Since then the worker decides the request's row by it as the
 * row is inserted; this gives stored rows the same decision, by the same rule and code
 * (decideByStoredDecisions: same plan and approvalId, the request's seq, the first stored), the
 * same columns written (writeDecisions) and the same `decided` change reported (onPage).
 *
 * Undecided, unconsumed approvals are read a page at a time by approvalId (a keyset: each page
 * starts after the last id of the one before, so a run ends however many it decides). Each page is
 * one transaction under its plans' head locks, the lock every writer of a plan takes first (the
 * worker storing an event, a consume, the expiry check), and re-read under them: a row the worker
 * or a consume got to meanwhile is left alone, and running beside a worker is safe. A dry run reads
 * the same pages and the same log without a lock and writes nothing.
 */
export async function repairApprovals(
  ds: DataSource,
  options: ApprovalRepairOptions = {},
): Promise<ApprovalRepairResult> {
  const dialect = sqlDialectOf(ds);
  const pageSize = Math.max(1, Math.min(options.pageSize ?? REPAIR_PAGE_SIZE, dialect.maxIdsPerStatement));
  const result: ApprovalRepairResult = { scanned: 0, repaired: [] };
  let after = '';
  for (;;) {
    const page = await undecidedPageStatement(ds.manager, after, pageSize).getMany();
    if (page.length === 0) break;
    after = page[page.length - 1].approvalId;
    result.scanned += page.length;
    const decided = options.dryRun
      ? await decideByStoredDecisions(ds.manager, dialect, page)
      : await decidePage(
          ds,
          page.map((r) => r.approvalId),
          [...new Set(page.map((r) => r.planId))],
        );
    const changes: ApprovalChange[] = [];
    for (const row of page) {
      const e = decided.get(row.approvalId);
      if (!e) continue;
      result.repaired.push(repairedOf(row.approvalId, e));
      changes.push(decidedChange(e));
    }
    await options.onPage?.({ scanned: result.scanned, changes: options.dryRun ? [] : changes });
    if (page.length < pageSize) break;
  }
  return result;
}

/** One page in its transaction: the plans' heads locked, the rows read again, decided, written. */
async function decidePage(
  ds: DataSource,
  approvalIds: string[],
  planIds: string[],
): Promise<Map<string, PlanEventOf<'approval.decided'>>> {
  const dialect = sqlDialectOf(ds);
  for (let attempt = 1; ; attempt++) {
    try {
      return await runSerialized(ds, () =>
        dialect.transaction(ds, async (m) => {
          await lockStoredHeads(m, dialect, planIds);
          const rows = (await dialect.rows(m).findIn<ApprovalRow>(ENTITY.approval, 'approvalId', approvalIds))
            .filter((r) => r.decision === null && r.consumedAt === null)
            .sort((a, b) => (a.approvalId < b.approvalId ? -1 : a.approvalId > b.approvalId ? 1 : 0));
          const decided = await decideByStoredDecisions(m, dialect, rows);
          await writeDecisions(
            m,
            dialect,
            rows.filter((r) => decided.has(r.approvalId)),
          );
          return decided;
        }),
      );
    } catch (err) {
      // another writer (SQLite's one writer, a deadlock victim): the page's transaction may pass
      if (!isRetryableDbError(err) || attempt >= PAGE_ATTEMPTS) throw err;
      await sleep(5 * attempt + Math.random() * 10 * attempt);
    }
  }
}

function repairedOf(approvalId: string, e: PlanEventOf<'approval.decided'>): RepairedApproval {
  return {
    approvalId,
    planId: e.planId,
    decision: e.payload.decision,
    decidedBy: e.payload.decidedBy,
    decisionEventId: e.eventId,
    decidedAt: new Date(e.occurredAt).toISOString(),
  };
}
