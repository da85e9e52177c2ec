/**
 * A synchronous check of an event against the contract's declaration (declaration.ts), rule for
 * rule, in about a microsecond where `parsePlanEvent` takes ~25 µs. Two users:
 * - the publisher, on its caller's input (`checkEventInput`: stamps optional, it stamps what is
 *   missing), whose 10 µs budget per `publish()` class-validator alone would blow;
 * - `checkStoredEvent` (check-stored-event.ts), the worker's check, on guarded JSON with every
 *   stamp required (`checkEventRules`); it accepts on these rules and hands anything they refuse to
 *   `parsePlanEvent`.
 * `parsePlanEvent` stays the authority: test/contracts/contract-corpus.test.ts feeds both the same
 * valid and broken events and requires the same messages.
 */
import { pushAll } from '../../shared/arrays';
import { allFields, fieldOfKind, Kind, Shape } from '../contract-kinds';
import { ENVELOPE, PAYLOADS } from '../declaration';
import { PLAN_EVENT_TYPES } from '../event-types';
import { MESSAGES } from '../messages';
import { checkPayloadRules } from '../payload-rules.check';
import { guardRawInput } from '../raw-input.guard';
import {
  CheckContext,
  FieldSpec,
  ObjectSpec,
  Rule,
  bool,
  checkObject,
  decimalAmount,
  exactly,
  externalId,
  externalIdList,
  intInRange,
  isPlainObject,
  longText,
  nestedList,
  nestedObject,
  oneOf,
  report,
  text,
  utcTimestamp,
  uuid,
} from './field-rules';
import { orderViolations } from '../violation-path';
import { jsonState } from './json-state.rule';

const SPECS = new Map<Shape, ObjectSpec>();

/** The fast rules of a declared shape (its fields, then its groups'), built once. */
function specOf(shape: Shape): ObjectSpec {
  let spec = SPECS.get(shape);
  if (spec === undefined) {
    const fields: FieldSpec[] = allFields(shape).map(([name, declared]) => ({
      name,
      required: declared.required,
      rule: ruleFor(declared.kind),
    }));
    spec = { fields, names: new Set(fields.map((f) => f.name)) };
    SPECS.set(shape, spec);
  }
  return spec;
}

/** The fast rule of a kind; what field.decorators.ts checks with class-validator. */
function ruleFor(kind: Kind): Rule {
  switch (kind.kind) {
    case 'text':
      return text(kind.min, kind.max);
    case 'longText':
      return longText(kind.nonEmpty, kind.limit);
    case 'externalId':
      return externalId;
    case 'uuid':
      return uuid;
    case 'utcTimestamp':
      return utcTimestamp;
    case 'int':
      return intInRange(kind.min, kind.max);
    case 'decimalAmount':
      return decimalAmount;
    case 'bool':
      return bool;
    case 'oneOf':
    case 'eventType':
      return oneOf(kind.values);
    case 'exactly':
      return exactly(kind.value, kind.why);
    case 'nested': {
      const shape = kind.shape;
      return nestedObject(() => specOf(shape));
    }
    case 'list': {
      const shape = kind.shape;
      return nestedList(() => specOf(shape), kind.limit);
    }
    case 'externalIds':
      return externalIdList(kind.limit);
    case 'jsonState':
      return jsonState;
    case 'payload':
      // checked by checkEventRules, by the event's type
      return () => undefined;
  }
}

/** Each type's payload rules, and whether it declares rules across fields (two types do). */
const PAYLOAD_SPECS: ReadonlyMap<unknown, { spec: ObjectSpec; crossField: boolean }> = new Map(
  PLAN_EVENT_TYPES.map((t) => [t, { spec: specOf(PAYLOADS[t]), crossField: PAYLOADS[t].rules !== undefined }]),
);

interface EnvelopeField {
  name: string;
  rule: Rule;
  stamp: boolean;
}

/** The envelope's fields but its payload, which is checked by type. */
const ENVELOPE_RULES: readonly EnvelopeField[] = Object.entries(ENVELOPE.fields)
  .filter(([, declared]) => declared.kind.kind !== 'payload')
  .map(([name, declared]) => ({ name, rule: ruleFor(declared.kind), stamp: declared.stamp === true }));
const TYPE_FIELD = fieldOfKind(ENVELOPE, 'eventType');
const PAYLOAD_FIELD = fieldOfKind(ENVELOPE, 'payload');
export const ENVELOPE_FIELDS: ReadonlySet<string> = new Set(Object.keys(ENVELOPE.fields));

/**
 * Whether the stamps (declared `stamp` in the envelope) must be present. `optional` is the
 * publisher's view: a stamp its caller left out is the publisher's own, valid by construction.
 */
export type StampRule = 'optional' | 'required';

/**
 * The publisher's check of its caller's input, which no guard has seen; stamps are optional.
 * Violations are appended to `ctx.out` as the contract reports them (`orderViolations`: the first
 * of each field). A valid event, the common case, costs the rules alone: they refuse whatever the
 * raw-input guard refuses. A refused one costs a guard pass more, on `stamped` (the event as it
 * would be sent): when the guard stops the work (a prototype key, a value JSON cannot hold, nesting
 * past its bound), its violations replace the rules', as `parsePlanEvent` reports only those;
 * otherwise what it found (a NUL character, a lone surrogate, the size) comes first, then what the
 * rules found, so a NUL character in an unknown field is reported as such.
 */
export function checkEventInput(
  input: Record<string, unknown>,
  ctx: CheckContext,
  stamped: Record<string, unknown> = input,
): void {
  const start = ctx.out.length;
  checkEventRules(input, ctx, 'optional');
  if (ctx.out.length === start) return;
  const rules = ctx.out.splice(start);
  const guarded = guardRawInput(stamped, ctx.limits);
  const found = guarded.ok
    ? rules
    : guarded.root === undefined
      ? guarded.violations
      : [...guarded.violations, ...rules];
  pushAll(ctx.out, orderViolations(found));
}

/**
 * Checks an event's fields; violations are appended to `ctx.out`. Present stamps are always
 * checked. The wording matches the contract's only on input the raw-input guard accepts, as
 * `checkStoredEvent`'s is.
 */
export function checkEventRules(input: Record<string, unknown>, ctx: CheckContext, stamps: StampRule): void {
  for (const key in input) {
    if (!ENVELOPE_FIELDS.has(key) && input[key] !== undefined) report(ctx, '', key, MESSAGES.unknownField);
  }
  const stampsRequired = stamps === 'required';
  for (let i = 0; i < ENVELOPE_RULES.length; i++) {
    const field = ENVELOPE_RULES[i];
    const value = input[field.name];
    // `required`: only undefined is missing; null fails the field's own rule, as in the DTOs
    if (value !== undefined) field.rule(value, '', field.name, ctx);
    else if (stampsRequired || !field.stamp) report(ctx, '', field.name, MESSAGES.required);
  }
  const payload = input[PAYLOAD_FIELD];
  if (payload === undefined) return report(ctx, '', PAYLOAD_FIELD, MESSAGES.required);
  if (!isPlainObject(payload)) return report(ctx, '', PAYLOAD_FIELD, MESSAGES.mustBeObject);
  const type = input[TYPE_FIELD];
  const payloadRules = PAYLOAD_SPECS.get(type);
  if (payloadRules === undefined) return;
  checkObject(payload, payloadRules.spec, PAYLOAD_FIELD, ctx);
  if (payloadRules.crossField) checkPayloadRules(type as keyof typeof PAYLOADS, payload, ctx.out);
}
