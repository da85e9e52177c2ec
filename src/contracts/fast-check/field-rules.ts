/**
 * The field shapes of the contract (field.decorators.ts) as plain synchronous checks, with the
 * contract's messages and semantics, at about a hundredth of class-validator's cost. Paths are built
 * only when a violation is found: the accepted event, the common case, builds none.
 *
 * Soundness matters more than wording: `checkStoredEvent` accepts on these rules alone, so a rule
 * may be stricter than its decorator (the authority then decides) but never more lenient.
 *
 * No string these rules accept holds U+0000 or a lone surrogate, which the contract's raw-input
 * guard refuses: the formats and enums exclude them, and `text` and `longText` ask storable-text.ts,
 * as the guard does.
 */
import {
  DECIMAL_AMOUNT_PATTERN,
  DECIMAL_AMOUNT_RULE,
  isExternalId,
  isUuid,
  utcTimestampProblem,
} from '../field-formats';
import type { Violation } from '../invalid-event.error';
import type { ContractLimits } from '../limits';
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
      if (field.required) report(ctx, path, field.name, 'is required');
      continue;
    }
    field.rule(value, path, field.name, ctx);
  }
  for (const key in obj) {
    if (!spec.names.has(key) && obj[key] !== undefined) report(ctx, path, key, 'is not an allowed field');
  }
}

const MUST_BE_STRING = 'must be a string';

/** Text(min, max): a string of min to max UTF-16 code units, as the decorator counts (NVARCHAR(n)). */
export function text(min: number, max: number): Rule {
  const predicate = min > 0 ? `must be ${min} to ${max} characters long` : `must be at most ${max} characters long`;
  return (value, parent, key, ctx) => {
    if (typeof value !== 'string') return report(ctx, parent, key, MUST_BE_STRING);
    const problem = textProblem(value);
    if (problem !== undefined) return report(ctx, parent, key, problem);
    if (value.length < min || value.length > max) report(ctx, parent, key, predicate);
  };
}

/** `LongText({ nonEmpty })`: a string bounded by `limits.maxLongText` (UTF-16 units, as checkLimits counts). */
export function longText(options: { nonEmpty?: boolean } = {}): Rule {
  return (value, parent, key, ctx) => {
    if (typeof value !== 'string') return report(ctx, parent, key, MUST_BE_STRING);
    const problem = textProblem(value);
    if (problem !== undefined) return report(ctx, parent, key, problem);
    if (options.nonEmpty && value.length === 0) report(ctx, parent, key, 'must not be empty');
    const max = ctx.limits.maxLongText;
    if (value.length > max) report(ctx, parent, key, `must be at most ${max} characters long`);
  };
}

export const externalId: Rule = (value, parent, key, ctx) => {
  if (typeof value !== 'string') return report(ctx, parent, key, MUST_BE_STRING);
  if (!isExternalId(value)) {
    report(
      ctx,
      parent,
      key,
      "must be an external id (1-64 letters, digits, '_', '.', ':' or '-', starting with a letter or digit)",
    );
  }
};

export const uuid: Rule = (value, parent, key, ctx) => {
  if (typeof value !== 'string') return report(ctx, parent, key, MUST_BE_STRING);
  if (!isUuid(value)) report(ctx, parent, key, 'must be a UUID');
};

export const utcTimestamp: Rule = (value, parent, key, ctx) => {
  if (typeof value !== 'string') return report(ctx, parent, key, MUST_BE_STRING);
  const problem = utcTimestampProblem(value);
  if (problem !== undefined) report(ctx, parent, key, problem);
};

export function intInRange(min: number, max: number): Rule {
  return (value, parent, key, ctx) => {
    if (typeof value !== 'number' || !Number.isInteger(value)) report(ctx, parent, key, 'must be an integer');
    else if (value < min) report(ctx, parent, key, `must be at least ${min}`);
    else if (value > max) report(ctx, parent, key, `must be at most ${max}`);
  };
}

/** `DecimalAmount()`: a decimal string (a provider-reported cost). */
export const decimalAmount: Rule = (value, parent, key, ctx) => {
  if (typeof value !== 'string') return report(ctx, parent, key, MUST_BE_STRING);
  if (!DECIMAL_AMOUNT_PATTERN.test(value)) report(ctx, parent, key, DECIMAL_AMOUNT_RULE);
};

export const bool: Rule = (value, parent, key, ctx) => {
  if (typeof value !== 'boolean') report(ctx, parent, key, 'must be a boolean');
};

export function oneOf(values: readonly unknown[]): Rule {
  const predicate = `must be one of: ${values.join(', ')}`;
  const allowed = new Set(values);
  return (value, parent, key, ctx) => {
    if (!allowed.has(value)) report(ctx, parent, key, predicate);
  };
}

export function exactly(expected: unknown, why: string): Rule {
  return (value, parent, key, ctx) => {
    if (value !== expected) report(ctx, parent, key, `must be ${String(expected)}${why}`);
  };
}

/**
 * The contract's checkLimits applies a list's limit to a string in its place as a length, so a long
 * string where a list belongs gets a second violation; mirrored so both report the same.
 */
function notAList(value: unknown, max: number, parent: string, key: string | number, ctx: CheckContext): void {
  report(ctx, parent, key, 'must be an array');
  if (typeof value === 'string' && value.length > max)
    report(ctx, parent, key, `must be at most ${max} characters long`);
}

/**
 * NestedList + WithinLimit('maxSteps'): an oversized list is reported without checking its items;
 * an item that is not an object is reported at its own path, as class-validator does.
 */
export function nestedList(spec: () => ObjectSpec): Rule {
  return (value, parent, key, ctx) => {
    const max = ctx.limits.maxSteps;
    if (!Array.isArray(value)) return notAList(value, max, parent, key, ctx);
    if (value.length > max) return report(ctx, parent, key, `must contain at most ${max} items`);
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      if (!isPlainObject(item)) {
        report(ctx, childPath(parent, key), i, 'must be an object');
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

/** NestedObject: an object, checked field by field at its own path. */
export function nestedObject(spec: () => ObjectSpec): Rule {
  return (value, parent, key, ctx) => {
    if (!isPlainObject(value)) return report(ctx, parent, key, 'must be an object');
    checkObject(value, spec(), childPath(parent, key), ctx);
  };
}

/** ExternalIdList + WithinLimit('maxDependsOn'). */
export const externalIdList: Rule = (value, parent, key, ctx) => {
  const max = ctx.limits.maxDependsOn;
  if (!Array.isArray(value)) return notAList(value, max, parent, key, ctx);
  if (value.length > max) return report(ctx, parent, key, `must contain at most ${max} items`);
  for (let i = 0; i < value.length; i++) {
    if (!isExternalId(value[i])) return report(ctx, parent, key, 'must contain only external ids');
  }
  if (hasDuplicates(value)) report(ctx, parent, key, 'must not contain duplicates');
};

/** A dependsOn list is short: pairwise comparison beats allocating a Set up to a few dozen items. */
function hasDuplicates(list: readonly unknown[]): boolean {
  if (list.length > 32) return new Set(list).size !== list.length;
  for (let i = 1; i < list.length; i++) {
    for (let j = 0; j < i; j++) if (list[i] === list[j]) return true;
  }
  return false;
}
