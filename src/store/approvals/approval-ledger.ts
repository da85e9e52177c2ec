import type { DataSource, EntityManager, ObjectLiteral, SelectQueryBuilder } from 'typeorm';
import { ENTITY, type ApprovalRow } from '../entities';
import { sqlDialectOf } from '../sql/dialects';
import { runSerialized } from '../sql/serial-queue';
import { isRetryableDbError } from '../db-errors';
import { sleep } from '../../shared/backoff';
import type { ApprovalView, ConsumeOutcome, ConsumeRefusal } from '../../contracts/approval-view';

/** Tries of one consume whose transaction met another writer (SQLite busy, a deadlock). */
const CONSUME_ATTEMPTS = 20;

export type { ApprovalView, ConsumeOutcome, ConsumeRefusal } from '../../contracts/approval-view';

/** Every status of an approval, as the inbox filters on them. */
export const APPROVAL_STATUSES: readonly ApprovalView['status'][] = ['pending', 'expired', 'decided', 'consumed'];

/**
 * The age buckets of `plan_ledger_approvals_pending`: each label with the age (ms since the
 * request) it stops below; the last has no end.
 */
export const PENDING_AGE_BUCKETS: ReadonlyArray<readonly [label: string, belowMs: number]> = [
  ['<1m', 60_000],
  ['1m-10m', 600_000],
  ['10m-1h', 3_600_000],
  ['1h-1d', 86_400_000],
  ['>1d', Number.POSITIVE_INFINITY],
];

/** What the inbox lists. */
export interface ApprovalFilter {
  status?: ApprovalView['status'];
  assignee?: string;
  olderThanMs?: number;
  /** @defaultValue 100 */
  limit?: number;
}

/**
 * The digest a consume must present: the requested arguments', or for an edit the edited ones'.
 * Compared in code, byte for byte (a case-insensitive collation must not make two digests equal).
 */
export function digestToRun(row: Pick<ApprovalRow, 'decision' | 'argsDigest' | 'editedArgsDigest'>): string | null {
  return row.decision === 'edit' ? row.editedArgsDigest : row.argsDigest;
}

/** Why `row` cannot be consumed now with `argsDigest`, or undefined when it can. Order: consumed, rejected, expired, undecided, digest. */
export function refusalOf(row: ApprovalRow, argsDigest: string, now: Date): ConsumeRefusal | undefined {
  if (row.consumedAt !== null) return 'already_consumed';
  if (row.decision === 'reject') return 'rejected';
  if (new Date(row.expiresAt).getTime() <= now.getTime()) return 'expired';
  if (row.decision === null) return 'undecided';
  if (digestToRun(row) !== argsDigest) return 'args_mismatch';
  return undefined;
}

/**
 * Reads and the one write of `approvals` outside the worker: consume. A consume runs under its
 * plan's head lock, the lock every writer of the plan (the worker storing a decision included)
 * takes first, so of two racing consumes exactly one finds the row unconsumed.
 */
export class ApprovalLedger {
  constructor(private readonly ds: DataSource) {}

  /**
   * The inbox: approvals by status (`pending`: undecided and not expired), optionally only those
   * assigned to `assignee` and requested at least `olderThanMs` ago, oldest first, with their age.
   */
  async list(filter: ApprovalFilter, now = new Date()): Promise<ApprovalView[]> {
    const qb = whereApprovals(this.ds.getRepository<ApprovalRow>(ENTITY.approval).createQueryBuilder('a'), filter, now);
    const rows = await qb
      .orderBy('a.requestedAt', 'ASC')
      .addOrderBy('a.approvalId', 'ASC')
      .take(filter.limit ?? 100)
      .getMany();
    return rows
      .filter((r) => filter.assignee === undefined || r.assignee === filter.assignee)
      .map((r) => viewOf(r, now));
  }

  /**
   * Pending approvals (undecided, not expired) by age bucket (PENDING_AGE_BUCKETS), every bucket
   * listed, 0 included: one scan of the undecided rows, counted in SQL.
   */
  async pendingByAge(now = new Date()): Promise<Map<string, number>> {
    const qb = whereApprovals(
      this.ds.getRepository<ApprovalRow>(ENTITY.approval).createQueryBuilder('a').select('COUNT(*)', 'b0'),
      { status: 'pending' },
      now,
    );
    // bucket i counts the requests at least its lower bound old; differences give each bucket
    PENDING_AGE_BUCKETS.slice(0, -1).forEach(([, belowMs], i) =>
      qb
        .addSelect(`SUM(CASE WHEN a.requestedAt <= :before${i} THEN 1 ELSE 0 END)`, `b${i + 1}`)
        .setParameter(`before${i}`, new Date(now.getTime() - belowMs)),
    );
    const row = (await qb.getRawOne<Record<string, unknown>>()) ?? {};
    const atLeast = PENDING_AGE_BUCKETS.map((_, i) => Number(row[`b${i}`] ?? 0));
    return new Map(PENDING_AGE_BUCKETS.map(([label], i) => [label, atLeast[i] - (atLeast[i + 1] ?? 0)]));
  }

  async get(approvalId: string, now = new Date()): Promise<ApprovalView | undefined> {
    const row = await this.row(approvalId);
    return row ? viewOf(row, now) : undefined;
  }

  /** The stored row of an approval (with its request's seq), or undefined when no request of that id is stored. */
  async row(approvalId: string): Promise<ApprovalRow | undefined> {
    return (await this.ds.getRepository<ApprovalRow>(ENTITY.approval).findOneBy({ approvalId })) ?? undefined;
  }

  /**
   * Answer the decision once: marks the approval consumed by `by` and returns it, or returns why
   * it cannot be consumed (and changes nothing).
   */
  async consume(approvalId: string, argsDigest: string, by: string): Promise<ConsumeOutcome> {
    const repo = this.ds.getRepository<ApprovalRow>(ENTITY.approval);
    const seen = await repo.findOneBy({ approvalId });
    if (!seen) return { ok: false, reason: 'not_found' };
    // a consume is final (nothing clears consumed_at): the answer under the lock would be the same refusal
    if (seen.consumedAt !== null) return { ok: false, reason: 'already_consumed', approval: viewOf(seen, new Date()) };
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.consumeLocked(seen.planId, approvalId, argsDigest, by);
      } catch (err) {
        // another process writing (SQLite's one writer, a deadlock victim): the same transaction may pass
        if (!isRetryableDbError(err) || attempt >= CONSUME_ATTEMPTS) throw err;
        await sleep(5 * attempt + Math.random() * 10 * attempt);
      }
    }
  }

  private consumeLocked(planId: string, approvalId: string, argsDigest: string, by: string): Promise<ConsumeOutcome> {
    const dialect = sqlDialectOf(this.ds);
    return runSerialized(this.ds, () =>
      dialect.transaction(this.ds, async (m: EntityManager) => {
        // the plan's head lock, as every writer of the plan takes it (its version bumped); the head row itself is not needed
        await dialect.bumpHeads(m, [planId]);
        const row = await m.getRepository<ApprovalRow>(ENTITY.approval).findOneByOrFail({ approvalId });
        const now = new Date();
        const refusal = refusalOf(row, argsDigest, now);
        if (refusal) return { ok: false, reason: refusal, approval: viewOf(row, now) };
        await m.getRepository<ApprovalRow>(ENTITY.approval).update({ approvalId }, { consumedAt: now, consumedBy: by });
        return { ok: true, approval: viewOf({ ...row, consumedAt: now, consumedBy: by }, now) };
      }),
    );
  }
}

/**
 * `qb` (over `approvals` as `a`) narrowed to `filter`'s status, assignee and age at `now`: what
 * each status means, in one place (the inbox, the console's counts). The caller keeps the
 * assignee check in code too, where a case-insensitive collation could match another case.
 */
export function whereApprovals<T extends ObjectLiteral>(
  qb: SelectQueryBuilder<T>,
  filter: Omit<ApprovalFilter, 'limit'>,
  now: Date,
): SelectQueryBuilder<T> {
  if (filter.status === 'pending' || filter.status === 'expired') {
    qb.andWhere('a.decision IS NULL AND a.consumedAt IS NULL');
    qb.andWhere(filter.status === 'pending' ? 'a.expiresAt > :now' : 'a.expiresAt <= :now', { now });
  } else if (filter.status === 'decided') qb.andWhere('a.decision IS NOT NULL AND a.consumedAt IS NULL');
  else if (filter.status === 'consumed') qb.andWhere('a.consumedAt IS NOT NULL');
  if (filter.assignee !== undefined) qb.andWhere('a.assignee = :assignee', { assignee: filter.assignee });
  if (filter.olderThanMs !== undefined)
    qb.andWhere('a.requestedAt <= :before', { before: new Date(now.getTime() - filter.olderThanMs) });
  return qb;
}

export function viewOf(row: ApprovalRow, now: Date): ApprovalView {
  const iso = (d: Date | null) => (d === null ? null : new Date(d).toISOString());
  return {
    approvalId: row.approvalId,
    planId: row.planId,
    sessionId: row.sessionId,
    stepId: row.stepId,
    tool: row.tool,
    argsDigest: row.argsDigest,
    expiresAt: iso(row.expiresAt)!,
    assignee: row.assignee,
    reason: row.reason,
    requestedAt: iso(row.requestedAt)!,
    status: statusOf(row, now),
    decision: row.decision,
    decidedBy: row.decidedBy,
    feedback: row.feedback,
    editedArgsDigest: row.editedArgsDigest,
    decidedAt: iso(row.decidedAt),
    consumedAt: iso(row.consumedAt),
    consumedBy: row.consumedBy,
    ageMs: Math.max(0, now.getTime() - new Date(row.requestedAt).getTime()),
  };
}

function statusOf(row: ApprovalRow, now: Date): ApprovalView['status'] {
  if (row.consumedAt !== null) return 'consumed';
  if (row.decision !== null) return 'decided';
  return new Date(row.expiresAt).getTime() <= now.getTime() ? 'expired' : 'pending';
}
