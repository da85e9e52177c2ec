import type { FastifyInstance } from 'fastify';
import type { DataSource } from 'typeorm';
import { isArgsDigest } from '../contracts/args-digest';
import { ApprovalLedger, type ApprovalFilter, type ApprovalView } from '../store/approvals/approval-ledger';
import { parseCount, requireId } from '../queries/query-args';
import { QueryArgumentError } from '../queries/query-errors';
import type { Scope } from '../shared/api-keys';
import { awaitApproval, type ApprovalWaitDeps, MAX_APPROVAL_WAIT_MS } from './approval-wait';

const STATUSES: readonly ApprovalView['status'][] = ['pending', 'expired', 'decided', 'consumed'];

/** Who may read one approval: reviewers (read) and executors, which hold ingest keys. */
const ONE_APPROVAL_READERS: readonly Scope[] = ['read', 'ingest'];

/**
 * Approvals (docs/approvals.md):
 * - `POST /v1/approvals/{approvalId}/consume {argsDigest, consumer?}` (ingest scope: the
 *   executor's key): 200 with the decision, once; then 409 `{error, reason}` with reason
 *   already_consumed, expired, args_mismatch, undecided or rejected; 404 for a request never stored.
 * - `GET /v1/approvals?status=pending&assignee=&olderThan=` (read scope): the inbox, oldest first, with age.
 * - `GET /v1/approvals/{approvalId}?waitMs=0..60000` (read or ingest scope): at once when the
 *   approval is not pending or waitMs is 0; else held until it is decided or expires or waitMs
 *   passes (approval-wait.ts), then 200 with it (its `status` tells which); 404 when no request of
 *   that id is stored by then.
 */
export function registerApprovalRoutes(app: FastifyInstance, ds: DataSource, waits: ApprovalWaitDeps = {}): void {
  const ledger = new ApprovalLedger(ds);
  app.post('/v1/approvals/:approvalId/consume', { config: { scope: 'ingest' } }, async (req, reply) => {
    const approvalId = requireId('approvalId', (req.params as Record<string, string>).approvalId);
    const body = (req.body ?? {}) as Record<string, unknown>;
    if (!isArgsDigest(body.argsDigest))
      throw new QueryArgumentError('argsDigest', 'must be the SHA-256 of the arguments, 64 lower-case hex digits');
    const consumer = body.consumer === undefined ? 'executor' : body.consumer;
    if (typeof consumer !== 'string' || consumer.length === 0 || consumer.length > 200)
      throw new QueryArgumentError('consumer', 'must be a name of 1 to 200 characters');
    const outcome = await ledger.consume(approvalId, body.argsDigest, consumer);
    if (outcome.ok) return reply.code(200).send(outcome.approval);
    if (outcome.reason === 'not_found')
      return reply.code(404).send({
        error: `no approval ${approvalId} was requested (or its request is not stored yet)`,
        reason: 'not_found',
      });
    return reply
      .code(409)
      .send({ error: refusalText(approvalId, outcome.reason), reason: outcome.reason, approval: outcome.approval });
  });
  app.get('/v1/approvals', { config: { scope: 'read' } }, async (req) => {
    return { approvals: await ledger.list(inboxFilter(req.query as Record<string, string | undefined>)) };
  });
  app.get('/v1/approvals/:approvalId', { config: { scope: ONE_APPROVAL_READERS } }, async (req, reply) => {
    const approvalId = requireId('approvalId', (req.params as Record<string, string>).approvalId);
    const waitMs = parseCount('waitMs', (req.query as Record<string, string | undefined>).waitMs, {
      min: 0,
      max: MAX_APPROVAL_WAIT_MS,
      default: 0,
    });
    const found = await awaitApproval(ledger, approvalId, waitMs, waits);
    if (!found) return reply.code(404).send({ error: `no approval ${approvalId} was requested` });
    return found;
  });
}

function inboxFilter(q: Record<string, string | undefined>): ApprovalFilter {
  const status = (q.status ?? 'pending') as ApprovalView['status'];
  if (!STATUSES.includes(status)) throw new QueryArgumentError('status', `must be one of ${STATUSES.join(', ')}`);
  return {
    status,
    assignee: q.assignee === undefined || q.assignee === '' ? undefined : q.assignee,
    olderThanMs:
      q.olderThan === undefined
        ? undefined
        : parseCount('olderThan', q.olderThan, { min: 0, max: Number.MAX_SAFE_INTEGER, default: 0 }),
    limit: parseCount('limit', q.limit, { min: 1, max: 1000, default: 100 }),
  };
}

function refusalText(id: string, reason: string): string {
  switch (reason) {
    case 'already_consumed':
      return `approval ${id} was consumed already: a decision is answered once`;
    case 'expired':
      return `approval ${id} expired before it was consumed: request a new one`;
    case 'args_mismatch':
      return `approval ${id} was decided for other arguments: its argsDigest differs from the one sent`;
    case 'undecided':
      return `approval ${id} is not decided yet: wait for the decision`;
    default:
      return `approval ${id} was rejected`;
  }
}
