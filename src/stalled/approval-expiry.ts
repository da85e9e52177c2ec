import type { DataSource } from 'typeorm';
import { type ApprovalRow, ENTITY } from '../store/entities';
import { lockStoredHeads } from '../store/ledger/plan-heads';
import { deliveriesFor, findingEvent, writeDeliveries } from '../store/outbox/webhook-outbox';
import { STALL_CHECK_FINDINGS } from '../store/outbox/webhook-triggers';
import { sqlDialectOf } from '../store/sql/dialects';
import { inBatches, type StallCheckOptions, subscriptionsOnce } from './stall-check';
import { dueExpiriesStatement, markExpiredStatement } from './stall-statements';

export interface ExpiryResult {
  /** The approvals this check found expired (none another check or a decision got to first). */
  approvalIds: string[];
  /** False when maxBatches stopped it with expired approvals left for the next check. */
  complete: boolean;
}

/**
 * Finds the approvals past their `expiresAt` that are still undecided and unconsumed, sets their
 * `expired_at` and writes their `approval.expired` webhook deliveries, a batch at a time. Each batch
 * is one transaction under the approvals' plans' head locks (the lock a decision and a consume take
 * first), re-checked under them: an approval decided or consumed meanwhile is left alone, and two
 * checks at once find each approval expired once. Delivery ids derive from the approval id.
 */
export async function expireApprovals(ds: DataSource, options: StallCheckOptions = {}): Promise<ExpiryResult> {
  const now = options.now ?? new Date();
  const dialect = sqlDialectOf(ds);
  const subscriptions = subscriptionsOnce(ds, options);
  const { ids, complete } = await inBatches(
    ds,
    options,
    (limit) =>
      dueExpiriesStatement(ds.manager, dialect.instant(now), limit).getRawMany<{
        approvalId: string;
        planId: string;
      }>(),
    async (m, due) => {
      const subs = await subscriptions();
      await lockStoredHeads(m, dialect, [...new Set(due.map((r) => r.planId))]);
      const rows = await dialect.rows(m).findIn<ApprovalRow>(
        ENTITY.approval,
        'approvalId',
        due.map((r) => r.approvalId),
      );
      const found = rows
        .filter(
          (r) =>
            r.expiredAt === null &&
            r.decision === null &&
            r.consumedAt === null &&
            new Date(r.expiresAt).getTime() <= now.getTime(),
        )
        .sort((a, b) => (a.approvalId < b.approvalId ? -1 : 1));
      const approvalIds = found.map((r) => r.approvalId);
      if (approvalIds.length === 0) return approvalIds;
      await markExpiredStatement(m, approvalIds, now).execute();
      await writeDeliveries(
        m,
        deliveriesFor(
          found.map((r) => expiredEvent(r, now)),
          subs,
          now,
        ),
      );
      return approvalIds;
    },
  );
  return { approvalIds: ids, complete };
}

/** The finding an `approval.expired` webhook is made of: the approval as the check found it. */
function expiredEvent(r: ApprovalRow, now: Date) {
  return findingEvent(
    STALL_CHECK_FINDINGS.approvalExpired,
    r.approvalId,
    null,
    { planId: r.planId, sessionId: r.sessionId, seq: r.requestSeq, occurredAt: now.toISOString() },
    {
      approvalId: r.approvalId,
      stepId: r.stepId,
      tool: r.tool,
      argsDigest: r.argsDigest,
      expiresAt: new Date(r.expiresAt).toISOString(),
      assignee: r.assignee,
    },
  );
}
