/**
 * The class-validator decorators of each kind of field (contract-kinds.ts): what the validator of
 * record, `parsePlanEvent`, checks. plan-event.dto.ts puts them on DTO classes built from the
 * declaration.
 *
 * Each scalar shape is ONE class-validator constraint that checks type and range together and names
 * the first thing wrong ("must be a string", else "must be 1 to 100 characters long"). So a field
 * reports exactly one violation, and the publisher's hot path pays for one constraint per field
 * instead of three (IsString + MinLength + MaxLength).
 *
 * Messages come from messages.ts, predicates without a subject; the parser prefixes the full path.
 * None interpolates `$value`: violations end up in logs and dead letters and must not echo payloads.
 */
import { Transform, Type } from 'class-transformer';
import { IS_DEFINED, IsArray, IsObject, ValidateBy, ValidateIf, ValidateNested } from 'class-validator';
import type { Field, FieldLimit, Kind } from './contract-kinds';
import { DECIMAL_AMOUNT_PATTERN, isExternalId, isUuid, utcTimestampProblem } from './field-formats';
import { WithinLimit } from './limits';
import { MESSAGES, say } from './messages';

export type DtoClass = new () => object;
/** What is wrong with a value, as a predicate ("must be a string"), or undefined when it is fine. */
type Problem = (value: unknown) => string | undefined;

/** Applies decorators in the order given, which is the order class-validator then checks them. */
function inOrder(...decorators: PropertyDecorator[]): PropertyDecorator {
  return (target, property) => {
    for (const decorate of decorators) decorate(target, property);
  };
}

function field(name: string, problem: Problem): PropertyDecorator {
  return ValidateBy({
    name,
    validator: {
      validate: (value) => problem(value) === undefined,
      // Only called on failure, so computing the problem twice costs nothing on the happy path.
      defaultMessage: (args) => problem(args?.value) ?? 'is invalid',
    },
  });
}

/**
 * Presence only: unlike `@IsDefined`, `null` passes here and then fails the shape check with a
 * precise "must be a string". Named `isDefined` on purpose: class-validator runs constraints of that
 * name before all others, so with `stopAtFirstError` a missing field reports only "is required".
 */
const Required = (): PropertyDecorator =>
  ValidateBy(
    { name: IS_DEFINED, validator: { validate: (value) => value !== undefined } },
    { message: MESSAGES.required },
  );

/** Absent is fine, `null` is not: the TypeScript shapes say `field?: T`, and JSON null is not T. */
const Optional = (): PropertyDecorator => ValidateIf((_object, value) => value !== undefined);

function Text(min: number, max: number): PropertyDecorator {
  const range = min > 0 ? say('textLength', { min, max }) : say('textMax', { max });
  return field('text', (v) =>
    typeof v !== 'string' ? MESSAGES.mustBeString : v.length < min || v.length > max ? range : undefined,
  );
}

/** The length bound is the call's `limit` (limits.ts), checked by `checkLimits`. */
function LongText(nonEmpty: boolean, limit: FieldLimit): PropertyDecorator {
  const problem: Problem = (v) =>
    typeof v !== 'string' ? MESSAGES.mustBeString : nonEmpty && v.length === 0 ? MESSAGES.notEmpty : undefined;
  return inOrder(field('longText', problem), WithinLimit(limit));
}

const ExternalId = (): PropertyDecorator =>
  field('externalId', (v) =>
    typeof v !== 'string' ? MESSAGES.mustBeString : isExternalId(v) ? undefined : MESSAGES.externalId,
  );

const Uuid = (): PropertyDecorator =>
  field('uuid', (v) => (typeof v !== 'string' ? MESSAGES.mustBeString : isUuid(v) ? undefined : MESSAGES.uuid));

const UtcTimestamp = (): PropertyDecorator =>
  field('utcTimestamp', (v) => (typeof v !== 'string' ? MESSAGES.mustBeString : utcTimestampProblem(v)));

const IntInRange = (min: number, max: number): PropertyDecorator =>
  field('intInRange', (v) =>
    typeof v !== 'number' || !Number.isInteger(v)
      ? MESSAGES.mustBeInteger
      : v < min
        ? say('atLeast', { min })
        : v > max
          ? say('atMost', { max })
          : undefined,
  );

const DecimalAmount = (): PropertyDecorator =>
  field('decimalAmount', (v) =>
    typeof v !== 'string' ? MESSAGES.mustBeString : DECIMAL_AMOUNT_PATTERN.test(v) ? undefined : MESSAGES.decimalAmount,
  );

const Bool = (): PropertyDecorator =>
  field('bool', (v) => (typeof v === 'boolean' ? undefined : MESSAGES.mustBeBoolean));

function OneOf(values: readonly unknown[]): PropertyDecorator {
  const message = say('oneOf', { values: values.join(', ') });
  return field('oneOf', (v) => (values.includes(v) ? undefined : message));
}

const Exactly = (value: number, why: string): PropertyDecorator =>
  field('exactly', (v) => (v === value ? undefined : say('exactly', { value, why })));

const PlainObject = (): PropertyDecorator => IsObject({ message: MESSAGES.mustBeObject });

/** A nested DTO; without `@Type` class-transformer would leave a plain object class-validator cannot see into. */
const NestedObject = (dto: () => DtoClass): PropertyDecorator => inOrder(PlainObject(), ValidateNested(), Type(dto));

/**
 * A list of nested DTOs, each item reported at its own path (`payload.steps[1] must be an object`).
 * class-validator descends into an item that is itself an array as if it were the list (so
 * `[[{...}]]` would pass); such items are replaced by null after transformation, which it reports.
 */
const NestedList = (dto: () => DtoClass): PropertyDecorator =>
  inOrder(
    IsArray({ message: MESSAGES.mustBeArray }),
    ValidateNested({ each: true, message: MESSAGES.mustBeObject }),
    Type(dto),
    Transform(({ value }: { value: unknown }) =>
      Array.isArray(value) ? value.map((item) => (Array.isArray(item) ? null : item)) : value,
    ),
  );

/** A list of distinct external ids; whether they name real steps is step-graph.check.ts's job. */
const ExternalIdList = (): PropertyDecorator =>
  field('externalIdList', (v) =>
    !Array.isArray(v)
      ? MESSAGES.mustBeArray
      : !v.every(isExternalId)
        ? MESSAGES.onlyExternalIds
        : new Set(v).size !== v.length
          ? MESSAGES.noDuplicates
          : undefined,
  );

/**
 * The decorators of one declared field, in the order a class would write them
 * (`@Required() @NestedList(...) @WithinLimit('maxSteps') steps`). `dtoOf` gives the DTO class of
 * a nested shape; `payloadDto` the one of the event's payload, or undefined for an unknown type.
 */
export function decoratorsFor(
  declared: Field,
  dtoOf: (kind: Extract<Kind, { kind: 'nested' | 'list' }>) => () => DtoClass,
  payloadDto: (() => DtoClass) | undefined,
): PropertyDecorator[] {
  return [declared.required ? Required() : Optional(), ...kindDecorators(declared.kind, dtoOf, payloadDto)];
}

function kindDecorators(
  kind: Kind,
  dtoOf: (kind: Extract<Kind, { kind: 'nested' | 'list' }>) => () => DtoClass,
  payloadDto: (() => DtoClass) | undefined,
): PropertyDecorator[] {
  switch (kind.kind) {
    case 'text':
      return [Text(kind.min, kind.max)];
    case 'longText':
      return [LongText(kind.nonEmpty, kind.limit)];
    case 'externalId':
      return [ExternalId()];
    case 'uuid':
      return [Uuid()];
    case 'utcTimestamp':
      return [UtcTimestamp()];
    case 'int':
      return [IntInRange(kind.min, kind.max)];
    case 'decimalAmount':
      return [DecimalAmount()];
    case 'bool':
      return [Bool()];
    case 'oneOf':
    case 'eventType':
      return [OneOf(kind.values)];
    case 'exactly':
      return [Exactly(kind.value, kind.why)];
    case 'payload':
      // an unknown type is the story; the payload then only has to be an object
      return payloadDto === undefined ? [PlainObject()] : [NestedObject(payloadDto)];
    case 'nested':
      return [NestedObject(dtoOf(kind))];
    case 'list':
      return [NestedList(dtoOf(kind)), WithinLimit(kind.limit)];
    case 'externalIds':
      return [ExternalIdList(), WithinLimit(kind.limit)];
    case 'jsonState':
      // the raw-input guard has already checked what is in it
      return [PlainObject()];
  }
}
