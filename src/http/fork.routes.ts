import type { FastifyInstance } from 'fastify';
import type { DataSource } from 'typeorm';
import { checkEditSteps } from '../fork/edit-steps';
import { forkPlan, type ForkArgumentNames, type ForkRequest, type ForkStart } from '../fork/fork-plan';
import { requireId } from '../queries/query-args';
import { QueryArgumentError } from '../queries/query-errors';
import { forkRouteSchema } from './openapi-schemas';

type Body = Record<string, unknown>;

/** The body's fields, as the errors of `forkPlan` name them. */
const HTTP_FORK_NAMES: ForkArgumentNames = {
  fromLayer: 'fromLayer',
  fromCheckpoint: 'fromCheckpoint',
  fromFailure: 'fromFailure',
  planId: 'planId',
  sessionId: 'sessionId',
  editSteps: 'editSteps',
  requestId: 'Idempotency-Key',
};

const FORK_FIELDS = ['fromLayer', 'fromCheckpoint', 'fromFailure', 'planId', 'sessionId', 'editSteps', 'requestId'];
const REPLAY_FIELDS = ['planId', 'sessionId', 'editSteps', 'requestId'];

/**
 * `POST /v1/plans/{planId}/fork` and `/replay` (admin scope): the same `forkPlan` as the CLI's
 * `plans fork|replay`, its outcome answered 201 as the CLI's `--json` prints it. A malformed body: 400;
 * an unknown parent or checkpoint: 404; a fork the parent does not allow, or a new plan id
 * already taken: 409 (the server's error handler maps each kind). With an `Idempotency-Key`
 * header (or a `requestId` field), the same request sent again answers the fork it created (201,
 * `idempotent-replayed: true`), so a client may retry after a lost answer.
 */
export function registerForkRoutes(app: FastifyInstance, ds: DataSource): void {
  const admin = { config: { scope: 'admin' } } as const;
  for (const kind of ['fork', 'replay'] as const) {
    app.post(
      `/v1/plans/:planId/${kind}`,
      // the body is checked here, with the CLI's rules and wording: the schema only documents
      { ...admin, schema: forkRouteSchema(kind), validatorCompiler: () => () => true },
      async (req, reply) => {
        const parentPlanId = requireId('planId', (req.params as Record<string, string>).planId);
        const key = req.headers['idempotency-key'];
        const { replayed, ...outcome } = await forkPlan(
          ds,
          forkRequest(parentPlanId, kind, req.body, Array.isArray(key) ? key.join(',') : key),
        );
        if (replayed) void reply.header('idempotent-replayed', 'true');
        return reply
          .code(201)
          .header('location', `/v1/plans/${encodeURIComponent(outcome.planId)}`)
          .send(outcome);
      },
    );
  }
}

/**
 * The request a body (and an `Idempotency-Key` header) asks for; QueryArgumentError (400) naming
 * the first field that is wrong.
 */
export function forkRequest(
  parentPlanId: string,
  kind: 'fork' | 'replay',
  raw: unknown,
  idempotencyKey?: string,
): ForkRequest {
  const fields = kind === 'fork' ? FORK_FIELDS : REPLAY_FIELDS;
  const body: Body = raw === undefined || raw === null ? {} : (raw as Body);
  if (typeof body !== 'object' || Array.isArray(body))
    throw new QueryArgumentError('body', `must be a JSON object with ${fields.join(', ')}`);
  const unknown = Object.keys(body).find((k) => !fields.includes(k));
  if (unknown !== undefined)
    throw new QueryArgumentError(
      unknown,
      kind === 'replay' && FORK_FIELDS.includes(unknown)
        ? 'a replay runs every layer again: use POST /v1/plans/{planId}/fork to start elsewhere'
        : `is not a field of a ${kind} request; its fields: ${fields.join(', ')}`,
    );
  return {
    parentPlanId,
    kind,
    from: kind === 'fork' ? startOf(body) : undefined,
    planId: optionalId(body, 'planId'),
    sessionId: optionalId(body, 'sessionId'),
    editSteps: body.editSteps === undefined ? undefined : checkEditSteps(body.editSteps, 'editSteps'),
    requestId: requestIdOf(body, idempotencyKey),
    names: HTTP_FORK_NAMES,
  };
}

/** The request id: the `Idempotency-Key` header or the `requestId` field (the same if both). */
function requestIdOf(body: Body, header: string | undefined): string | undefined {
  const field = optionalId(body, 'requestId');
  if (header === undefined) return field;
  const key = requireId('Idempotency-Key', header);
  if (field !== undefined && field !== key)
    throw new QueryArgumentError('requestId', 'differs from the Idempotency-Key header: send one of them');
  return key;
}

function startOf(body: Body): ForkStart {
  if (body.fromFailure !== undefined && typeof body.fromFailure !== 'boolean')
    throw new QueryArgumentError('fromFailure', `must be true or false; got ${shown(body.fromFailure)}`);
  const given = [body.fromLayer !== undefined, body.fromCheckpoint !== undefined, body.fromFailure === true];
  if (given.filter(Boolean).length !== 1)
    throw new QueryArgumentError(
      'body',
      'give exactly one of "fromLayer": N, "fromCheckpoint": "<id>", "fromFailure": true (or POST .../replay)',
    );
  if (body.fromLayer !== undefined) {
    const layer = body.fromLayer;
    if (typeof layer !== 'number' || !Number.isInteger(layer) || layer < 0)
      throw new QueryArgumentError('fromLayer', `must be a layer number (an integer, 0 or more); got ${shown(layer)}`);
    return { layer };
  }
  if (body.fromCheckpoint !== undefined) return { checkpointId: stringId(body, 'fromCheckpoint') };
  return { failure: true };
}

function optionalId(body: Body, field: string): string | undefined {
  return body[field] === undefined ? undefined : stringId(body, field);
}

function stringId(body: Body, field: string): string {
  const value = body[field];
  if (typeof value !== 'string')
    throw new QueryArgumentError(field, `must be a string id (1-64 characters); got ${shown(value)}`);
  return requireId(field, value);
}

/** A value as an error line shows it: its JSON, cut to 40 characters. */
function shown(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 40 ? `${text.slice(0, 37)}...` : text;
}
