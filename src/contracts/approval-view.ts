/**
 * An approval as `GET /v1/approvals/{approvalId}` and a consume answer it: what executors, the
 * CLI and the console read (docs/approvals.md). Plain types: the executor's clients use them
 * without the store.
 */

/** Why a consume is refused (409), or `not_found` (404): no request of that id is stored. */
export type ConsumeRefusal = 'already_consumed' | 'expired' | 'args_mismatch' | 'undecided' | 'rejected';

/** What a consume answers: the decision, once, or why not. */
export type ConsumeOutcome =
  { ok: true; approval: ApprovalView } | { ok: false; reason: ConsumeRefusal | 'not_found'; approval?: ApprovalView };

/** An approval as the API, the CLI and the console show it. */
export interface ApprovalView {
  approvalId: string;
  planId: string;
  sessionId: string;
  stepId: string;
  tool: string | null;
  argsDigest: string;
  expiresAt: string;
  assignee: string | null;
  reason: string | null;
  requestedAt: string;
  /** pending (undecided, not expired), expired (undecided, past expiresAt), decided, or consumed. */
  status: 'pending' | 'expired' | 'decided' | 'consumed';
  decision: string | null;
  decidedBy: string | null;
  feedback: string | null;
  editedArgsDigest: string | null;
  decidedAt: string | null;
  consumedAt: string | null;
  consumedBy: string | null;
  /** Milliseconds since the request, at the time of the read. */
  ageMs: number;
}
