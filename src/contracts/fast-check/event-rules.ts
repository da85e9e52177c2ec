/**
 * The publisher's synchronous check of an event against the contract, rule for rule (the DTOs under
 * src/contracts/payloads and the raw-input guard), in about a microsecond. `parsePlanEvent` costs
 * ~25 µs per small event here, which would blow the 10 µs budget of `publish()` and cap a publisher
 * near 40k events/s. The worker still runs `parsePlanEvent`, the authority; test/publisher's
 * agreement test feeds both the same valid and broken events so this mirror cannot drift silently.
 */
import { DECISION_KINDS, FINAL_STATUSES, PLAN_EVENT_TYPES, SPEC_VERSION } from '../event-types';
import type { PlanEventTypeName } from '../event-types';
import type { Violation } from '../invalid-event.error';
import { violationAt } from '../violation-path';
import { checkPayloadRules } from '../payload-rules.check';
import {
  CheckContext,
  ObjectSpec,
  Rule,
  bool,
  checkObject,
  exactly,
  externalId,
  externalIdList,
  intInRange,
  isPlainObject,
  longText,
  nestedList,
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

const STEP_SPEC: ObjectSpec = objectSpec({
  stepId: [true, externalId],
  index: [true, intInRange(0, 100_000)],
  agentId: [true, text(1, 100)],
  task: [true, longText(1)],
  title: [false, text(0, 500)],
  expectedOutput: [false, text(0, 50)],
  dependsOn: [false, externalIdList],
});
const steps = nestedList(() => STEP_SPEC);

const PAYLOAD_SPECS: ReadonlyMap<unknown, ObjectSpec> = new Map<PlanEventTypeName, ObjectSpec>(Object.entries({
  'plan.created': objectSpec({ query: [true, longText(1)], steps: [true, steps], requiresApproval: [false, bool], complexity: [false, intInRange(0, 100)] }),
  'plan.decision': objectSpec({
    decision: [true, oneOf(DECISION_KINDS)],
    steps: [false, steps],
    feedback: [false, longText(0)],
    decidedBy: [false, text(0, 200)],
  }),
  'step.started': objectSpec({ stepId: [true, externalId], agentId: [false, text(1, 100)] }),
  'step.completed': objectSpec({
    stepId: [true, externalId],
    result: [false, longText(0)],
    outputContent: [false, longText(0)],
    inputTokens: [true, tokens],
    outputTokens: [true, tokens],
    model: [false, text(1, 100)],
  }),
  'step.failed': objectSpec({
    stepId: [true, externalId],
    error: [true, longText(0)],
    inputTokens: [false, tokens],
    outputTokens: [false, tokens],
    model: [false, text(1, 100)],
  }),
  'step.skipped': objectSpec({ stepId: [true, externalId], reason: [false, longText(0)] }),
  'handoff.recorded': objectSpec({
    handoffId: [true, externalId],
    stepId: [false, externalId],
    fromAgentId: [true, text(1, 100)],
    toAgentId: [true, text(1, 100)],
    reason: [true, text(1, 50)],
    explanation: [false, longText(0)],
  }),
  'checkpoint.saved': objectSpec({ checkpointId: [true, externalId], layer: [true, intInRange(0, 100_000)], state: [true, jsonState] }),
  'plan.finalized': objectSpec({ status: [true, oneOf(FINAL_STATUSES)], summary: [false, longText(0)], failureReason: [false, longText(0)] }),
} satisfies Record<PlanEventTypeName, ObjectSpec>) as [PlanEventTypeName, ObjectSpec][]);

const eventType = oneOf(PLAN_EVENT_TYPES);
const specVersion = exactly(SPEC_VERSION, ', the only spec version this parser supports');
const seqRange = intInRange(0, SQL_INT_MAX);
export const ENVELOPE_FIELDS: ReadonlySet<string> = new Set(['specVersion', 'eventId', 'type', 'planId', 'sessionId', 'seq', 'occurredAt', 'payload']);

/**
 * Checks the caller's input. The envelope is read with plain property accesses (this runs for
 * every event); stamps the caller left out are the publisher's own, valid by construction, and
 * skipped. Violations are appended to `ctx.out`.
 */
export function checkEventInput(input: Record<string, unknown>, ctx: CheckContext): void {
  for (const key in input) {
    if (!ENVELOPE_FIELDS.has(key) && input[key] !== undefined) report(ctx, '', key, 'is not an allowed field');
  }
  const { type, planId, sessionId, payload } = input;
  required(type, 'type', eventType, ctx);
  required(planId, 'planId', externalId, ctx);
  required(sessionId, 'sessionId', externalId, ctx);
  if (input.specVersion !== undefined) specVersion(input.specVersion, '', 'specVersion', ctx);
  if (input.eventId !== undefined) uuid(input.eventId, '', 'eventId', ctx);
  if (input.seq !== undefined) seqRange(input.seq, '', 'seq', ctx);
  if (input.occurredAt !== undefined) utcTimestamp(input.occurredAt, '', 'occurredAt', ctx);
  if (payload === undefined || payload === null) return report(ctx, '', 'payload', 'is required');
  if (!isPlainObject(payload)) return report(ctx, '', 'payload', 'must be an object');
  const spec = PAYLOAD_SPECS.get(type);
  if (spec === undefined) return;
  checkObject(payload, spec, 'payload', ctx);
  // Only these two types have cross-field rules (step graph, decision/steps).
  if (type === 'plan.created' || type === 'plan.decision') checkPayloadRules(type, payload, ctx.out);
}

function required(value: unknown, name: string, rule: Rule, ctx: CheckContext): void {
  if (value === undefined || value === null) report(ctx, '', name, 'is required');
  else rule(value, '', name, ctx);
}

/** Enough to fix the sender, as the contract caps its own reports. */
const MAX_REPORTED_VIOLATIONS = 50;
const ENVELOPE_ORDER = ['specVersion', 'eventId', 'type', 'planId', 'sessionId', 'seq', 'occurredAt', 'payload'];

/** The contract's report order: envelope fields in document order, then the payload, then unknown fields. */
export function orderViolations(violations: Violation[]): Violation[] {
  const rank = (path: string) => {
    const i = ENVELOPE_ORDER.indexOf(/^[^.[]*/.exec(path)![0]);
    return i === -1 ? ENVELOPE_ORDER.length : i;
  };
  const sorted = [...violations].sort((a, b) => rank(a.path) - rank(b.path));
  if (sorted.length <= MAX_REPORTED_VIOLATIONS) return sorted;
  const listed = sorted.slice(0, MAX_REPORTED_VIOLATIONS);
  listed.push(violationAt('', `has ${sorted.length - listed.length} more violations (not listed)`));
  return listed;
}
