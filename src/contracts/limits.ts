/**
 * Size limits of the contract. They bound what one event can cost a worker and the database, and
 * each call may tighten or loosen them (`parsePlanEvent(x, { limits })`).
 *
 * class-validator gives a constraint no per-call context, so limits cannot live in its decorators
 * without module-level mutable state. Instead `@WithinLimit` only records which fields are bounded
 * by which limit, and `checkLimits` compares them against the limits of the call in progress.
 */
import type { FieldLimit } from './contract-kinds';
import type { Violation } from './invalid-event.error';
import { say } from './messages';
import { childPath, violationAt } from './violation-path';

export interface ContractLimits {
  /** Largest event, in UTF-8 bytes of its JSON text. @defaultValue `1_048_576` (1 MiB) */
  maxEventBytes: number;
  /**
   * Largest EVENTS_QUEUE job, in UTF-8 bytes of its data (`{"v":1,"events":[...]}`): the publisher
   * splits batches below it and the worker dead-letters a larger job whole without parsing it. It
   * bounds what one job costs a worker's memory (a 50 MB job peaked a worker near 456 MB) and Redis.
   * Must leave room for one event of `maxEventBytes`. @defaultValue `16_777_216` (16 MiB)
   */
  maxJobBytes: number;
  /** Most steps in one step list (`plan.created`, `plan.decision` edit). @defaultValue `500` */
  maxSteps: number;
  /**
   * Longest free text (query, task, result, outputContent, error, summary, failureReason, feedback,
   * explanation), in UTF-16 code units like SQL Server's NVARCHAR. @defaultValue `200_000`
   */
  maxLongText: number;
  /** Deepest nesting of checkpoint state; `{}` has depth 1, `{"a":{}}` depth 2. @defaultValue `32` */
  maxStateDepth: number;
  /** Most `dependsOn` entries of one step. @defaultValue `100` */
  maxDependsOn: number;
}

export const DEFAULT_LIMITS: Readonly<ContractLimits> = Object.freeze({
  maxEventBytes: 1_048_576,
  maxJobBytes: 16_777_216,
  maxSteps: 500,
  maxLongText: 200_000,
  maxStateDepth: 32,
  maxDependsOn: 100,
});

/**
 * Defaults overlaid with the caller's overrides; `undefined` keeps the default. Nonsense values are
 * not corrected: a negative limit rejects every event, which fails closed rather than open.
 */
export function resolveLimits(overrides?: Partial<ContractLimits>): Readonly<ContractLimits> {
  if (overrides === undefined) return DEFAULT_LIMITS;
  const limits = { ...DEFAULT_LIMITS };
  for (const key of Object.keys(DEFAULT_LIMITS) as (keyof ContractLimits)[]) {
    const value = overrides[key];
    if (value !== undefined) limits[key] = value;
  }
  return limits;
}

/**
 * UTF-8 bytes of `text` when they exceed `max`, else undefined. A UTF-16 unit is at most 3 bytes,
 * so only a text longer than max/3 units needs the (costly) exact count.
 */
export function utf8BytesOver(text: string, max: number): number | undefined {
  if (text.length * 3 <= max) return undefined;
  const bytes = Buffer.byteLength(text, 'utf8');
  return bytes > max ? bytes : undefined;
}

interface LimitedField {
  property: string;
  limit: FieldLimit;
}

/** Each DTO class's bounded fields. Filled once when the DTO classes load, read-only afterwards. */
const LIMITED_FIELDS = new Map<object, LimitedField[]>();

/** Marks a string (length in characters) or array (number of items) field as bounded by `limit`. */
export function WithinLimit(limit: FieldLimit): PropertyDecorator {
  return (target, property) => {
    const fields = LIMITED_FIELDS.get(target.constructor) ?? [];
    fields.push({ property: String(property), limit });
    LIMITED_FIELDS.set(target.constructor, fields);
  };
}

/**
 * Checks the `@WithinLimit` fields of a transformed DTO and of the DTOs nested in it, appending a
 * violation per field over its limit. Returns false when a list is too long: the caller then skips
 * item-by-item validation, the expensive path an oversized list would otherwise buy.
 */
export function checkLimits(dto: object, limits: ContractLimits, path: string, out: Violation[]): boolean {
  const record = dto as Record<string, unknown>;
  const oversized = new Set<string>();
  for (const { property, limit } of LIMITED_FIELDS.get(dto.constructor) ?? []) {
    const value = record[property];
    const max = limits[limit];
    if (typeof value === 'string' && value.length > max) {
      out.push(violationAt(childPath(path, property), say('textMax', { max })));
    } else if (Array.isArray(value) && value.length > max) {
      out.push(violationAt(childPath(path, property), say('listMax', { max })));
      oversized.add(property);
    }
  }
  let listsWithinLimits = oversized.size === 0;
  for (const key of Object.keys(record)) {
    const value = record[key];
    if (Array.isArray(value) && !oversized.has(key)) {
      value.forEach((item, i) => {
        if (isLimitedDto(item))
          listsWithinLimits = checkLimits(item, limits, childPath(childPath(path, key), i), out) && listsWithinLimits;
      });
    } else if (isLimitedDto(value)) {
      listsWithinLimits = checkLimits(value, limits, childPath(path, key), out) && listsWithinLimits;
    }
  }
  return listsWithinLimits;
}

function isLimitedDto(value: unknown): value is object {
  return typeof value === 'object' && value !== null && LIMITED_FIELDS.has(value.constructor);
}
