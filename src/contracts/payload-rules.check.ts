/**
 * The cross-field rules a payload declares (declaration.ts, `rules`), reported as violations with
 * paths like the field checks. They run on the guarded plain JSON, so they must tolerate shapes the
 * field checks have already rejected.
 */
import { CrossFieldRule, fieldOfKind, Kind } from './contract-kinds';
import { ENVELOPE, PAYLOADS } from './declaration';
import type { PlanEventTypeName } from './event-types';
import type { Violation } from './invalid-event.error';
import { say } from './messages';
import { checkStepGraph } from './step-graph.check';
import { childPath, violationAt } from './violation-path';

const PAYLOAD_PATH = fieldOfKind(ENVELOPE, 'payload');

export function checkPayloadRules(type: PlanEventTypeName, payload: unknown, out: Violation[]): void {
  const rules = PAYLOADS[type]?.rules;
  if (rules === undefined || typeof payload !== 'object' || payload === null || Array.isArray(payload)) return;
  for (const rule of rules) checkRule(type, rule, payload as Record<string, unknown>, out);
}

function checkRule(type: PlanEventTypeName, rule: CrossFieldRule, fields: Record<string, unknown>, out: Violation[]) {
  const path = childPath(PAYLOAD_PATH, rule.field);
  if (rule.rule === 'stepGraph') {
    // a fork's steps may depend on the parent's steps, which only the store knows
    const outside = rule.outsideWhen === undefined ? undefined : fields[rule.outsideWhen];
    const isOutsideAllowed = typeof outside === 'object' && outside !== null && !Array.isArray(outside);
    checkStepGraph(fields[rule.field], path, out, { outsideDependencies: isOutsideAllowed });
    return;
  }
  const { field, when, is, minItems, noun } = rule;
  const condition = fields[when];
  const value = fields[field];
  if (condition === is) {
    if (value === undefined) out.push(violationAt(path, say('requiredWhen', { when, is })));
    else if (Array.isArray(value) && value.length < minItems)
      out.push(violationAt(path, say('minItemsWhen', { min: minItems, noun, when, is })));
    else if (isGraphList(PAYLOADS[type].fields[field]?.kind)) checkStepGraph(value, path, out);
  } else if (otherValues(type, when, is).includes(condition) && value !== undefined) {
    out.push(violationAt(path, say('absentUnless', { when, is })));
  }
}

const isGraphList = (kind: Kind | undefined): boolean => kind?.kind === 'list' && kind.shape.graph !== undefined;

/** The values of the `when` field other than `is`: with any of them the field must be absent. */
function otherValues(type: PlanEventTypeName, when: string, is: string): readonly unknown[] {
  const kind = PAYLOADS[type].fields[when]?.kind;
  return kind?.kind === 'oneOf' ? kind.values.filter((v) => v !== is) : [];
}
