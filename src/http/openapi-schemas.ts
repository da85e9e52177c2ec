/**
 * Route schemas for the OpenAPI document (`GET /v1/openapi.json`). They document; they do not
 * validate nor serialise: arguments go through the same parsers as the CLI (one wording), bodies
 * through the contract, and answers are plain JSON of the query results.
 */
const idParam = (name: string, description: string) => ({
  type: 'object',
  required: [name],
  properties: { [name]: { type: 'string', description } },
});
const error = {
  type: 'object',
  properties: { error: { type: 'string', description: 'one line: what was wrong and where' } },
};
const reasonError = {
  type: 'object',
  properties: { ...error.properties, reason: { type: 'string', description: 'why, as a word a program tests' } },
};
const anyObject = (description: string) => ({ description, type: 'object', additionalProperties: true });
const readResponses = (ok: string) => ({
  200: anyObject(ok),
  400: { ...error, description: 'a malformed argument' },
  401: { ...error, description: 'no or unknown API key' },
  403: { ...error, description: 'the key lacks the read scope' },
  404: { ...error, description: 'unknown id' },
});
const security = [{ apiKey: [] }];

export const readRouteSchemas = {
  listPlans: {
    summary: 'plans, newest first (CLI: plans list --json)',
    tags: ['read'],
    security,
    querystring: {
      type: 'object',
      properties: {
        sessionId: { type: 'string' },
        status: {
          type: 'string',
          description:
            'planning|executing|completed|failed|cancelled, or stalled (executing, no event within its deadline)',
        },
        from: { type: 'string', description: 'created at or after (ISO-8601)' },
        to: { type: 'string', description: 'created before (ISO-8601)' },
        agentId: { type: 'string', description: 'plans with a step of this agent' },
        limit: { type: 'string', description: '1-1000, default 20' },
        offset: { type: 'string', description: 'default 0' },
        cursor: { type: 'string', description: 'the nextCursor of the previous page (instead of offset)' },
      },
    },
    response: readResponses('{ total (counted up to 1,000), totalExact, limit, offset, hasMore, nextCursor, plans }'),
  },
  planTimeline: {
    summary: "a plan's timeline (CLI: plans show --json)",
    tags: ['read'],
    security,
    params: idParam('planId', "the executor's plan id"),
    response: readResponses('the plan, its steps, handoffs, decisions, checkpoints and timeline'),
  },
  planExport: {
    summary: 'a plan as a reusable template (CLI: plans export)',
    tags: ['read'],
    security,
    params: idParam('planId', "the executor's plan id"),
    response: readResponses('query, steps, agents, dependencies'),
  },
  planLineage: {
    summary: 'the fork tree a plan belongs to (CLI: plans lineage --json)',
    tags: ['read'],
    security,
    params: idParam('planId', "the executor's plan id (any plan of the tree)"),
    response: readResponses(
      '{ planId, rootId, plans, truncated, root: { planId, sessionId, parentPlanId, kind, forkLayer, forkCheckpoint, status, createdAt, completedAt, retiredAt, totalSteps, completedSteps, failedSteps, inputTokens, outputTokens, cost, current, children } }',
    ),
  },
  stepOutput: {
    summary: "a step's stored output (CLI: steps output); Accept: text/plain gives the raw content byte for byte",
    tags: ['read'],
    security,
    params: {
      type: 'object',
      required: ['planId', 'step'],
      properties: {
        planId: { type: 'string' },
        step: { type: 'string', description: 'the stepId, or the step index' },
      },
    },
    response: {
      ...readResponses(
        '{ planId, stepId, index, agentId, status, model, completedAt, outputContent }; as text/plain: outputContent itself (404 when none is stored)',
      ),
    },
  },
  sessionActive: {
    summary: "a session's plan in progress, with nextSeq (CLI: sessions active --json)",
    tags: ['read'],
    security,
    params: idParam('sessionId', "the executor's session id"),
    response: readResponses('{ sessionId, activePlan (null when none; with steps and nextSeq), otherActivePlanIds }'),
  },
  sessionHistory: {
    summary: "a session's finished plans, newest first (CLI: sessions history --json)",
    tags: ['read'],
    security,
    params: idParam('sessionId', "the executor's session id"),
    querystring: { type: 'object', properties: { limit: { type: 'string', description: '1-1000, default 10' } } },
    response: readResponses('{ sessionId, plans }'),
  },
  resumePoint: {
    summary: "a workflow's resume point, with nextSeq (CLI: workflows resume-point --json)",
    tags: ['read'],
    security,
    params: idParam('planId', 'the workflow (plan) id'),
    response: readResponses(
      '{ resumable: true, dag, latestCheckpoint, nextLayer, nextSteps, layers, nextSeq, ... } or { resumable: false, reason, nextSeq }',
    ),
  },
  reconcile: {
    summary: "the ledger against a provider's usage/cost export (CLI: cost reconcile --json)",
    description:
      'The body is the export: JSON pages of the OpenAI usage/costs or Anthropic usage_report/cost_report API ' +
      '(one page, an array of pages, or JSON Lines) or CSV with their field names. Nothing is stored.',
    tags: ['read'],
    security,
    querystring: {
      type: 'object',
      properties: {
        provider: { type: 'string', description: 'openai or anthropic (required)' },
        from: { type: 'string', description: 'ISO instant, inclusive (default: the first day of the export)' },
        to: {
          type: 'string',
          description: 'ISO instant, exclusive (default: the day after the last day of the export)',
        },
        failOver: { type: 'string', description: 'a %: the answer says in check.beyond why it is beyond it, or null' },
      },
    },
    response: readResponses(
      '{ from, to, provider, billed, ledger, billedTotals, coveragePct, costDelta, costDeltaPct, byModel, byDay, unattributed, check? }',
    ),
  },
  analytics: {
    summary: 'analytics reports (CLI: analytics daily|agents|handoffs|tokens|cost --json)',
    tags: ['read'],
    security,
    params: {
      type: 'object',
      required: ['report'],
      properties: { report: { type: 'string', enum: ['daily', 'agents', 'handoffs', 'tokens', 'cost'] } },
    },
    querystring: {
      type: 'object',
      properties: {
        from: { type: 'string', description: 'ISO instant, inclusive' },
        to: { type: 'string', description: 'ISO instant, exclusive' },
        by: {
          type: 'string',
          description: 'tokens: session|plan|agent|model; cost: model|agent|session|plan (default model)',
        },
        limit: {
          type: 'string',
          description: 'tokens: lines per page of the session and plan lists, 1-1000 (default 100)',
        },
        cursor: { type: 'string', description: 'tokens: the page after the one whose page.nextCursor this is' },
      },
    },
    response: readResponses(
      '{ from, to, days | agents | handoffs | bySession/byPlan/byAgent/byModel/total/page | by/lines/total (cost) }',
    ),
  },
};

export function ingestRouteSchema(maxBatchEvents: number) {
  const violation = { type: 'object', properties: { path: { type: 'string' }, message: { type: 'string' } } };
  return {
    summary: 'publish a batch of plan events',
    description:
      'Each event must carry all its stamps (specVersion, eventId, seq, occurredAt): a retried batch then changes nothing. The contract is schemas/plan-event.schema.json.',
    tags: ['ingest'],
    security,
    body: {
      type: 'array',
      maxItems: maxBatchEvents,
      items: { type: 'object', description: 'a plan event (schemas/plan-event.schema.json)' },
    },
    response: {
      202: {
        description: 'one result per event, in order; invalid events do not stop their valid neighbours',
        type: 'object',
        properties: {
          accepted: { type: 'integer' },
          invalid: { type: 'integer' },
          dropped: { type: 'integer' },
          results: {
            type: 'array',
            items: {
              type: 'object',
              properties: {
                index: { type: 'integer' },
                status: { type: 'string', enum: ['accepted', 'invalid', 'dropped'] },
                eventId: { type: 'string' },
                seq: { type: 'integer' },
                violations: { type: 'array', items: violation },
              },
            },
          },
        },
      },
      400: { ...error, description: 'the body is not a JSON array' },
      401: { ...error, description: 'no or unknown API key' },
      403: { ...error, description: 'the key lacks the ingest scope' },
      413: { ...error, description: 'more events or bytes than the server takes in one request' },
      503: { ...error, description: 'the server cannot take more now; retry after the Retry-After header' },
    },
  };
}

export const eventStatusRouteSchema = {
  summary:
    'where published events are now: applied, waiting behind a missing seq, refused, or unknown (read your own writes)',
  description:
    'With waitMs, answers once every id is applied or refused, or when the time is up. An executor restarted after its journal drained waits here before reading its session. Ingest or read key.',
  tags: ['ingest'],
  security,
  body: {
    type: 'object',
    required: ['eventIds'],
    properties: {
      eventIds: { type: 'array', maxItems: 10_000, items: { type: 'string', description: 'an eventId (UUID)' } },
      waitMs: {
        type: 'integer',
        minimum: 0,
        maximum: 30_000,
        description: 'wait up to this long for every id to be applied or refused; default 0',
      },
    },
  },
  response: {
    200: {
      description:
        'each id in one list, lower-case: applied (reads show it), waiting (stored behind a missing seq), refused (dead-lettered, its seq voided), unknown (not stored yet)',
      type: 'object',
      properties: {
        applied: { type: 'array', items: { type: 'string' } },
        waiting: { type: 'array', items: { type: 'string' } },
        refused: { type: 'array', items: { type: 'string' } },
        unknown: { type: 'array', items: { type: 'string' } },
      },
    },
    400: { ...error, description: 'the body is not { eventIds: [...], waitMs? }' },
    401: { ...error, description: 'no or unknown API key' },
    403: { ...error, description: 'the key has neither the ingest nor the read scope' },
  },
};

/** `POST /v1/plans/{planId}/fork` and `/replay`. */
export function forkRouteSchema(kind: 'fork' | 'replay') {
  const common = {
    planId: { type: 'string', description: "the new plan's id (default: the parent's id and ." + kind + '-<8 hex>)' },
    sessionId: { type: 'string', description: "the new plan's session (default: the parent's)" },
    requestId: {
      type: 'string',
      description:
        'an id of this request (or the Idempotency-Key header): sent again, it answers the fork it created (header idempotent-replayed: true) instead of creating another',
    },
    editSteps: {
      description:
        'steps to change (a stepId of the parent, of the fork layer or later) or add (a new stepId): an array of steps as in plan.created (stepId, agentId, task, title?, expectedOutput?, dependsOn?; index is set by the server), or a plans export template (an object with "steps"); steps equal to the parent\'s are no change',
      oneOf: [
        { type: 'array', items: { type: 'object' } },
        { type: 'object', required: ['steps'], properties: { steps: { type: 'array', items: { type: 'object' } } } },
      ],
    },
  };
  const start = {
    fromLayer: { type: 'integer', minimum: 0, description: 'the first layer the fork runs (0: every layer)' },
    fromCheckpoint: {
      type: 'string',
      description: "start after one of the parent's checkpoints (the layer it closes is inherited)",
    },
    fromFailure: { type: 'boolean', enum: [true], description: "start at the parent's first layer with a failed step" },
  };
  return {
    summary:
      kind === 'fork'
        ? 'a new plan from a stored one, from a layer: earlier layers inherited, later ones to run (admin scope; CLI: plans fork --json)'
        : 'run a stored plan again: a new pending plan with the same steps, its lineage recorded (admin scope; CLI: plans replay --json)',
    description:
      (kind === 'fork' ? 'Give exactly one of fromLayer, fromCheckpoint, fromFailure. ' : '') +
      "The new plan's executor continues it from its resume point (GET /v1/workflows/{planId}/resume-point), publishing from nextSeq.",
    tags: ['fork'],
    security,
    params: idParam('planId', 'the plan to ' + kind),
    body: {
      type: 'object',
      additionalProperties: false,
      properties: kind === 'fork' ? { ...start, ...common } : common,
    },
    response: {
      201: {
        description:
          'the new plan: Location names it. steps = inheritedSteps + the steps to run; the executor runs nextSteps of nextLayer first, publishing from nextSeq',
        type: 'object',
        properties: {
          planId: { type: 'string' },
          sessionId: { type: 'string' },
          kind: { type: 'string', enum: ['fork', 'replay'] },
          parentPlanId: { type: 'string' },
          layer: { type: 'integer' },
          checkpointId: { type: ['string', 'null'] },
          steps: { type: 'integer' },
          inheritedSteps: { type: 'integer' },
          changedSteps: { type: 'array', items: { type: 'string' } },
          addedSteps: { type: 'array', items: { type: 'string' } },
          nextLayer: { type: 'integer' },
          nextSteps: { type: 'array', items: { type: 'string' } },
          nextSeq: { type: 'integer' },
        },
      },
      400: { ...error, description: "a malformed body: a field, the start, or an edit step (the contract's rule)" },
      401: { ...error, description: 'no or unknown API key' },
      403: { ...error, description: 'the key lacks the admin scope' },
      404: { ...error, description: 'unknown plan, or unknown checkpoint of it' },
      409: {
        ...error,
        description:
          'refused: the new plan id exists, or the start or the edits do not fit the parent (an inherited step edited, a cycle, nothing left to run)',
      },
    },
  };
}

/** `POST /v1/approvals/{approvalId}/decide` (docs/approvals.md). */
export const decideRouteSchema = {
  summary: 'decide an approval: approve, edit or reject (approve scope; CLI: approvals decide --json)',
  description:
    "decidedBy is the approve key's name (HTTP_APPROVE_KEYS name:key). The decision is stored as an approval.decided event through the queue and the worker, like every event; the 202 is sent once that event is durable.",
  tags: ['approvals'],
  security,
  params: idParam('approvalId', 'the approval to decide'),
  body: {
    type: 'object',
    required: ['decision'],
    additionalProperties: false,
    properties: {
      decision: { type: 'string', enum: ['approve', 'edit', 'reject'] },
      feedback: { type: 'string', maxLength: 4000, description: 'why, for the executor and the audit' },
      editedArgsDigest: {
        type: 'string',
        pattern: '^[0-9a-f]{64}$',
        description:
          'required for edit, refused otherwise: the SHA-256 of the edited arguments (docs/approvals.md#argsdigest)',
      },
    },
  },
  response: {
    202: {
      description: 'the decision is durable (in Redis or the server journal); the worker stores it next',
      type: 'object',
      properties: {
        approvalId: { type: 'string' },
        planId: { type: 'string' },
        decision: { type: 'string', enum: ['approve', 'edit', 'reject'] },
        decidedBy: { type: 'string' },
        eventId: { type: 'string', description: 'the approval.decided event (POST /v1/events/status follows it)' },
      },
    },
    400: { ...error, description: 'a malformed body: the error names the field' },
    401: { ...error, description: 'no or unknown API key' },
    403: { ...error, description: 'the key lacks the approve scope' },
    404: { ...reasonError, description: 'no request of this approval is stored (reason not_found)' },
    409: { ...reasonError, description: 'reason already_decided (decided or consumed before) or expired' },
    503: { ...error, description: 'not durable in time, or shutting down; retry after the Retry-After header' },
  },
};

/** `GET /v1/approvals/{approvalId}?waitMs=` (docs/approvals.md#waiting-for-the-decision). */
export const approvalRouteSchema = {
  summary: 'one approval; with waitMs, held until it is decided or expires (read, ingest or approve scope)',
  description:
    'Answers at once when the approval is not pending or waitMs is 0. Otherwise held until it is decided, its expiresAt comes or waitMs passes; status says which (pending: ask again). Executors wait here with their ingest key.',
  tags: ['approvals'],
  security,
  params: idParam('approvalId', 'the approval'),
  querystring: {
    type: 'object',
    properties: {
      waitMs: { type: 'string', description: '0-60000, default 0: how long to hold the request while it is pending' },
    },
  },
  response: {
    ...readResponses(
      'the approval: status (pending, expired, decided, consumed), decision, decidedBy, feedback, editedArgsDigest, expiresAt, ageMs',
    ),
    403: { ...error, description: 'the key has none of the read, ingest and approve scopes' },
    404: { ...error, description: 'no request of this approval is stored (after waiting up to waitMs)' },
  },
};

const adminResponses = <T extends Record<number, unknown>>(ok: T) => ({
  ...ok,
  400: { ...error, description: 'a malformed argument (named in the error)' },
  401: { ...error, description: 'no or unknown API key' },
  403: { ...error, description: 'the key lacks the admin scope' },
});
const subscription = (secret: string) => ({
  type: 'object',
  properties: {
    id: { type: 'string', description: 'wh-<12 hex>' },
    url: { type: 'string' },
    events: { type: 'string', description: 'comma-separated webhook types, or *' },
    enabled: { type: 'boolean' },
    secret: { type: 'string', description: secret },
    createdAt: { type: 'string', format: 'date-time' },
  },
});
const subscriptionIdParam = idParam('id', 'the subscription id (wh-...)');
const unknownSubscription = { 404: { ...error, description: 'no subscription under this id' } };

/** `/v1/webhooks/...`: subscriptions and deliveries (admin scope; CLI: webhooks ...). */
export const webhookRouteSchemas = {
  list: {
    summary: 'every webhook subscription, oldest first, secrets redacted (admin scope; CLI: webhooks list --json)',
    tags: ['webhooks'],
    security,
    response: adminResponses({
      200: {
        description: '{ subscriptions }',
        type: 'object',
        properties: {
          subscriptions: { type: 'array', items: subscription('redacted: whsec_… and its last 4 characters') },
        },
      },
    }),
  },
  add: {
    summary:
      'subscribe a URL; the answer holds the signing secret, shown this once (admin scope; CLI: webhooks add --json)',
    description:
      "The URL is resolved and refused if any address is loopback, private, link-local or metadata (unless serve's WEBHOOKS_ALLOW_PRIVATE allows it). Events stored from then on (within 2 s) are delivered to it.",
    tags: ['webhooks'],
    security,
    body: {
      type: 'object',
      required: ['url'],
      additionalProperties: false,
      properties: {
        url: { type: 'string', description: 'https:// (or http://) URL the webhooks are POSTed to' },
        events: {
          description: 'webhook types (comma-separated, or a list), or * for all (default *)',
          oneOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }],
        },
        enabled: { type: 'boolean', description: 'default true; false stores it disabled' },
      },
    },
    response: adminResponses({
      201: {
        ...subscription('the signing secret in full (whsec_...): this answer only'),
        description: 'stored; Location names it',
      },
    }),
  },
  remove: {
    summary: 'remove a subscription and its deliveries not yet sent (admin scope; CLI: webhooks remove)',
    tags: ['webhooks'],
    security,
    params: subscriptionIdParam,
    response: adminResponses({
      200: { description: '{ removed: id }', type: 'object', properties: { removed: { type: 'string' } } },
      ...unknownSubscription,
    }),
  },
  enable: (action: 'enable' | 'disable') => ({
    summary: `${action} a subscription; a disabled one gets no new deliveries (admin scope; CLI: webhooks ${action})`,
    tags: ['webhooks'],
    security,
    params: subscriptionIdParam,
    response: adminResponses({
      200: {
        description: '{ id, enabled }',
        type: 'object',
        properties: { id: { type: 'string' }, enabled: { type: 'boolean' } },
      },
      ...unknownSubscription,
    }),
  }),
  deliveries: {
    summary:
      'the newest webhook deliveries: status, attempts, last error (admin scope; CLI: webhooks deliveries --json)',
    tags: ['webhooks'],
    security,
    querystring: {
      type: 'object',
      properties: {
        subscription: { type: 'string', description: 'only this subscription' },
        status: { type: 'string', enum: ['pending', 'delivered', 'dead'] },
        limit: { type: 'string', description: '1-10000, default 50' },
      },
    },
    response: adminResponses({
      200: {
        description:
          '{ deliveries: [{ id (the webhook-id), subscriptionId, eventType, eventId, planId, status, attempts, nextAttemptAt, lastError, createdAt, deliveredAt }] }',
        type: 'object',
        properties: { deliveries: { type: 'array', items: { type: 'object' } } },
      },
    }),
  },
  replay: {
    summary:
      'send deliveries again now, attempts reset, with the same webhook-id (admin scope; CLI: webhooks replay --json)',
    description:
      'ids names the deliveries; without ids, every delivery of status (default dead), of one subscription if given.',
    tags: ['webhooks'],
    security,
    body: {
      type: 'object',
      additionalProperties: false,
      properties: {
        ids: { type: 'array', items: { type: 'string' }, description: 'delivery ids (webhook-id values)' },
        subscription: { type: 'string', description: 'only this subscription' },
        status: { type: 'string', enum: ['dead', 'delivered'], description: 'when no id is given (default dead)' },
      },
    },
    response: adminResponses({
      200: { description: '{ replayed: how many }', type: 'object', properties: { replayed: { type: 'integer' } } },
    }),
  },
};
