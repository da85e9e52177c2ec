import { sleep } from '../shared/backoff';
import type { ApprovalLedger, ApprovalView } from '../store/approvals/approval-ledger';
import type { ApprovalWakeups, ApprovalWatch } from '../queue/approval-signals';

/** The longest `waitMs` a `GET /v1/approvals/{approvalId}` may ask for. */
export const MAX_APPROVAL_WAIT_MS = 60_000;

/**
 * How often a held request reads the approval again without being woken: a Redis message lost
 * (the subscriber reconnecting, a worker that could not publish) delays an answer by at most this.
 */
export const APPROVAL_REREAD_MS = 10_000;

/** Re-read interval when serve has no subscriber (an app built without Redis). */
const UNSUBSCRIBED_REREAD_MS = 1_000;

export interface ApprovalWaitDeps {
  /** The subscriber of the approval channels; without it a held request re-reads every second. */
  wakeups?: ApprovalWakeups;
  /** Aborted when shutdown begins: held requests answer at once. */
  closingSignal?: AbortSignal;
  /** @defaultValue APPROVAL_REREAD_MS */
  rereadMs?: number;
}

/**
 * The approval as it is once it is no longer pending, or when `waitMs` has passed, or at once
 * when `waitMs` is 0: read, then held until a message names it (decided, or its request stored),
 * its `expiresAt` comes, the re-read interval or the wait ends, then read again. Undefined: no
 * request of that id is stored (after waiting for one up to `waitMs`).
 */
export async function awaitApproval(
  ledger: ApprovalLedger,
  approvalId: string,
  waitMs: number,
  deps: ApprovalWaitDeps,
): Promise<ApprovalView | undefined> {
  if (waitMs <= 0) return ledger.get(approvalId);
  const deadline = Date.now() + waitMs;
  const rereadMs = deps.wakeups ? (deps.rereadMs ?? APPROVAL_REREAD_MS) : UNSUBSCRIBED_REREAD_MS;
  const watch = deps.wakeups ? deps.wakeups.watch(approvalId) : timerOnly();
  try {
    for (;;) {
      watch.reset();
      const now = new Date();
      const view = await ledger.get(approvalId, now);
      const left = deadline - now.getTime();
      if ((view && view.status !== 'pending') || left <= 0 || deps.closingSignal?.aborted) return view;
      // a pending approval becomes expired at expiresAt: read again then (a timer may fire a little early; the loop waits again)
      const untilExpiry = view ? Math.max(1, new Date(view.expiresAt).getTime() - now.getTime()) : Infinity;
      await watch.wait(Math.min(left, untilExpiry, rereadMs), deps.closingSignal);
    }
  } finally {
    watch.close();
  }
}

/** A watch no message wakes: its waits end by time or abort only. */
function timerOnly(): ApprovalWatch {
  return {
    reset: () => undefined,
    wait: (ms, signal) => sleep(ms, signal),
    close: () => undefined,
  };
}
