import { randomUUID } from 'node:crypto';
import { argsDigest, isArgsDigest, type ApprovalView, type ConsumeRefusal, type Violation } from '../contracts';
import { backoffDelay, sleep } from '../shared/backoff';
import { PlanLedgerError } from '../shared/errors';
import type { PlanEventPublisher } from './plan-event-publisher';
import type { EventStamps, PlanRef } from './publisher.types';

/**
 * The executor's side of approvals (docs/approvals.md): request one through the publisher, wait for
 * the decision with a long poll of `serve`, consume it once before running the call.
 */

/** The longest hold `GET /v1/approvals/{id}?waitMs=` grants; longer waits re-issue the request. */
const MAX_HOLD_MS = 60_000;
/** Retries of a wait after a failed request (server unreachable, 502-504): 250 ms doubling up to 5 s. */
const RETRY_BACKOFF = { baseMs: 250, maxMs: 5_000 };
/** An answer expected longer than the hold asked for is given up after this much more. */
const ANSWER_GRACE_MS = 30_000;
/** How long an approval stays open when neither `expiresAt` nor `expiresInMs` is given: 1 h. */
const DEFAULT_EXPIRY_MS = 3_600_000;

/** What `requestApproval` publishes as `approval.requested`. */
export interface ApprovalRequestInput {
  /** Unique across plans (1-64 characters of the contract's id alphabet). @defaultValue `appr_` and a random UUID */
  approvalId?: string;
  stepId: string;
  /** The tool the call would run; absent for a whole step. */
  tool?: string;
  /** The call's arguments: their argsDigest is computed here. Give these or `argsDigest`. */
  args?: unknown;
  argsDigest?: string;
  /** When the approval can no longer be consumed: an instant, or `expiresInMs` from now. @defaultValue 1 h from now */
  expiresAt?: string | Date;
  expiresInMs?: number;
  /** Who should decide; the inbox filters on it. */
  assignee?: string;
  reason?: string;
}

/** A published request: what the executor keeps to wait and consume (a restarted executor needs `approvalId` and the arguments). */
export interface RequestedApproval {
  approvalId: string;
  argsDigest: string;
  expiresAt: string;
  eventId: string;
  seq: number;
}

/** Where `serve` is, and the executor's key (ingest scope: it waits and consumes). */
export interface ApprovalServer {
  /** e.g. `http://127.0.0.1:8080` */
  url: string;
  key: string;
  /** @defaultValue the global fetch */
  fetch?: typeof fetch;
}

/** The publisher refused the request (it breaks the contract, the publisher is closed, or memory and journal are full). */
export class ApprovalRequestError extends PlanLedgerError {
  override readonly name = 'ApprovalRequestError';
  readonly kind = 'permanent';
  constructor(
    readonly reason: 'invalid' | 'closed' | 'dropped',
    readonly violations: readonly Violation[],
  ) {
    super(
      `approval.requested was not published (${reason})` +
        (violations.length > 0 ? `: ${violations.map((v) => `${v.path} ${v.message}`).join('; ')}` : ''),
    );
  }
}

/**
 * The ledger refused: a consume answered 409 (`reason`: already_consumed, expired, args_mismatch,
 * undecided, rejected) or 404 (`not_found`: no request of that id is stored). Do not run the call.
 */
export class ApprovalRefusedError extends PlanLedgerError {
  override readonly name = 'ApprovalRefusedError';
  readonly kind: 'conflict' | 'not-found';
  constructor(
    readonly reason: ConsumeRefusal | 'not_found',
    message: string,
    /** The approval as stored, when the server sent it. */
    readonly approval?: ApprovalView,
  ) {
    super(message);
    this.kind = reason === 'not_found' ? 'not-found' : 'conflict';
  }
}

/** `serve` answered something else: `status` 0 when it could not be reached, else the HTTP status and its one-line error. */
export class ApprovalServerError extends PlanLedgerError {
  override readonly name = 'ApprovalServerError';
  readonly kind: 'usage' | 'failed';
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.kind = status >= 400 && status < 500 ? 'usage' : 'failed';
  }
}

/**
 * Publishes `approval.requested` for `plan` with the argsDigest of `input.args` (the canonical JSON's
 * SHA-256, `argsDigest` of the contract) and returns what to wait on and consume with. Synchronous,
 * like `publish`: the request is accepted (memory or journal), not yet stored. Throws
 * ApprovalRequestError when the publisher refuses it, and a TypeError before publishing when
 * neither `args` nor a well-formed `argsDigest` is given.
 */
export function requestApproval(
  publisher: PlanEventPublisher,
  plan: PlanRef,
  input: ApprovalRequestInput,
  stamps?: EventStamps,
): RequestedApproval {
  const digest = input.argsDigest ?? (input.args === undefined ? undefined : argsDigest(input.args));
  if (!isArgsDigest(digest))
    throw new TypeError('requestApproval: give args (the call arguments) or argsDigest (64 lower-case hex digits)');
  const expiresAt =
    input.expiresAt === undefined
      ? new Date(Date.now() + (input.expiresInMs ?? DEFAULT_EXPIRY_MS)).toISOString()
      : new Date(input.expiresAt).toISOString();
  const approvalId = input.approvalId ?? `appr_${randomUUID()}`;
  const result = publisher.approvalRequested(
    plan,
    {
      approvalId,
      stepId: input.stepId,
      tool: input.tool,
      argsDigest: digest,
      expiresAt,
      assignee: input.assignee,
      reason: input.reason,
    },
    stamps,
  );
  if (!result.ok) throw new ApprovalRequestError(result.reason, result.violations);
  return { approvalId, argsDigest: digest, expiresAt, eventId: result.eventId, seq: result.seq };
}

/**
 * Waits for the approval's decision: long polls `GET /v1/approvals/{id}?waitMs=` (the server holds
 * each request up to 60 s and answers when the approval is decided or expires) and issues it again
 * while the approval is pending, until `timeoutMs` (no limit when absent: the approval's expiry
 * ends the wait). Returns the approval: `status` decided (see `decision`), expired, consumed, or
 * pending when `timeoutMs` passed. A request not stored yet is waited for the same way;
 * ApprovalRefusedError `not_found` when it still is not at `timeoutMs`. Server unreachable or
 * 502-504: retried with backoff within `timeoutMs`. Other answers throw ApprovalServerError.
 */
export async function waitForApproval(
  server: ApprovalServer,
  approvalId: string,
  options: { timeoutMs?: number; signal?: AbortSignal } = {},
): Promise<ApprovalView> {
  const deadline = options.timeoutMs === undefined ? Infinity : Date.now() + options.timeoutMs;
  const path = `/v1/approvals/${encodeURIComponent(approvalId)}`;
  for (let failures = 0; ;) {
    const holdMs = Math.max(0, Math.min(MAX_HOLD_MS, deadline - Date.now()));
    let answer: HttpAnswer;
    try {
      answer = await send(server, 'GET', `${path}?waitMs=${holdMs}`, { holdMs, signal: options.signal });
    } catch (err) {
      if (options.signal?.aborted || !(err instanceof ApprovalServerError) || Date.now() >= deadline) throw err;
      answer = { status: err.status, body: { error: err.message } };
    }
    const over = Date.now() >= deadline;
    if (answer.status === 200) {
      const view = answer.body as ApprovalView;
      if (view.status !== 'pending' || over) return view;
      failures = 0;
    } else if (answer.status === 404) {
      if (over)
        throw new ApprovalRefusedError('not_found', errorLine(answer, `no approval ${approvalId} was requested`));
      failures = 0;
    } else if (answer.status === 0 || (answer.status >= 502 && answer.status <= 504)) {
      if (over) throw new ApprovalServerError(answer.status, errorLine(answer, 'serve did not answer'));
      failures++;
      await sleep(Math.min(backoffDelay(failures, RETRY_BACKOFF), deadline - Date.now()), options.signal);
    } else throw new ApprovalServerError(answer.status, errorLine(answer, `serve answered ${answer.status}`));
  }
}

/**
 * Consumes the decision, once: `POST /v1/approvals/{id}/consume` with the argsDigest of `args`
 * (the arguments the executor is about to run; for an edit, the edited ones). Returns the approval
 * (its `decision`, `feedback`, `editedArgsDigest`): run the call only when this returns. Throws
 * ApprovalRefusedError with the ledger's `reason` (409, or 404 `not_found`), ApprovalServerError
 * otherwise. Not retried: a consume whose answer was lost may have consumed the approval, and the
 * next one is then refused `already_consumed` (fail closed).
 */
export async function consumeApproval(
  server: ApprovalServer,
  approvalId: string,
  input: { args?: unknown; argsDigest?: string; consumer?: string; signal?: AbortSignal },
): Promise<ApprovalView> {
  const digest = input.argsDigest ?? (input.args === undefined ? undefined : argsDigest(input.args));
  if (!isArgsDigest(digest))
    throw new TypeError('consumeApproval: give args (the call arguments) or argsDigest (64 lower-case hex digits)');
  const body = { argsDigest: digest, ...(input.consumer === undefined ? {} : { consumer: input.consumer }) };
  const answer = await send(server, 'POST', `/v1/approvals/${encodeURIComponent(approvalId)}/consume`, {
    body,
    holdMs: 0,
    signal: input.signal,
  });
  if (answer.status === 200) return answer.body as ApprovalView;
  const json = answer.body as { reason?: ConsumeRefusal | 'not_found'; approval?: ApprovalView };
  if (answer.status === 409 || answer.status === 404) {
    const reason = json.reason ?? 'not_found';
    throw new ApprovalRefusedError(
      reason,
      errorLine(answer, `approval ${approvalId} refused: ${reason}`),
      json.approval,
    );
  }
  throw new ApprovalServerError(answer.status, errorLine(answer, `serve answered ${answer.status}`));
}

interface HttpAnswer {
  status: number;
  body: unknown;
}

/** One request; throws ApprovalServerError status 0 when serve cannot be reached or does not answer in time. */
async function send(
  server: ApprovalServer,
  method: 'GET' | 'POST',
  path: string,
  options: { body?: unknown; holdMs: number; signal: AbortSignal | undefined },
): Promise<HttpAnswer> {
  const { body, holdMs, signal } = options;
  const timeout = AbortSignal.timeout(holdMs + ANSWER_GRACE_MS);
  const url = `${server.url.replace(/\/+$/, '')}${path}`;
  try {
    const res = await (server.fetch ?? fetch)(url, {
      method,
      headers: {
        authorization: `Bearer ${server.key}`,
        accept: 'application/json',
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
    });
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = { error: text.slice(0, 200) };
    }
    return { status: res.status, body: parsed };
  } catch (err) {
    if (signal?.aborted) throw err;
    throw new ApprovalServerError(0, `plan-ledger serve unreachable at ${server.url}: ${(err as Error).message}`);
  }
}

function errorLine(answer: HttpAnswer, fallback: string): string {
  const error = (answer.body as { error?: unknown } | null)?.error;
  return typeof error === 'string' && error !== '' ? error : fallback;
}
