/**
 * The handful of field shapes the DTOs are built from.
 *
 * Each scalar shape is ONE class-validator constraint that checks type and range together and names
 * the first thing wrong ("must be a string", else "must be 1 to 100 characters long"). So a field
 * reports exactly one violation, and the publisher's hot path pays for one constraint per field
 * instead of three (IsString + MinLength + MaxLength measured ~25% slower on the same DTO).
 *
 * Messages are predicates without a subject; the parser prefixes the full path. None interpolates
 * `$value`: violations end up in logs and dead letters and must not echo payloads.
 */
import { Transform, Type } from 'class-transformer';
import { IS_DEFINED, IsArray, IsObject, ValidateBy, ValidateIf, ValidateNested } from 'class-validator';
import {
  DECIMAL_AMOUNT_PATTERN,
  DECIMAL_AMOUNT_RULE,
  isExternalId,
  isUuid,
  utcTimestampProblem,
} from './field-formats';
import { WithinLimit } from './limits';

type DtoClass = new () => object;
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
export const Required = (): PropertyDecorator =>
  ValidateBy({ name: IS_DEFINED, validator: { validate: (value) => value !== undefined } }, { message: 'is required' });

/** Absent is fine, `null` is not: the TypeScript shapes say `field?: T`, and JSON null is not T. */
export const Optional = (): PropertyDecorator => ValidateIf((_object, value) => value !== undefined);

/** A string of `min` to `max` UTF-16 code units (what SQL Server's NVARCHAR(n) counts). */
export function Text(min: number, max: number): PropertyDecorator {
  const range = min > 0 ? `must be ${min} to ${max} characters long` : `must be at most ${max} characters long`;
  return field('text', (v) =>
    typeof v !== 'string' ? 'must be a string' : v.length < min || v.length > max ? range : undefined,
  );
}

/** Free text (an NVARCHAR(MAX) / text column) bounded by `ContractLimits.maxLongText`. */
export function LongText(options: { nonEmpty?: boolean } = {}): PropertyDecorator {
  const problem: Problem = (v) =>
    typeof v !== 'string' ? 'must be a string' : options.nonEmpty && v.length === 0 ? 'must not be empty' : undefined;
  return inOrder(field('longText', problem), WithinLimit('maxLongText'));
}

export const ExternalId = (): PropertyDecorator =>
  field('externalId', (v) =>
    typeof v !== 'string'
      ? 'must be a string'
      : isExternalId(v)
        ? undefined
        : "must be an external id (1-64 letters, digits, '_', '.', ':' or '-', starting with a letter or digit)",
  );

export const Uuid = (): PropertyDecorator =>
  field('uuid', (v) => (typeof v !== 'string' ? 'must be a string' : isUuid(v) ? undefined : 'must be a UUID'));

/** A UTC ISO-8601 timestamp within the range every database stores (field-formats.ts). */
export const UtcTimestamp = (): PropertyDecorator =>
  field('utcTimestamp', (v) => (typeof v !== 'string' ? 'must be a string' : utcTimestampProblem(v)));

export const IntInRange = (min: number, max: number): PropertyDecorator =>
  field('intInRange', (v) =>
    typeof v !== 'number' || !Number.isInteger(v)
      ? 'must be an integer'
      : v < min
        ? `must be at least ${min}`
        : v > max
          ? `must be at most ${max}`
          : undefined,
  );

/** An exact amount (a provider-reported cost) as a decimal string: JSON numbers are binary floats. */
export const DecimalAmount = (): PropertyDecorator =>
  field('decimalAmount', (v) =>
    typeof v !== 'string' ? 'must be a string' : DECIMAL_AMOUNT_PATTERN.test(v) ? undefined : DECIMAL_AMOUNT_RULE,
  );

export const Bool = (): PropertyDecorator =>
  field('bool', (v) => (typeof v === 'boolean' ? undefined : 'must be a boolean'));

export function OneOf(values: readonly unknown[]): PropertyDecorator {
  const message = `must be one of: ${values.join(', ')}`;
  return field('oneOf', (v) => (values.includes(v) ? undefined : message));
}

/** A single allowed value; `why` completes the sentence for the sender. */
export const Exactly = (value: unknown, why: string): PropertyDecorator =>
  field('exactly', (v) => (v === value ? undefined : `must be ${String(value)}${why}`));

export const PlainObject = (): PropertyDecorator => IsObject({ message: 'must be an object' });

/** A nested DTO; without `@Type` class-transformer would leave a plain object class-validator cannot see into. */
export const NestedObject = (dto: () => DtoClass): PropertyDecorator =>
  inOrder(PlainObject(), ValidateNested(), Type(dto));

/**
 * A list of nested DTOs, each item reported at its own path (`payload.steps[1] must be an object`).
 * class-validator descends into an item that is itself an array as if it were the list (so
 * `[[{...}]]` would pass); such items are replaced by null after transformation, which it reports.
 */
export const NestedList = (dto: () => DtoClass): PropertyDecorator =>
  inOrder(
    IsArray({ message: 'must be an array' }),
    ValidateNested({ each: true, message: 'must be an object' }),
    Type(dto),
    Transform(({ value }: { value: unknown }) =>
      Array.isArray(value) ? value.map((item) => (Array.isArray(item) ? null : item)) : value,
    ),
  );

/** A list of distinct external ids (`dependsOn`); whether they name real steps is step-graph.check.ts's job. */
export const ExternalIdList = (): PropertyDecorator =>
  field('externalIdList', (v) =>
    !Array.isArray(v)
      ? 'must be an array'
      : !v.every(isExternalId)
        ? 'must contain only external ids'
        : new Set(v).size !== v.length
          ? 'must not contain duplicates'
          : undefined,
  );
