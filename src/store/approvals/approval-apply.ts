import { In, IsNull, type EntityManager } from 'typeorm';
import type { PlanEvent, PlanEventOf } from '../../contracts';
import { ENTITY, type ApprovalRow } from '../entities';
import { isVoidedSeq } from '../projection/voided-seq';

/**
 * What storing a batch changed in `approvals`: one entry per approval requested or decided by it.
 * The hook point for what reacts to approvals (webhooks, an outbox): it is computed inside the
 * transaction that stores the events, and only the changes that happened are listed (a
 * redelivered request, a second decision of one approval, a decision of an approval never
 * requested are not).
 */
export interface ApprovalChange {
  change: 'requested' | 'decided';
  approvalId: string;
  planId: string;
  /** For `decided`: approve, edit or reject. */
  decision?: string;
}

/**
 * Apply the approval events of a batch to `approvals`, in the transaction that stores them and
 * under their plans' head locks. They apply on arrival, whatever the plan's seq watermark: an
 * approval's row depends on its own two events only. A request inserts its row (one per
 * approvalId; a request under an id another plan already holds changes nothing); the first
 * decision of a stored request decides it, later ones change nothing; a decision of an approval
 * never requested decides nothing, so it cannot be consumed.
 */
export async function applyApprovalEvents(m: EntityManager, events: readonly PlanEvent[]): Promise<ApprovalChange[]> {
  const requests: PlanEventOf<'approval.requested'>[] = [];
  const decisions: PlanEventOf<'approval.decided'>[] = [];
  for (const e of events) {
    if (isVoidedSeq(e)) continue;
    if (e.type === 'approval.requested') requests.push(e);
    else if (e.type === 'approval.decided') decisions.push(e);
  }
  if (requests.length === 0 && decisions.length === 0) return [];
  const repo = m.getRepository<ApprovalRow>(ENTITY.approval);
  const changes: ApprovalChange[] = [];
  if (requests.length > 0) {
    const stored = new Set(
      (
        await repo.find({
          select: { approvalId: true },
          where: { approvalId: In(requests.map((e) => e.payload.approvalId)) },
        })
      ).map((r) => r.approvalId),
    );
    const rows = new Map<string, ApprovalRow>();
    for (const e of requests)
      if (!stored.has(e.payload.approvalId) && !rows.has(e.payload.approvalId))
        rows.set(e.payload.approvalId, requestRow(e));
    if (rows.size > 0) await repo.insert([...rows.values()]);
    for (const r of rows.values()) changes.push({ change: 'requested', approvalId: r.approvalId, planId: r.planId });
  }
  for (const e of decisions) {
    const p = e.payload;
    const result = await repo.update(
      { approvalId: p.approvalId, planId: e.planId, decision: IsNull() },
      {
        decision: p.decision,
        decidedBy: p.decidedBy,
        feedback: p.feedback ?? null,
        editedArgsDigest: p.editedArgsDigest ?? null,
        decidedAt: new Date(e.occurredAt),
      },
    );
    if ((result.affected ?? 0) > 0)
      changes.push({ change: 'decided', approvalId: p.approvalId, planId: e.planId, decision: p.decision });
  }
  return changes;
}

/** The `approvals` row of a request, undecided: what the worker stores for `approval.requested`. */
export function requestRow(e: PlanEventOf<'approval.requested'>): ApprovalRow {
  const p = e.payload;
  return {
    approvalId: p.approvalId,
    planId: e.planId,
    sessionId: e.sessionId,
    stepId: p.stepId,
    tool: p.tool ?? null,
    argsDigest: p.argsDigest,
    expiresAt: new Date(p.expiresAt),
    assignee: p.assignee ?? null,
    reason: p.reason ?? null,
    requestedAt: new Date(e.occurredAt),
    requestSeq: e.seq,
    requestEventId: e.eventId,
    decision: null,
    decidedBy: null,
    feedback: null,
    editedArgsDigest: null,
    decidedAt: null,
    consumedAt: null,
    consumedBy: null,
    expiredAt: null,
  };
}
