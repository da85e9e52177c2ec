/**
 * Cross-field rules of payloads, reported as violations with paths like the field checks. They run
 * on the guarded plain JSON, so they must tolerate shapes the DTO checks have already rejected.
 */
import type { PlanEventTypeName } from './event-types';
import type { Violation } from './invalid-event.error';
import { checkStepGraph } from './step-graph.check';
import { violationAt } from './violation-path';

export function checkPayloadRules(type: PlanEventTypeName, payload: unknown, out: Violation[]): void {
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) return;
  const fields = payload as Record<string, unknown>;
  if (type === 'plan.created') {
    // a fork's steps may depend on the parent's steps, which only the store knows
    const forkOf = fields.forkOf;
    const isFork = typeof forkOf === 'object' && forkOf !== null && !Array.isArray(forkOf);
    checkStepGraph(fields.steps, 'payload.steps', out, { outsideDependencies: isFork });
  }
  if (type === 'plan.decision') checkDecision(fields, out);
}

/**
 * An edit carries the full new step list (the worker replaces the plan's steps with it); approve and
 * reject carry none, so a stray list can never be mistaken for an edit.
 */
function checkDecision(payload: Record<string, unknown>, out: Violation[]): void {
  const { decision, steps } = payload;
  if (decision === 'edit') {
    if (steps === undefined) out.push(violationAt('payload.steps', 'is required when decision is edit'));
    else if (Array.isArray(steps) && steps.length === 0)
      out.push(violationAt('payload.steps', 'must contain at least 1 step when decision is edit'));
    else checkStepGraph(steps, 'payload.steps', out);
  } else if ((decision === 'approve' || decision === 'reject') && steps !== undefined) {
    out.push(violationAt('payload.steps', 'must be absent unless decision is edit'));
  }
}
