/**
 * A synchronous check of an event against the contract, rule for rule (the DTOs under payloads/ and
 * the raw-input guard's rules for checkpoint state), in about a microsecond where `parsePlanEvent`
 * takes ~25 µs. Two users:
 * - the publisher, on its caller's input (`checkEventInput`: stamps optional, it stamps what is
 *   missing), whose 10 µs budget per `publish()` class-validator alone would blow;
 * - `checkStoredEvent` (check-stored-event.ts), the worker's check, on guarded JSON with every
 *   stamp required (`checkEventRules`); it accepts on these rules and hands anything they refuse to
 *   `parsePlanEvent`.
 * `parsePlanEvent` stays the authority: test/publisher's agreement test and
 * test/contracts/check-stored-event.unit.test.ts feed both the same valid and broken events so this
 * mirror cannot drift silently.
 */
import { pushAll } from '../../shared/arrays';
import { DECISION_KINDS, FINAL_STATUSES, FORK_KINDS, PLAN_EVENT_TYPES, SPEC_VERSION } from '../event-types';
import type { PlanEventTypeName } from '../event-types';
import { checkPayloadRules } from '../payload-rules.check';
import { guardRawInput } from '../raw-input.guard';
import {
  CheckContext,
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
  objectSpec,
  oneOf,
  report,
  text,
  utcTimestamp,
  uuid,
} from './field-rules';
import { jsonState } from './json-state.rule';

const SQL_INT_MAX = 2_147_483_647;
const tokens = intInRange(0, SQL_INT_MAX);

const USAGE_FIELDS: Record<string, [required: boolean, rule: Rule]> = {
  provider: [false, text(1, 100)],
  cacheReadTokens: [false, tokens],
  cacheWriteTokens: [false, tokens],
  reasoningTokens: [false, tokens],
  reportedCost: [false, decimalAmount],
};

const STEP_SPEC: ObjectSpec = objectSpec({
  stepId: [true, externalId],
  index: [true, intInRange(0, 100_000)],
  agentId: [true, text(1, 100)],
  task: [true, longText({ nonEmpty: true })],
  title: [false, text(0, 500)],
  expectedOutput: [false, text(0, 50)],
  dependsOn: [false, externalIdList],
});
const steps = nestedList(() => STEP_SPEC);
const FORK_ORIGIN: ObjectSpec = objectSpec({
  planId: [true, externalId],
  kind: [true, oneOf(FORK_KINDS)],
  layer: [true, intInRange(0, 100_000)],
  checkpointId: [false, externalId],
});

const PAYLOAD_SPECS: ReadonlyMap<unknown, ObjectSpec> = new Map<PlanEventTypeName, ObjectSpec>(
  Object.entries({
    'plan.created': objectSpec({
      query: [true, longText({ nonEmpty: true })],
      steps: [true, steps],
      requiresApproval: [false, bool],
      complexity: [false, intInRange(0, 100)],
      forkOf: [false, nestedObject(() => FORK_ORIGIN)],
      traceId: [false, externalId],
    }),
    'plan.decision': objectSpec({
      decision: [true, oneOf(DECISION_KINDS)],
      steps: [false, steps],
      feedback: [false, longText()],
      decidedBy: [false, text(0, 200)],
    }),
    'step.started': objectSpec({ stepId: [true, externalId], agentId: [false, text(1, 100)] }),
    'step.completed': objectSpec({
      stepId: [true, externalId],
      result: [false, longText()],
      outputContent: [false, longText()],
      inputTokens: [true, tokens],
      outputTokens: [true, tokens],
      model: [false, text(1, 100)],
      ...USAGE_FIELDS,
    }),
    'step.failed': objectSpec({
      stepId: [true, externalId],
      error: [true, longText()],
      inputTokens: [false, tokens],
      outputTokens: [false, tokens],
      model: [false, text(1, 100)],
      ...USAGE_FIELDS,
    }),
    'step.skipped': objectSpec({ stepId: [true, externalId], reason: [false, longText()] }),
    'handoff.recorded': objectSpec({
      handoffId: [true, externalId],
      stepId: [false, externalId],
      fromAgentId: [true, text(1, 100)],
      toAgentId: [true, text(1, 100)],
      reason: [true, text(1, 50)],
      explanation: [false, longText()],
    }),
    'checkpoint.saved': objectSpec({
      checkpointId: [true, externalId],
      layer: [true, intInRange(0, 100_000)],
      state: [true, jsonState],
    }),
    'plan.finalized': objectSpec({
      status: [true, oneOf(FINAL_STATUSES)],
      summary: [false, longText()],
      failureReason: [false, longText()],
    }),
  } satisfies Record<PlanEventTypeName, ObjectSpec>) as [PlanEventTypeName, ObjectSpec][],
);

const eventType = oneOf(PLAN_EVENT_TYPES);
const specVersion = exactly(SPEC_VERSION, ', the only spec version this parser supports');
const seqRange = intInRange(0, SQL_INT_MAX);
export const ENVELOPE_FIELDS: ReadonlySet<string> = new Set([
  'specVersion',
  'eventId',
  'type',
  'planId',
  'sessionId',
  'seq',
  'occurredAt',
  'payload',
]);

/**
 * Whether the four stamps (specVersion, eventId, seq, occurredAt) must be present. `optional` is the
 * publisher's view: a stamp its caller left out is the publisher's own, valid by construction.
 */
export type StampRule = 'optional' | 'required';

/**
 * The publisher's check of its caller's input, which no guard has seen; stamps are optional.
 * Violations are appended to `ctx.out`. A valid event, the common case, costs the rules alone: they
 * refuse whatever the raw-input guard refuses. A refused one costs a guard pass more, and when the
 * guard refuses it too, the guard's violations replace the rules': `parsePlanEvent` reports only
 * those when there are any, so a NUL character or a prototype key in an unknown field is reported
 * as such, not as "is not an allowed field".
 */
export function checkEventInput(input: Record<string, unknown>, ctx: CheckContext): void {
  const start = ctx.out.length;
  checkEventRules(input, ctx, 'optional');
  if (ctx.out.length === start) return;
  const guarded = guardRawInput(input, ctx.limits);
  if (guarded.ok) return;
  ctx.out.length = start;
  pushAll(ctx.out, guarded.violations);
}

/**
 * Checks an event's fields; violations are appended to `ctx.out`. The envelope is read with plain
 * property accesses (this runs for every event). Present stamps are always checked. The wording
 * matches the contract's only on input the raw-input guard accepts, as `checkStoredEvent`'s is.
 */
export function checkEventRules(input: Record<string, unknown>, ctx: CheckContext, stamps: StampRule): void {
  for (const key in input) {
    if (!ENVELOPE_FIELDS.has(key) && input[key] !== undefined) report(ctx, '', key, 'is not an allowed field');
  }
  const { type, planId, sessionId, payload } = input;
  required(type, 'type', eventType, ctx);
  required(planId, 'planId', externalId, ctx);
  required(sessionId, 'sessionId', externalId, ctx);
  const stampsRequired = stamps === 'required';
  stamp(input.specVersion, 'specVersion', specVersion, stampsRequired, ctx);
  stamp(input.eventId, 'eventId', uuid, stampsRequired, ctx);
  stamp(input.seq, 'seq', seqRange, stampsRequired, ctx);
  stamp(input.occurredAt, 'occurredAt', utcTimestamp, stampsRequired, ctx);
  if (payload === undefined) return report(ctx, '', 'payload', 'is required');
  if (!isPlainObject(payload)) return report(ctx, '', 'payload', 'must be an object');
  const spec = PAYLOAD_SPECS.get(type);
  if (spec === undefined) return;
  checkObject(payload, spec, 'payload', ctx);
  // Only these two types have cross-field rules (step graph, decision/steps).
  if (type === 'plan.created' || type === 'plan.decision') checkPayloadRules(type, payload, ctx.out);
}

/** `@Required`: only undefined is missing; null fails the field's own rule, as in the DTOs. */
function required(value: unknown, name: string, rule: Rule, ctx: CheckContext): void {
  if (value === undefined) report(ctx, '', name, 'is required');
  else rule(value, '', name, ctx);
}

function stamp(value: unknown, name: string, rule: Rule, isRequired: boolean, ctx: CheckContext): void {
  if (value !== undefined) rule(value, '', name, ctx);
  else if (isRequired) report(ctx, '', name, 'is required');
}
