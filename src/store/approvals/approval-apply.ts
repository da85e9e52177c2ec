import type { EntityManager } from 'typeorm';
import type { PlanEvent, PlanEventOf } from '../../contracts';
import { ENTITY, type ApprovalRow } from '../entities';
import { isVoidedSeq } from '../projection/voided-seq';
import type { SqlDialect } from '../sql/sql-dialect';

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

/** What a decision writes to its approval's row. */
const DECISION_COLUMNS = ['decision', 'decidedBy', 'feedback', 'editedArgsDigest', 'decidedAt'] as const;

/**
 * Apply the approval events of a batch to `approvals`, in the transaction that stores them and
 * under their plans' head locks. They apply on arrival, whatever the plan's seq watermark: an
 * approval's row depends on its own two events only. A request inserts its row (one per
 * approvalId; a request under an id another plan already holds changes nothing); the first
 * decision of a stored request decides it, later ones change nothing; a decision of an approval
 * never requested decides nothing, so it cannot be consumed. Requests apply before decisions, so
 * a request and its decision in one batch insert the row decided. At most three statements a
 * batch (each chunked to the database's limits): one read of the rows the events name, one
 * insert, one update of the decided rows.
 */
export async function applyApprovalEvents(
  m: EntityManager,
  dialect: SqlDialect,
  events: readonly PlanEvent[],
): Promise<ApprovalChange[]> {
  const requests: PlanEventOf<'approval.requested'>[] = [];
  const decisions: PlanEventOf<'approval.decided'>[] = [];
  for (const e of events) {
    if (isVoidedSeq(e)) continue;
    if (e.type === 'approval.requested') requests.push(e);
    else if (e.type === 'approval.decided') decisions.push(e);
  }
  if (requests.length === 0 && decisions.length === 0) return [];
  const rows = dialect.rows(m);
  const ids = new Set([...requests, ...decisions].map((e) => e.payload.approvalId));
  const stored = new Map(
    (await rows.findIn<ApprovalRow>(ENTITY.approval, 'approvalId', [...ids])).map((r) => [r.approvalId, r]),
  );
  const changes: ApprovalChange[] = [];
  const inserted = new Map<string, ApprovalRow>();
  for (const e of requests) {
    const id = e.payload.approvalId;
    if (stored.has(id) || inserted.has(id)) continue;
    inserted.set(id, requestRow(e));
    changes.push({ change: 'requested', approvalId: id, planId: e.planId });
  }
  const decided = new Map<string, ApprovalRow>();
  for (const e of decisions) {
    const p = e.payload;
    const row = inserted.get(p.approvalId) ?? stored.get(p.approvalId);
    if (!row || row.planId !== e.planId || row.decision !== null) continue;
    Object.assign(row, {
      decision: p.decision,
      decidedBy: p.decidedBy,
      feedback: p.feedback ?? null,
      editedArgsDigest: p.editedArgsDigest ?? null,
      decidedAt: new Date(e.occurredAt),
    });
    if (!inserted.has(p.approvalId)) decided.set(p.approvalId, row);
    changes.push({ change: 'decided', approvalId: p.approvalId, planId: e.planId, decision: p.decision });
  }
  await rows.insert(ENTITY.approval, [...inserted.values()]);
  await rows.update(ENTITY.approval, [...decided.values()], 'approvalId', DECISION_COLUMNS);
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
