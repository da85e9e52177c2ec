/**
 * The contract as JSON Schema (draft 2020-12), for executors in any language. Built from the same
 * constants as the TypeScript contract (limits, id pattern, enums); `npm run schemas` writes the
 * files under `schemas/`, a test fails if they differ from what this module builds, and an
 * agreement test runs a corpus of valid and broken events through both ajv and `parsePlanEvent`.
 *
 * What JSON Schema cannot say, and `parsePlanEvent` still checks (listed in the envelope schema's
 * `x-plan-ledger-also-checked`): the step graph (unique stepId/index, dependsOn naming a step of
 * the same list, no cycle), the 1 MiB event size, the depth of checkpoint state, and lengths counted
 * in UTF-16 units (JSON Schema counts code points: they differ only for characters beyond U+FFFF).
 */
import {
  DECISION_KINDS,
  FINAL_STATUSES,
  FORK_KINDS,
  PLAN_EVENT_TYPES,
  PlanEventTypeName,
  SPEC_VERSION,
} from './event-types';
import { DECIMAL_AMOUNT_PATTERN, EXTERNAL_ID_PATTERN } from './field-formats';
import { DEFAULT_LIMITS } from './limits';

type Schema = Record<string, unknown>;

export const SCHEMA_DIALECT = 'https://json-schema.org/draft/2020-12/schema';
const ID_BASE = 'urn:plan-ledger:schema:';

const NO_NUL = '^[^\\u0000]*$';
const INT32 = 2_147_483_647;
const text = (min: number, max: number): Schema => ({
  type: 'string',
  minLength: min,
  maxLength: max,
  pattern: NO_NUL,
});
const longText = (nonEmpty = false): Schema => ({
  type: 'string',
  ...(nonEmpty ? { minLength: 1 } : {}),
  maxLength: DEFAULT_LIMITS.maxLongText,
  pattern: NO_NUL,
});
const int = (min: number, max: number): Schema => ({ type: 'integer', minimum: min, maximum: max });
const externalId: Schema = {
  type: 'string',
  pattern: EXTERNAL_ID_PATTERN.source,
  description: 'an executor id: 1-64 of letters, digits, _ . : -, starting with a letter or digit',
};
const object = (required: string[], properties: Record<string, Schema>, extra: Schema = {}): Schema => ({
  type: 'object',
  required,
  properties,
  additionalProperties: false,
  ...extra,
});

/** Any JSON value whose strings and keys hold no NUL (checkpoint state). */
const nulFreeJson: Schema = {
  anyOf: [
    { type: ['null', 'boolean', 'number'] },
    { type: 'string', pattern: NO_NUL },
    { type: 'array', items: { $ref: '#/$defs/nulFreeJson' } },
    { type: 'object', propertyNames: { pattern: NO_NUL }, additionalProperties: { $ref: '#/$defs/nulFreeJson' } },
  ],
};

const stepSpec = object(['stepId', 'index', 'agentId', 'task'], {
  stepId: externalId,
  index: int(0, 100_000),
  agentId: text(1, 100),
  task: longText(true),
  title: text(0, 500),
  expectedOutput: text(0, 50),
  dependsOn: { type: 'array', items: externalId, uniqueItems: true, maxItems: DEFAULT_LIMITS.maxDependsOn },
});
const stepList: Schema = { type: 'array', items: { $ref: '#/$defs/stepSpec' }, maxItems: DEFAULT_LIMITS.maxSteps };

/** What a model call used and cost beyond input and output tokens (types.ts, StepUsageFields). */
const usageFields: Record<string, Schema> = {
  provider: text(1, 100),
  cacheReadTokens: int(0, INT32),
  cacheWriteTokens: int(0, INT32),
  reasoningTokens: int(0, INT32),
  reportedCost: {
    type: 'string',
    pattern: DECIMAL_AMOUNT_PATTERN.source,
    description: "the provider's own cost in USD, as a decimal string; it wins over any price",
  },
};

export const PAYLOAD_SCHEMAS: Readonly<Record<PlanEventTypeName, Schema>> = Object.freeze({
  'plan.created': object(['query', 'steps'], {
    query: longText(true),
    steps: stepList,
    requiresApproval: { type: 'boolean' },
    complexity: int(0, 100),
    forkOf: object(['planId', 'kind', 'layer'], {
      planId: externalId,
      kind: { enum: [...FORK_KINDS] },
      layer: int(0, 100_000),
      checkpointId: externalId,
    }),
    traceId: externalId,
  }),
  'plan.decision': object(
    ['decision'],
    { decision: { enum: [...DECISION_KINDS] }, steps: stepList, feedback: longText(), decidedBy: text(0, 200) },
    {
      // an edit carries the full new step list (at least one step); approve and reject carry none
      if: { properties: { decision: { const: 'edit' } } },
      then: { required: ['steps'], properties: { steps: { minItems: 1 } } },
      else: { not: { required: ['steps'] } },
    },
  ),
  'step.started': object(['stepId'], { stepId: externalId, agentId: text(1, 100) }),
  'step.completed': object(['stepId', 'inputTokens', 'outputTokens'], {
    stepId: externalId,
    result: longText(),
    outputContent: longText(),
    inputTokens: int(0, INT32),
    outputTokens: int(0, INT32),
    model: text(1, 100),
    ...usageFields,
  }),
  'step.failed': object(['stepId', 'error'], {
    stepId: externalId,
    error: longText(),
    inputTokens: int(0, INT32),
    outputTokens: int(0, INT32),
    model: text(1, 100),
    ...usageFields,
  }),
  'step.skipped': object(['stepId'], { stepId: externalId, reason: longText() }),
  'handoff.recorded': object(['handoffId', 'fromAgentId', 'toAgentId', 'reason'], {
    handoffId: externalId,
    stepId: externalId,
    fromAgentId: text(1, 100),
    toAgentId: text(1, 100),
    reason: text(1, 50),
    explanation: longText(),
  }),
  'checkpoint.saved': object(['checkpointId', 'layer', 'state'], {
    checkpointId: externalId,
    layer: int(0, 100_000),
    state: {
      type: 'object',
      propertyNames: { pattern: NO_NUL },
      additionalProperties: { $ref: '#/$defs/nulFreeJson' },
    },
  }),
  'plan.finalized': object(['status'], {
    status: { enum: [...FINAL_STATUSES] },
    summary: longText(),
    failureReason: longText(),
  }),
});

const ALSO_CHECKED = [
  "step lists: stepId and index unique within the list; dependsOn names steps of the same list (or, in a fork's plan.created, of its parent); no dependency cycle",
  `the whole event is at most ${DEFAULT_LIMITS.maxEventBytes} bytes of UTF-8 JSON`,
  `checkpoint state is nested at most ${DEFAULT_LIMITS.maxStateDepth} levels deep`,
  'text lengths count UTF-16 code units (a character beyond U+FFFF counts 2)',
];

function envelopeProperties(type: Schema, payload: Schema): Record<string, Schema> {
  return {
    specVersion: { const: SPEC_VERSION },
    eventId: {
      type: 'string',
      pattern: '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$',
      description: 'the idempotency key: a UUID chosen once per event',
    },
    type,
    planId: externalId,
    sessionId: externalId,
    seq: {
      ...int(0, INT32),
      description:
        'per-plan sequence: 0, 1, 2, ... in publish order; a resumed plan continues from its resume point nextSeq',
    },
    // years from 1000 (the range every database stores) and no leap second, as the contract checks
    occurredAt: {
      type: 'string',
      format: 'date-time',
      pattern:
        '^[1-9]\\d{3}-(0[1-9]|1[0-2])-(0[1-9]|[12]\\d|3[01])T([01]\\d|2[0-3]):[0-5]\\d:[0-5]\\d(\\.\\d{1,9})?(Z|\\+00:00)$',
      description: 'ISO-8601 in UTC, from year 1000',
    },
    payload,
  };
}
const ENVELOPE_REQUIRED = ['specVersion', 'eventId', 'type', 'planId', 'sessionId', 'seq', 'occurredAt', 'payload'];

const DEFS = (types: readonly PlanEventTypeName[]): Schema => {
  const defs: Schema = { stepSpec, nulFreeJson };
  for (const t of types) defs[payloadDef(t)] = PAYLOAD_SCHEMAS[t];
  return defs;
};
const payloadDef = (type: PlanEventTypeName) => `payload:${type}`;
const usesSteps = (t: PlanEventTypeName) => t === 'plan.created' || t === 'plan.decision';

/** The envelope alone: every event's common fields, its payload any object. */
export function envelopeSchema(): Schema {
  return {
    $schema: SCHEMA_DIALECT,
    $id: `${ID_BASE}envelope:${SPEC_VERSION}`,
    title: 'plan-ledger event envelope',
    description: 'The fields every plan event carries; the payload depends on type (see events/<type>.schema.json).',
    ...object(ENVELOPE_REQUIRED, envelopeProperties({ enum: [...PLAN_EVENT_TYPES] }, { type: 'object' })),
    'x-plan-ledger-also-checked': ALSO_CHECKED,
  };
}

/** One event type, self-contained. */
export function eventSchema(type: PlanEventTypeName): Schema {
  const defs: Schema = {
    [payloadDef(type)]: PAYLOAD_SCHEMAS[type],
    ...(usesSteps(type) ? { stepSpec } : {}),
    ...(type === 'checkpoint.saved' ? { nulFreeJson } : {}),
  };
  return {
    $schema: SCHEMA_DIALECT,
    $id: `${ID_BASE}event:${type}:${SPEC_VERSION}`,
    title: `plan-ledger ${type} event`,
    ...object(ENVELOPE_REQUIRED, envelopeProperties({ const: type }, { $ref: `#/$defs/${payloadDef(type)}` })),
    $defs: defs,
  };
}

/** Any plan event: the envelope, then the payload chosen by `type`. */
export function planEventSchema(): Schema {
  return {
    $schema: SCHEMA_DIALECT,
    $id: `${ID_BASE}plan-event:${SPEC_VERSION}`,
    title: 'plan-ledger event',
    description: 'Any plan event (spec version 1). POST /v1/events takes a JSON array of these.',
    ...object(ENVELOPE_REQUIRED, envelopeProperties({ enum: [...PLAN_EVENT_TYPES] }, { type: 'object' })),
    allOf: PLAN_EVENT_TYPES.map((t) => ({
      if: { required: ['type'], properties: { type: { const: t } } },
      then: { properties: { payload: { $ref: `#/$defs/${payloadDef(t)}` } } },
    })),
    $defs: DEFS(PLAN_EVENT_TYPES),
    'x-plan-ledger-also-checked': ALSO_CHECKED,
  };
}

/** Every file under `schemas/`: its path relative to that folder, and its content. */
export function schemaFiles(): Record<string, Schema> {
  const files: Record<string, Schema> = {
    'envelope.schema.json': envelopeSchema(),
    'plan-event.schema.json': planEventSchema(),
  };
  for (const t of PLAN_EVENT_TYPES) files[`events/${t}.schema.json`] = eventSchema(t);
  return files;
}
