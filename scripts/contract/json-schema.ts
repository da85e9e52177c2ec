/**
 * The contract as JSON Schema (draft 2020-12), for executors in any language, derived from the
 * declaration (src/contracts/declaration.ts): `npm run generate` writes the files under `schemas/`,
 * and test/contracts/generated-artifacts.unit.test.ts fails if they differ from what this builds.
 *
 * What JSON Schema cannot say, and the contract still checks, is listed in the envelope schema's
 * `x-plan-ledger-also-checked` (the declaration's ALSO_CHECKED).
 */
import { allFields, fieldOfKind, Kind, PayloadShape, Shape } from '../../src/contracts/contract-kinds';
import { ALSO_CHECKED, ENVELOPE, PAYLOADS } from '../../src/contracts/declaration';
import { PLAN_EVENT_TYPES, PlanEventTypeName, SPEC_VERSION } from '../../src/contracts/event-types';
import {
  DECIMAL_AMOUNT_PATTERN,
  EARLIEST_YEAR,
  EXTERNAL_ID_PATTERN,
  UTC_TIMESTAMP_PATTERN,
  UUID_PATTERN,
} from '../../src/contracts/field-formats';
import { DEFAULT_LIMITS } from '../../src/contracts/limits';

type Schema = Record<string, unknown>;

export const SCHEMA_DIALECT = 'https://json-schema.org/draft/2020-12/schema';
const ID_BASE = 'urn:plan-ledger:schema:';

const NO_NUL = '^[^\\u0000]*$';
const EXTERNAL_ID_DESCRIPTION = 'an executor id: 1-64 of letters, digits, _ . : -, starting with a letter or digit';

/** The contract's timestamp pattern with its year from EARLIEST_YEAR (1000): `[1-9]\d{3}`. */
const TIMESTAMP_PATTERN = ((): string => {
  if (EARLIEST_YEAR !== 1000) throw new Error('the schema pattern writes the earliest year as [1-9]\\d{3}');
  return UTC_TIMESTAMP_PATTERN.source.replace('^(\\d{4})', '^[1-9]\\d{3}');
})();

/** Any JSON value whose strings and keys hold no NUL (checkpoint state). */
const NUL_FREE_JSON: Schema = {
  anyOf: [
    { type: ['null', 'boolean', 'number'] },
    { type: 'string', pattern: NO_NUL },
    { type: 'array', items: { $ref: '#/$defs/nulFreeJson' } },
    { type: 'object', propertyNames: { pattern: NO_NUL }, additionalProperties: { $ref: '#/$defs/nulFreeJson' } },
  ],
};

/** The schema of a field of `kind`; `description` (the declared one) goes last. */
function kindSchema(kind: Kind, description: string | undefined): Schema {
  const described = (schema: Schema, fallback?: string): Schema => {
    const text = description ?? fallback;
    return text === undefined ? schema : { ...schema, description: text };
  };
  switch (kind.kind) {
    case 'text':
      return described({ type: 'string', minLength: kind.min, maxLength: kind.max, pattern: NO_NUL });
    case 'longText':
      return described({
        type: 'string',
        ...(kind.nonEmpty ? { minLength: 1 } : {}),
        maxLength: DEFAULT_LIMITS[kind.limit],
        pattern: NO_NUL,
      });
    case 'externalId':
      return described({ type: 'string', pattern: EXTERNAL_ID_PATTERN.source }, EXTERNAL_ID_DESCRIPTION);
    case 'uuid':
      return described({ type: 'string', pattern: UUID_PATTERN.source });
    case 'utcTimestamp':
      // years from 1000 (the range every database stores) and no leap second, as the contract checks
      return described(
        { type: 'string', format: 'date-time', pattern: TIMESTAMP_PATTERN },
        'ISO-8601 in UTC, from year 1000',
      );
    case 'int':
      return described({ type: 'integer', minimum: kind.min, maximum: kind.max });
    case 'decimalAmount':
      return described({ type: 'string', pattern: DECIMAL_AMOUNT_PATTERN.source });
    case 'bool':
      return described({ type: 'boolean' });
    case 'oneOf':
    case 'eventType':
      return described({ enum: [...kind.values] });
    case 'exactly':
      return described({ const: kind.value });
    case 'payload':
      return described({ type: 'object' });
    case 'nested':
      return described(objectSchema(kind.shape));
    case 'list':
      return described({
        type: 'array',
        items: { $ref: `#/$defs/${kind.shape.schemaDef}` },
        maxItems: DEFAULT_LIMITS[kind.limit],
      });
    case 'externalIds':
      return described({
        type: 'array',
        items: kindSchema({ kind: 'externalId' }, undefined),
        uniqueItems: true,
        maxItems: DEFAULT_LIMITS[kind.limit],
      });
    case 'jsonState':
      return described({
        type: 'object',
        propertyNames: { pattern: NO_NUL },
        additionalProperties: { $ref: '#/$defs/nulFreeJson' },
      });
  }
}

function objectSchema(shape: Shape, extra: Schema = {}): Schema {
  const fields = allFields(shape);
  return {
    type: 'object',
    required: fields.filter(([, f]) => f.required).map(([name]) => name),
    properties: Object.fromEntries(fields.map(([name, f]) => [name, kindSchema(f.kind, f.description)])),
    additionalProperties: false,
    ...extra,
  };
}

/** A payload's cross-field rules that JSON Schema can say: a field present only when another has a value. */
function payloadSchema(shape: PayloadShape): Schema {
  const extra: Schema = {};
  for (const rule of shape.rules ?? []) {
    if (rule.rule !== 'onlyWhen') continue;
    extra.if = { properties: { [rule.when]: { const: rule.is } } };
    extra.then = { required: [rule.field], properties: { [rule.field]: { minItems: rule.minItems } } };
    extra.else = { not: { required: [rule.field] } };
  }
  return objectSchema(shape, extra);
}

/** The shapes a kind refers to by `$defs` name, nested ones included, in order of first use. */
function defsUsed(shape: Shape, into: Map<string, Schema>): Map<string, Schema> {
  for (const [, f] of allFields(shape)) {
    const kind = f.kind;
    if (kind.kind === 'list' && kind.shape.schemaDef !== undefined && !into.has(kind.shape.schemaDef)) {
      into.set(kind.shape.schemaDef, objectSchema(kind.shape));
      defsUsed(kind.shape, into);
    } else if (kind.kind === 'nested') defsUsed(kind.shape, into);
    else if (kind.kind === 'jsonState') into.set('nulFreeJson', NUL_FREE_JSON);
  }
  return into;
}

const ALSO_CHECKED_FILLED = ALSO_CHECKED.map((line) =>
  line.replace(/\{(\w+)\}/g, (_m, limit: keyof typeof DEFAULT_LIMITS) => String(DEFAULT_LIMITS[limit])),
);

function envelope(type: Schema, payload: Schema): Schema {
  const fields = allFields(ENVELOPE);
  return {
    type: 'object',
    required: fields.filter(([, f]) => f.required).map(([name]) => name),
    properties: Object.fromEntries(
      fields.map(([name, f]) => [
        name,
        f.kind.kind === 'eventType' ? type : f.kind.kind === 'payload' ? payload : kindSchema(f.kind, f.description),
      ]),
    ),
    additionalProperties: false,
  };
}

const TYPE_FIELD = fieldOfKind(ENVELOPE, 'eventType');
const PAYLOAD_FIELD = fieldOfKind(ENVELOPE, 'payload');
const payloadDef = (type: PlanEventTypeName) => `${PAYLOAD_FIELD}:${type}`;
const anyType: Schema = { enum: [...PLAN_EVENT_TYPES] };

/** The envelope alone: every event's common fields, its payload any object. */
export function envelopeSchema(): Schema {
  return {
    $schema: SCHEMA_DIALECT,
    $id: `${ID_BASE}envelope:${SPEC_VERSION}`,
    title: 'plan-ledger event envelope',
    description: 'The fields every plan event carries; the payload depends on type (see events/<type>.schema.json).',
    ...envelope(anyType, { type: 'object' }),
    'x-plan-ledger-also-checked': ALSO_CHECKED_FILLED,
  };
}

/** One event type, self-contained. */
export function eventSchema(type: PlanEventTypeName): Schema {
  const defs: Schema = { [payloadDef(type)]: payloadSchema(PAYLOADS[type]) };
  for (const [name, schema] of defsUsed(PAYLOADS[type], new Map())) defs[name] = schema;
  return {
    $schema: SCHEMA_DIALECT,
    $id: `${ID_BASE}event:${type}:${SPEC_VERSION}`,
    title: `plan-ledger ${type} event`,
    ...envelope({ const: type }, { $ref: `#/$defs/${payloadDef(type)}` }),
    $defs: defs,
  };
}

/** Any plan event: the envelope, then the payload chosen by `type`. */
export function planEventSchema(): Schema {
  const used = new Map<string, Schema>();
  for (const type of PLAN_EVENT_TYPES) defsUsed(PAYLOADS[type], used);
  const defs: Schema = Object.fromEntries(used);
  for (const type of PLAN_EVENT_TYPES) defs[payloadDef(type)] = payloadSchema(PAYLOADS[type]);
  return {
    $schema: SCHEMA_DIALECT,
    $id: `${ID_BASE}plan-event:${SPEC_VERSION}`,
    title: 'plan-ledger event',
    description: `Any plan event (spec version ${SPEC_VERSION}). POST /v1/events takes a JSON array of these.`,
    ...envelope(anyType, { type: 'object' }),
    allOf: PLAN_EVENT_TYPES.map((t) => ({
      if: { required: [TYPE_FIELD], properties: { [TYPE_FIELD]: { const: t } } },
      then: { properties: { [PAYLOAD_FIELD]: { $ref: `#/$defs/${payloadDef(t)}` } } },
    })),
    $defs: defs,
    'x-plan-ledger-also-checked': ALSO_CHECKED_FILLED,
  };
}

/** Every schema file under `schemas/`: its path relative to that folder, and its content. */
export function schemaFiles(): Record<string, Schema> {
  const files: Record<string, Schema> = {
    'envelope.schema.json': envelopeSchema(),
    'plan-event.schema.json': planEventSchema(),
  };
  for (const t of PLAN_EVENT_TYPES) files[`events/${t}.schema.json`] = eventSchema(t);
  return files;
}
