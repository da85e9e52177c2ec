import type { EntityManager } from 'typeorm';
import type { PlanEvent, PlanEventOf } from '../../contracts';
import { ENTITY, type ApprovalRow, type PlanEventRow } from '../entities';
import { pushAll } from '../../shared/arrays';
import { fromEventRow } from '../apply/plan-reader';
import { isVoidedSeq } from '../projection/voided-seq';
import { chunk, valuesPerInList } from '../sql/batch-limits';
import type { RowStore, SqlDialect } from '../sql/sql-dialect';

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
 * a request and its decision in one batch insert the row decided. A decision that arrived before
 * its request (stored in an earlier transaction, having decided nothing then: events may overtake
 * each other, e.g. through a publisher's journal) decides the request's row as it is inserted,
 * when it carries the request's seq, as the decide endpoint's do (decisionsStoredBefore).
 *
 * Where the row store inserts only new keys and says which (`RowStore.insertNew`: PostgreSQL,
 * SQLite), the batch's requests go first, decided by the batch's decisions as if new, and
 * `approvals` is read only for the decisions of rows that insert did not write (their request in
 * an earlier batch, or a redelivered one): most batches then write their approvals in one
 * statement. Elsewhere one read of the rows the events name comes first, then one insert. Then one
 * update of the decided stored rows. A batch with requests reads the log first, for decisions
 * stored before them. Each statement chunked to the database's limits.
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
  // the first request of each id: the row it inserts unless one is stored
  const candidates = new Map<string, ApprovalRow>();
  for (const e of requests)
    if (!candidates.has(e.payload.approvalId)) candidates.set(e.payload.approvalId, requestRow(e));
  let inserted: Map<string, ApprovalRow>;
  let stored: Map<string, ApprovalRow>;
  /** Of the rows inserted already decided: the decision that decided each. */
  const decidedFirst = new Map<string, PlanEventOf<'approval.decided'>>();
  // a decision stored before its request (it arrived first) decides it before this batch's can
  const early = await decideByStoredDecisions(m, dialect, [...candidates.values()], events);
  for (const [approvalId, e] of early) decidedFirst.set(approvalId, e);
  const insertFirst = rows.insertNew !== undefined && candidates.size > 0;
  if (insertFirst) {
    for (const e of decisions)
      if (decide(candidates.get(e.payload.approvalId), e)) decidedFirst.set(e.payload.approvalId, e);
    const written = await rows.insertNew!(ENTITY.approval, [...candidates.values()], 'approvalId');
    inserted = new Map([...candidates].filter(([id]) => written.has(id)));
    const unread = new Set(decisions.map((e) => e.payload.approvalId).filter((id) => !written.has(id)));
    stored = await storedRows(rows, [...unread]);
  } else {
    stored = await storedRows(rows, [...new Set([...requests, ...decisions].map((e) => e.payload.approvalId))]);
    inserted = new Map([...candidates].filter(([id]) => !stored.has(id)));
  }
  const changes: ApprovalChange[] = [];
  for (const [approvalId, row] of inserted) changes.push({ change: 'requested', approvalId, planId: row.planId });
  for (const [approvalId, e] of early)
    if (inserted.has(approvalId) && decidedFirst.get(approvalId) === e) changes.push(decidedChange(e));
  const decided = new Map<string, ApprovalRow>();
  for (const e of decisions) {
    const p = e.payload;
    if (insertFirst && inserted.has(p.approvalId)) {
      // inserted with its decision already: the change is the decision that decided it
      if (decidedFirst.get(p.approvalId) !== e) continue;
    } else {
      const row = inserted.get(p.approvalId) ?? stored.get(p.approvalId);
      if (!decide(row, e)) continue;
      if (!inserted.has(p.approvalId)) decided.set(p.approvalId, row!);
    }
    changes.push(decidedChange(e));
  }
  if (!insertFirst) await rows.insert(ENTITY.approval, [...inserted.values()]);
  await writeDecisions(m, dialect, [...decided.values()]);
  return changes;
}

/**
 * The rule for a decision that reached the worker before its request, in one place: each of
 * `rows` (undecided rows of requests: about to be inserted by the worker, or stored pending by an
 * earlier version, see approval-repair.ts) is decided, in memory, by the first decision of it in
 * the log outside `batch` (decisionsStoredBefore: same plan, same approvalId, the request's seq;
 * first by when it was stored, then event id). Returns the decision that decided each row, by
 * approvalId; the caller writes the rows.
 */
export async function decideByStoredDecisions(
  m: EntityManager,
  dialect: SqlDialect,
  rows: readonly ApprovalRow[],
  batch: readonly PlanEvent[] = [],
): Promise<Map<string, PlanEventOf<'approval.decided'>>> {
  const decided = new Map<string, PlanEventOf<'approval.decided'>>();
  const byId = new Map(rows.map((r) => [r.approvalId, r]));
  // in the order found (the decisions' stored order): the order of the changes reported
  for (const [approvalId, e] of await decisionsStoredBefore(m, dialect, rows, batch))
    if (decide(byId.get(approvalId), e)) decided.set(approvalId, e);
  return decided;
}

/** Writes the decision columns of stored rows decided in memory (decide): one update, chunked. */
export async function writeDecisions(
  m: EntityManager,
  dialect: SqlDialect,
  rows: readonly ApprovalRow[],
): Promise<void> {
  await dialect.rows(m).update(ENTITY.approval, [...rows], 'approvalId', DECISION_COLUMNS);
}

/** The change a decision that decided its approval reports. */
export function decidedChange(e: PlanEventOf<'approval.decided'>): ApprovalChange {
  return { change: 'decided', approvalId: e.payload.approvalId, planId: e.planId, decision: e.payload.decision };
}

/**
 * For undecided request rows (about to be inserted, or stored pending by an earlier version): the
 * first decision of each (by when it was stored, then event id) that is in the log already,
 * outside `batch` (this transaction's events, stored by now), on the request's plan and under its
 * seq. Such a decision arrived before its request and decided nothing. An index seek on (plan_id,
 * seq) per chunk; transactions without requests read nothing.
 */
async function decisionsStoredBefore(
  m: EntityManager,
  dialect: SqlDialect,
  requests: readonly ApprovalRow[],
  batch: readonly PlanEvent[],
): Promise<Map<string, PlanEventOf<'approval.decided'>>> {
  const found = new Map<string, PlanEventOf<'approval.decided'>>();
  if (requests.length === 0) return found;
  const wanted = new Set(requests.map((r) => `${r.planId}\u0000${r.requestSeq}\u0000${r.approvalId}`));
  const inBatch = new Set(batch.map((e) => e.eventId));
  const stored: PlanEventRow[] = [];
  for (const part of chunk([...requests], Math.max(1, Math.floor(valuesPerInList(dialect) / 2)))) {
    const rows = await m
      .createQueryBuilder()
      .select('e')
      .from(ENTITY.event, 'e')
      .where('e.planId IN (:...plans) AND e.seq IN (:...seqs) AND e.type = :type', {
        plans: [...new Set(part.map((r) => r.planId))],
        seqs: [...new Set(part.map((r) => r.requestSeq))],
        type: 'approval.decided',
      })
      .getMany();
    pushAll(stored, rows as PlanEventRow[]);
  }
  const at = (r: PlanEventRow) => new Date(r.recordedAt).getTime();
  stored.sort((a, b) => at(a) - at(b) || (a.eventId < b.eventId ? -1 : 1));
  for (const row of stored) {
    const e = fromEventRow(row) as PlanEventOf<'approval.decided'>;
    if (inBatch.has(e.eventId) || found.has(e.payload.approvalId)) continue;
    if (wanted.has(`${e.planId}\u0000${e.seq}\u0000${e.payload.approvalId}`)) found.set(e.payload.approvalId, e);
  }
  return found;
}

/** The stored rows of these approval ids, by id. */
async function storedRows(rows: RowStore, ids: string[]): Promise<Map<string, ApprovalRow>> {
  if (ids.length === 0) return new Map();
  return new Map((await rows.findIn<ApprovalRow>(ENTITY.approval, 'approvalId', ids)).map((r) => [r.approvalId, r]));
}

/** Decides `row` by `e` when it is the undecided row of `e`'s plan; whether it did. */
function decide(row: ApprovalRow | undefined, e: PlanEventOf<'approval.decided'>): boolean {
  if (!row || row.planId !== e.planId || row.decision !== null) return false;
  const p = e.payload;
  Object.assign(row, {
    decision: p.decision,
    decidedBy: p.decidedBy,
    feedback: p.feedback ?? null,
    editedArgsDigest: p.editedArgsDigest ?? null,
    decidedAt: new Date(e.occurredAt),
  });
  return true;
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
