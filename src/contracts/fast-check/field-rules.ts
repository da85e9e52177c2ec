/**
 * The kinds of field of the contract (contract-kinds.ts) as plain synchronous checks, with the
 * semantics of their class-validator decorators (field.decorators.ts) and the same messages
 * (messages.ts), at about a hundredth of class-validator's cost. Paths are built
 * only when a violation is found: the accepted event, the common case, builds none.
 *
 * Soundness matters more than wording: `checkStoredEvent` accepts on these rules alone, so a rule
 * may be stricter than its decorator (the authority then decides) but never more lenient.
 *
 * No string these rules accept holds U+0000 or a lone surrogate, which the contract's raw-input
 * guard refuses: the formats and enums exclude them, and `text` and `longText` ask storable-text.ts,
 * as the guard does.
 */
import { DECIMAL_AMOUNT_PATTERN, isExternalId, isUuid, utcTimestampProblem } from '../field-formats';
import type { Violation } from '../invalid-event.error';
import type { FieldLimit } from '../contract-kinds';
import type { ContractLimits } from '../limits';
import { MESSAGES, say } from '../messages';
import { textProblem } from '../storable-text';
import { childPath, violationAt } from '../violation-path';

export interface CheckContext {
  limits: Readonly<ContractLimits>;
  out: Violation[];
}

/** Checks one present (not undefined) value found at `parent` + `key`. */
export type Rule = (value: unknown, parent: string, key: string | number, ctx: CheckContext) => void;

export interface FieldSpec {
  name: string;
  required: boolean;
  rule: Rule;
}

export interface ObjectSpec {
  fields: readonly FieldSpec[];
  names: ReadonlySet<string>;
}

export function objectSpec(fields: Record<string, [required: boolean, rule: Rule]>): ObjectSpec {
  const list = Object.entries(fields).map(([name, [required, rule]]) => ({ name, required, rule }));
  return { fields: list, names: new Set(list.map((f) => f.name)) };
}

export function report(ctx: CheckContext, parent: string, key: string | number, predicate: string): void {
  ctx.out.push(violationAt(childPath(parent, key), predicate));
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * Checks the fields of a plain object against its spec. `@Required` semantics: only undefined is
 * missing; null is present and fails the field's shape ("must be a string"). An undefined field is
 * absent (JSON drops it), so an unknown key holding undefined is not reported either.
 */
export function checkObject(obj: Record<string, unknown>, spec: ObjectSpec, path: string, ctx: CheckContext): void {
  for (const field of spec.fields) {
    const value = obj[field.name];
    if (value === undefined) {
      if (field.required) report(ctx, path, field.name, MESSAGES.required);
      continue;
    }
    field.rule(value, path, field.name, ctx);
  }
  for (const key in obj) {
    if (!spec.names.has(key) && obj[key] !== undefined) report(ctx, path, key, MESSAGES.unknownField);
  }
}

const MUST_BE_STRING = MESSAGES.mustBeString;

/** Text(min, max): a string of min to max UTF-16 code units, as the decorator counts (NVARCHAR(n)). */
export function text(min: number, max: number): Rule {
  const predicate = min > 0 ? say('textLength', { min, max }) : say('textMax', { max });
  return (value, parent, key, ctx) => {
    if (typeof value !== 'string') return report(ctx, parent, key, MUST_BE_STRING);
    const problem = textProblem(value);
    if (problem !== undefined) return report(ctx, parent, key, problem);
    if (value.length < min || value.length > max) report(ctx, parent, key, predicate);
  };
}

/** `longText`: a string bounded by the call's `limit` (UTF-16 units, as checkLimits counts). */
export function longText(nonEmpty: boolean, limit: FieldLimit): Rule {
  return (value, parent, key, ctx) => {
    if (typeof value !== 'string') return report(ctx, parent, key, MUST_BE_STRING);
    const problem = textProblem(value);
    if (problem !== undefined) return report(ctx, parent, key, problem);
    if (nonEmpty && value.length === 0) report(ctx, parent, key, MESSAGES.notEmpty);
    const max = ctx.limits[limit];
    if (value.length > max) report(ctx, parent, key, say('textMax', { max }));
  };
}

export const externalId: Rule = (value, parent, key, ctx) => {
  if (typeof value !== 'string') return report(ctx, parent, key, MUST_BE_STRING);
  if (!isExternalId(value)) {
    report(ctx, parent, key, MESSAGES.externalId);
  }
};

export const uuid: Rule = (value, parent, key, ctx) => {
  if (typeof value !== 'string') return report(ctx, parent, key, MUST_BE_STRING);
  if (!isUuid(value)) report(ctx, parent, key, MESSAGES.uuid);
};

export const utcTimestamp: Rule = (value, parent, key, ctx) => {
  if (typeof value !== 'string') return report(ctx, parent, key, MUST_BE_STRING);
  const problem = utcTimestampProblem(value);
  if (problem !== undefined) report(ctx, parent, key, problem);
};

export function intInRange(min: number, max: number): Rule {
  return (value, parent, key, ctx) => {
    if (typeof value !== 'number' || !Number.isInteger(value)) report(ctx, parent, key, MESSAGES.mustBeInteger);
    else if (value < min) report(ctx, parent, key, say('atLeast', { min }));
    else if (value > max) report(ctx, parent, key, say('atMost', { max }));
  };
}

/** `decimalAmount`: a decimal string (a provider-reported cost). */
export const decimalAmount: Rule = (value, parent, key, ctx) => {
  if (typeof value !== 'string') return report(ctx, parent, key, MUST_BE_STRING);
  if (!DECIMAL_AMOUNT_PATTERN.test(value)) report(ctx, parent, key, MESSAGES.decimalAmount);
};

export const bool: Rule = (value, parent, key, ctx) => {
  if (typeof value !== 'boolean') report(ctx, parent, key, MESSAGES.mustBeBoolean);
};

export function oneOf(values: readonly unknown[]): Rule {
  const predicate = say('oneOf', { values: values.join(', ') });
  const allowed = new Set(values);
  return (value, parent, key, ctx) => {
    if (!allowed.has(value)) report(ctx, parent, key, predicate);
  };
}

export function exactly(expected: number, why: string): Rule {
  const predicate = say('exactly', { value: expected, why });
  return (value, parent, key, ctx) => {
    if (value !== expected) report(ctx, parent, key, predicate);
  };
}

/**
 * A list of objects within the call's `limit`: an oversized list is reported without checking its
 * items; an item that is not an object is reported at its own path, as class-validator does.
 */
export function nestedList(spec: () => ObjectSpec, limit: FieldLimit): Rule {
  return (value, parent, key, ctx) => {
    const max = ctx.limits[limit];
    if (!Array.isArray(value)) return report(ctx, parent, key, MESSAGES.mustBeArray);
    if (value.length > max) return report(ctx, parent, key, say('listMax', { max }));
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      if (!isPlainObject(item)) {
        report(ctx, childPath(parent, key), i, MESSAGES.mustBeObject);
        continue;
      }
      // Item paths are built only for an item with violations (checked again with its path).
      const before = ctx.out.length;
      checkObject(item, spec(), '', ctx);
      if (ctx.out.length > before) {
        ctx.out.length = before;
        checkObject(item, spec(), childPath(childPath(parent, key), i), ctx);
      }
    }
  };
}

/** An object, checked field by field at its own path. */
export function nestedObject(spec: () => ObjectSpec): Rule {
  return (value, parent, key, ctx) => {
    if (!isPlainObject(value)) return report(ctx, parent, key, MESSAGES.mustBeObject);
    checkObject(value, spec(), childPath(parent, key), ctx);
  };
}

/** A list of distinct external ids within the call's `limit`. */
export function externalIdList(limit: FieldLimit): Rule {
  return (value, parent, key, ctx) => {
    const max = ctx.limits[limit];
    if (!Array.isArray(value)) return report(ctx, parent, key, MESSAGES.mustBeArray);
    if (value.length > max) return report(ctx, parent, key, say('listMax', { max }));
    for (let i = 0; i < value.length; i++) {
      if (!isExternalId(value[i])) return report(ctx, parent, key, MESSAGES.onlyExternalIds);
    }
    if (hasDuplicates(value)) report(ctx, parent, key, MESSAGES.noDuplicates);
  };
}

/** A dependsOn list is short: pairwise comparison beats allocating a Set up to a few dozen items. */
function hasDuplicates(list: readonly unknown[]): boolean {
  if (list.length > 32) return new Set(list).size !== list.length;
  for (let i = 1; i < list.length; i++) {
    for (let j = 0; j < i; j++) if (list[i] === list[j]) return true;
  }
  return false;
}
