/**
 * The mapping from the spans of one trace to plan events (docs/otlp.md#the-mapping). Pure:
 * the same set of spans, in any order and with any duplicates, gives the same events, with the
 * same eventIds (derived from the trace and span ids) and seqs 0, 1, 2, ... without gaps.
 *
 * Four stages, one module each under mapping/: the tree and its roles (span-tree.ts), the steps
 * and their usage (plan-steps.ts), the step graph and handoffs (step-graph.ts), the typed event
 * drafts put in sequence (event-drafts.ts). What a span says is read through the conventions
 * (conventions/), never by attribute name here.
 */
import type { PlanEvent } from '../contracts';
import { str } from './conventions/convention';
import { agentNameOf, sessionIdOf } from './conventions/conventions';
import { planEvents, type MappingOptions } from './mapping/event-drafts';
import { externalId, OVERRIDE } from './mapping/overrides';
import { collectSteps, type PlanScope } from './mapping/plan-steps';
import { SpanTree } from './mapping/span-tree';
import { buildStepGraph, findHandoffs } from './mapping/step-graph';
import type { OtlpSpan } from './otlp-span';

export type { SpanRole } from './conventions/convention';
export { derivedEventIds, type MappingOptions } from './mapping/event-drafts';
export { isRecognised, OVERRIDE, roleOf } from './mapping/overrides';

export interface MappedTrace {
  /** Each plan's events, in seq order (seq 0 is its plan.created). */
  plans: { planId: string; events: PlanEvent[] }[];
  /** Spans that became (part of) an event. */
  mapped: number;
  /** Spans that did not, with why: reason to count. */
  unmapped: Map<string, number>;
}

type Skip = (reason: string, n?: number) => void;

/**
 * Maps all the spans of one trace (in any order, duplicates allowed) to plans: each outermost
 * workflow/plan span is a plan (without one, each outermost agent span); the spans under it are
 * its steps, their usage, dependencies and handoffs; spans under no plan are counted as unmapped.
 */
export function mapTrace(input: readonly OtlpSpan[], options: MappingOptions): MappedTrace {
  const tree = new SpanTree(input);
  const unmapped = new Map<string, number>();
  const skip: Skip = (reason, n = 1) => unmapped.set(reason, (unmapped.get(reason) ?? 0) + n);
  const planSpans = tree.planSpans();
  const members = tree.membersOf(planSpans);
  const plans: MappedTrace['plans'] = [];
  let mapped = 0;
  for (const planSpan of planSpans) {
    const result = mapPlan(planScope(tree, planSpan, members.get(planSpan.spanId)!), options, skip);
    mapped += result.mapped;
    plans.push({ planId: result.planId, events: result.events });
  }
  const placed = new Set([...planSpans, ...[...members.values()].flat()]);
  for (const s of tree.spans)
    if (!placed.has(s))
      skip(tree.role(s) === 'none' ? 'no GenAI or OpenInference attributes' : 'not under a plan span');
  return { plans, mapped, unmapped };
}

/** A plan's ids, session and agent, from its span (and the spans under it). */
function planScope(tree: SpanTree, planSpan: OtlpSpan, members: OtlpSpan[]): PlanScope {
  const overridePlanId = str(planSpan.attributes[OVERRIDE.planId]);
  const planId = overridePlanId
    ? externalId(overridePlanId, 'otlp')
    : planSpan.parentSpanId
      ? `otlp-${planSpan.traceId}-${planSpan.spanId}`
      : `otlp-${planSpan.traceId}`;
  const sessionSource =
    str(planSpan.attributes[OVERRIDE.sessionId]) ?? [planSpan, ...members].map(sessionIdOf).find(Boolean);
  return {
    tree,
    planSpan,
    members,
    planId,
    sessionId: sessionSource ? externalId(sessionSource, 'otlp') : `otlp-${planSpan.traceId}`,
    planAgent: agentNameOf(planSpan) ?? str(planSpan.attributes['service.name']) ?? 'agent',
  };
}

function mapPlan(scope: PlanScope, options: MappingOptions, skip: Skip) {
  const plan = collectSteps(scope);
  const graph = buildStepGraph(scope, plan, skip);
  const { handoffs, unplacedMarks } = findHandoffs(scope, plan, graph);
  if (unplacedMarks > 0) skip('a handoff span naming an agent that has no later span in its plan', unplacedMarks);
  const events = planEvents(scope, graph.ordered, graph.specs, handoffs, options);
  const llmsMapped = plan.llms.filter((s) => !plan.steps.has(s.spanId)).length;
  const planIsStep = plan.steps.has(scope.planSpan.spanId) ? 1 : 0;
  // handoff marks and wrappers become the handoffs and the tree's shape (a mark with no agent to go to is counted out)
  const structural = plan.handoffMarks.length + plan.wrappers.length;
  const others = scope.members.length - (plan.steps.size - planIsStep) - llmsMapped - structural;
  if (others > 0) skip('inside a plan but neither an agent, tool nor LLM span', others);
  return {
    planId: scope.planId,
    events,
    mapped: 1 + graph.ordered.length - planIsStep + llmsMapped + structural - unplacedMarks,
  };
}
