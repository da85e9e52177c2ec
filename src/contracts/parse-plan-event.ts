/**
 * The contract's authority: whatever it returns is the verdict on an event. The publisher's
 * `validation: 'contract'` mode calls it; the worker's `checkStoredEvent` returns exactly its result,
 * deciding valid events on cheaper rules and calling it for everything else. Synchronous and total:
 * it returns a result and never throws.
 *
 * Order of work, cheapest and most protective first:
 * 1. guard the raw input (size, JSON-only, prototype keys, NUL characters and lone surrogates,
 *    nesting), see raw-input.guard.ts; what makes the input unsafe or unreadable stops here;
 * 2. transform into the DTO chosen by `type` and check configurable limits; an oversized list stops
 *    here, before item-by-item validation;
 * 3. class-validator field checks, then cross-field rules (step graph, decision/steps).
 * Every rule the event breaks is reported at once (the first of each field: one violation per
 * path), the guard's NUL or size with the rest, so a sender fixes an event in one round.
 *
 * Cost: class-validator dominates (then class-transformer; the guard is small). One constraint per
 * field (field.decorators.ts) and no JSON.stringify keep it low; figures in BENCHMARKS.md,
 * "Contract: parsePlanEvent per call".
 */
import { ClassTransformOptions, plainToInstance } from 'class-transformer';
import { Validator, ValidatorOptions } from 'class-validator';
import { pushAll } from '../shared/arrays';
import { fieldOfKind } from './contract-kinds';
import { ENVELOPE } from './declaration';
import { isPlanEventType } from './event-types';
import { flattenValidationErrors } from './flatten-validation-errors';
import { InvalidEventError, Violation } from './invalid-event.error';
import { ContractLimits, checkLimits, resolveLimits } from './limits';
import { checkPayloadRules } from './payload-rules.check';
import { eventDtoFor } from './plan-event.dto';
import { guardRawInput } from './raw-input.guard';
import type { PlanEvent } from './types';
import { orderViolations, violationAt } from './violation-path';

export type ParseResult = { ok: true; event: PlanEvent } | { ok: false; error: InvalidEventError };

export interface ParsePlanEventOptions {
  /** Overrides of `DEFAULT_LIMITS`, field by field. */
  limits?: Partial<ContractLimits>;
}

// Built once: the publisher parses on its hot path.
const TRANSFORM_OPTIONS: ClassTransformOptions = Object.freeze({ enableImplicitConversion: false });
const VALIDATOR_OPTIONS: ValidatorOptions = Object.freeze({
  whitelist: true,
  forbidNonWhitelisted: true,
  forbidUnknownValues: true,
  // One violation per field (see field.decorators.ts): "must be a string", not also a length complaint.
  stopAtFirstError: true,
  // Keep values out of the error tree, hence out of logs and dead letters.
  validationError: { target: false, value: false },
});
const validator = new Validator();

const TYPE = fieldOfKind(ENVELOPE, 'eventType');
const PAYLOAD = fieldOfKind(ENVELOPE, 'payload');
/** Normalised when accepted: the event's id in lower case, its time as `toISOString()`. */
const EVENT_ID = fieldOfKind(ENVELOPE, 'uuid');
const OCCURRED_AT = fieldOfKind(ENVELOPE, 'utcTimestamp');

/**
 * Validates an event given as an object or as JSON text. On success the event is a fresh plain
 * object (never the caller's), with `eventId` in lower case and `occurredAt` as `toISOString()`.
 * Cost: see PERFORMANCE at the top of this file.
 */
export function parsePlanEvent(input: unknown, options?: ParsePlanEventOptions): ParseResult {
  try {
    return parse(input, resolveLimits(options?.limits));
  } catch (err) {
    // Not expected (the guard admits only plain JSON); if it happens the event still gets a
    // permanent verdict instead of crashing the publisher. Only the error's class is reported:
    // its message could quote the payload.
    return invalid([violationAt('', `could not be validated (${err instanceof Error ? err.name : 'error'})`)]);
  }
}

function parse(input: unknown, limits: ContractLimits): ParseResult {
  const guarded = guardRawInput(input, limits);
  // The guard stopped the work (unsafe or unreadable input): its report is the whole report.
  if (!guarded.ok && guarded.root === undefined) return invalid(guarded.violations);
  const root = guarded.root!;
  // A NUL, a lone surrogate or the size: named first, and the field rules still run.
  const violations: Violation[] = guarded.ok ? [] : guarded.violations;
  const type = root[TYPE];
  const dto = plainToInstance(eventDtoFor(type), root, TRANSFORM_OPTIONS);
  const limitViolations: Violation[] = [];
  if (!checkLimits(dto, limits, '', limitViolations)) return invalid(pushAll(violations, limitViolations));
  pushAll(violations, flattenValidationErrors(validator.validateSync(dto, VALIDATOR_OPTIONS)));
  pushAll(violations, limitViolations);
  if (isPlanEventType(type)) checkPayloadRules(type, root[PAYLOAD], violations);
  if (violations.length > 0) return invalid(violations);
  return { ok: true, event: normaliseAccepted(root) };
}

/**
 * The accepted event as `parsePlanEvent` returns it: `eventId` lower-cased, `occurredAt` as
 * `toISOString()`. In place: `root` must be the guard's tree, which nothing of the caller's shares.
 */
export function normaliseAccepted(root: Record<string, unknown>): PlanEvent {
  root[EVENT_ID] = (root[EVENT_ID] as string).toLowerCase();
  root[OCCURRED_AT] = toIsoString(root[OCCURRED_AT] as string);
  return root as unknown as PlanEvent;
}

/**
 * `new Date(s).toISOString()` of a timestamp that passed `isUtcTimestamp`. One already in that form
 * (`YYYY-MM-DDTHH:MM:SS.mmmZ`, what publishers send) is returned as is: the pattern and the day
 * check leave no other 24-character shape, and a valid date of that shape round-trips to itself.
 * Saves a Date parse, ~1 µs, about a quarter of what `checkStoredEvent` costs.
 */
export function toIsoString(s: string): string {
  return s.length === 24 && s.charCodeAt(19) === 0x2e && s.charCodeAt(23) === 0x5a ? s : new Date(s).toISOString();
}

function invalid(violations: Violation[]): ParseResult {
  return { ok: false, error: new InvalidEventError(orderViolations(violations)) };
}
