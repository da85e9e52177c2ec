import type { FastifyInstance } from 'fastify';
import { decideApproval, checkDecideInput } from '../approvals/decide-approval';
import { isArgsDigest } from '../contracts/args-digest';
import {
  APPROVAL_STATUSES,
  ApprovalLedger,
  type ApprovalFilter,
  type ApprovalView,
} from '../store/approvals/approval-ledger';
import { parseCount, requireId } from '../queries/query-args';
import { QueryArgumentError } from '../queries/query-errors';
import { acknowledgeWhenDurable } from './durable-ack';
import type { IngestDeps } from './ingest.routes';
import { approvalRouteSchema, decideRouteSchema } from './openapi-schemas';
import { awaitApproval, type ApprovalWaitDeps, MAX_APPROVAL_WAIT_MS } from './approval-wait';

/** What the approval routes use: the database, and for decide the path of POST /v1/events. */
export type ApprovalRouteDeps = Pick<IngestDeps, 'dataSource' | 'publisher' | 'settings' | 'metrics' | 'closing'> & {
  /** What wakes and ends the held reads of `GET /v1/approvals/{id}?waitMs=`. */
  waits?: ApprovalWaitDeps;
};

/** The fields a decide body may carry; `decidedBy` is the approve key's name, never the body's. */
const DECIDE_FIELDS = ['decision', 'feedback', 'editedArgsDigest'];

/**
 * Approvals (docs/approvals.md):
 * - `POST /v1/approvals/{approvalId}/consume {argsDigest, consumer?}` (ingest scope: the
 *   executor's key): 200 with the decision, once; then 409 `{error, reason}` with reason
 *   already_consumed, expired, args_mismatch, undecided or rejected; 404 for a request never stored.
 * - `POST /v1/approvals/{approvalId}/decide {decision, feedback?, editedArgsDigest?}` (approve
 *   scope): 202 once the `approval.decided` event is durable (decideApproval); 404 not_found;
 *   409 already_decided or expired; 503 + Retry-After when it is not durable in time.
 * - `GET /v1/approvals?status=pending&assignee=&olderThan=` (read or approve scope): the inbox, oldest first, with age.
 * - `GET /v1/approvals/{approvalId}?waitMs=0..60000` (read, ingest or approve scope): at once
 *   when the approval is not pending or waitMs is 0; else held until it is decided or expires or
 *   waitMs passes (approval-wait.ts), then 200 with it (its `status` tells which); 404 when no
 *   request of that id is stored by then.
 */
export function registerApprovalRoutes(app: FastifyInstance, deps: ApprovalRouteDeps): void {
  const ledger = new ApprovalLedger(deps.dataSource);
  app.post(
    '/v1/approvals/:approvalId/decide',
    { config: { scope: 'approve' }, schema: decideRouteSchema, validatorCompiler: () => () => true },
    async (req, reply) => {
      const approvalId = requireId('approvalId', (req.params as Record<string, string>).approvalId);
      const body = req.body;
      if (typeof body !== 'object' || body === null || Array.isArray(body))
        throw new QueryArgumentError('body', 'must be a JSON object {"decision": "approve" | "edit" | "reject", ...}');
      const fields = body as Record<string, unknown>;
      const unknown = Object.keys(fields).find((k) => !DECIDE_FIELDS.includes(k));
      if (unknown !== undefined)
        throw new QueryArgumentError(
          unknown.slice(0, 64),
          unknown === 'decidedBy'
            ? "is the approve key's name: it is not sent"
            : `is not a field of a decision (${DECIDE_FIELDS.join(', ')})`,
        );
      if (req.keyName === undefined)
        return reply.code(403).send({ error: 'only a named approve key (HTTP_APPROVE_KEYS name:key) decides' });
      const input = checkDecideInput({
        approvalId,
        decision: fields.decision,
        decidedBy: req.keyName,
        feedback: fields.feedback,
        editedArgsDigest: fields.editedArgsDigest,
      });
      if (deps.closing())
        return reply
          .code(503)
          .header('retry-after', String(deps.settings.retryAfterSeconds))
          .send({ error: `the server is shutting down; retry after ${deps.settings.retryAfterSeconds} s` });
      const outcome = await decideApproval(
        {
          approvals: ledger,
          publisher: deps.publisher,
          durable: (since) => acknowledgeWhenDurable(deps.publisher, since, reply, deps),
        },
        input,
      );
      if (outcome.ok) return reply.code(202).send(outcome.decided);
      switch (outcome.reason) {
        case 'not_durable':
          return reply; // answered 503 by acknowledgeWhenDurable
        case 'unavailable':
          return reply
            .code(503)
            .header('retry-after', String(deps.settings.retryAfterSeconds))
            .send({ error: outcome.error });
        case 'not_found':
          return reply.code(404).send({ error: outcome.error, reason: outcome.reason });
        default:
          return reply.code(409).send({ error: outcome.error, reason: outcome.reason, approval: outcome.approval });
      }
    },
  );
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
  app.get('/v1/approvals', { config: { scope: ['read', 'approve'] } }, async (req) => {
    return { approvals: await ledger.list(inboxFilter(req.query as Record<string, string | undefined>)) };
  });
  app.get(
    '/v1/approvals/:approvalId',
    {
      config: { scope: ['read', 'ingest', 'approve'] },
      schema: approvalRouteSchema,
      validatorCompiler: () => () => true,
    },
    async (req, reply) => {
      const approvalId = requireId('approvalId', (req.params as Record<string, string>).approvalId);
      const waitMs = parseCount('waitMs', (req.query as Record<string, string | undefined>).waitMs, {
        min: 0,
        max: MAX_APPROVAL_WAIT_MS,
        default: 0,
      });
      const found = await awaitApproval(ledger, approvalId, waitMs, deps.waits ?? {});
      if (!found) return reply.code(404).send({ error: `no approval ${approvalId} was requested` });
      return found;
    },
  );
}

function inboxFilter(q: Record<string, string | undefined>): ApprovalFilter {
  const status = (q.status ?? 'pending') as ApprovalView['status'];
  if (!APPROVAL_STATUSES.includes(status))
    throw new QueryArgumentError('status', `must be one of ${APPROVAL_STATUSES.join(', ')}`);
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
