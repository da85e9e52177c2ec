/**
 * Stage 3 of the mapping: the steps in order, their dependencies and the handoffs between agents.
 * - dependsOn: the steps of the same parent that ended before the step started (the latest of
 *   them), the span's links to other steps, and `plan_ledger.depends_on`; only earlier steps (by
 *   start), so the graph has no cycle;
 * - a handoff where a span declares one (`graph.node.parent_id`, say), where a span marks one
 *   (`handoff to <agent>`), where an agent step runs under another agent (step or plan) of another
 *   name, and where control passes from one model-calling graph node to the next. A framework's
 *   wrapper around agents is no end of a handoff.
 */
import { DEFAULT_LIMITS } from '../../contracts/limits';
import type { StepSpec } from '../../contracts';
import { str } from '../conventions/convention';
import { agentNameOf, declaredHandoffOf, graphNodeOf, handoffTargetOf, toolOf } from '../conventions/conventions';
import type { OtlpSpan } from '../otlp-span';
import { clip, OVERRIDE } from './overrides';
import { agentAbove, type PlanScope, type PlanSteps, type Step } from './plan-steps';
import { byStart } from './span-tree';

/**
 * Span times are only as fine as the exporter's clock: the OpenTelemetry JS SDK stamps a span's
 * start to the millisecond and its end finer, so a step that starts right after its sibling ended
 * can appear to start up to a millisecond before that end.
 */
const CLOCK_GRAIN_NS = 1_000_000n;

export interface StepGraph {
  /** The plan's steps in index order (by start; of spans started in the same instant, the caller first). */
  ordered: Step[];
  specs: StepSpec[];
  /** b ran after a: a ended before b started, within the clock's grain. */
  precedes(a: Step, b: Step): boolean;
}

export interface Handoff {
  step: Step;
  from: string;
  reason: string;
}

/** The steps in order, a step id used twice and the steps past the contract's limit counted out. */
function orderSteps(scope: PlanScope, steps: Iterable<Step>, skip: (reason: string, n?: number) => void): Step[] {
  const depth = (s: OtlpSpan) => scope.tree.ancestors(s).length;
  let ordered = [...steps].sort(
    (x, y) =>
      (x.span.startNs < y.span.startNs ? -1 : x.span.startNs > y.span.startNs ? 1 : 0) ||
      depth(x.span) - depth(y.span) ||
      byStart(x.span, y.span),
  );
  const uniqueIds = new Set<string>();
  ordered = ordered.filter((st) => {
    if (uniqueIds.has(st.stepId)) {
      skip('a step id used twice in one plan (plan_ledger.step_id)');
      return false;
    }
    uniqueIds.add(st.stepId);
    return true;
  });
  if (ordered.length > DEFAULT_LIMITS.maxSteps) {
    skip(`more than ${DEFAULT_LIMITS.maxSteps} steps in one plan`, ordered.length - DEFAULT_LIMITS.maxSteps);
    ordered = ordered.slice(0, DEFAULT_LIMITS.maxSteps);
  }
  return ordered;
}

export function buildStepGraph(
  scope: PlanScope,
  plan: PlanSteps,
  skip: (reason: string, n?: number) => void,
): StepGraph {
  const ordered = orderSteps(scope, plan.steps.values(), skip);
  const index = new Map(ordered.map((st, i) => [st.span.spanId, i]));
  const byStepId = new Map(ordered.map((st) => [st.stepId, st]));
  const precedes = (a: Step, b: Step) =>
    index.get(a.span.spanId)! < index.get(b.span.spanId)! && a.span.endNs <= b.span.startNs + CLOCK_GRAIN_NS;
  const parents = new Map(ordered.map((st) => [st, plan.stepAbove(st.span)?.spanId ?? '']));

  const specs = ordered.map((st, i): StepSpec => {
    const deps = new Set<string>();
    const dependOn = (target: Step | undefined) => {
      if (target && index.get(target.span.spanId)! < i) deps.add(target.stepId);
    };
    const siblings = ordered.filter((o, j) => j < i && parents.get(o) === parents.get(st) && precedes(o, st));
    for (const c of siblings) if (!siblings.some((d) => d !== c && precedes(c, d))) deps.add(c.stepId);
    for (const link of st.span.links) dependOn(ordered.find((o) => o.span.spanId === link.spanId));
    const given = st.span.attributes[OVERRIDE.dependsOn];
    const named = Array.isArray(given) ? given.map(str) : (str(given)?.split(',') ?? []);
    for (const raw of named) dependOn(raw === undefined ? undefined : byStepId.get(raw.trim()));
    const spec: StepSpec = {
      stepId: st.stepId,
      index: i,
      agentId: st.agentId,
      task: clip(st.span.name || st.role, 10_000),
      title: clip(toolOf(st.span) ?? agentNameOf(st.span) ?? st.span.name ?? st.role, 500),
    };
    const dependsOn = [...deps].slice(0, DEFAULT_LIMITS.maxDependsOn);
    if (dependsOn.length > 0) spec.dependsOn = dependsOn;
    return spec;
  });
  return { ordered, specs, precedes };
}

/**
 * The agent an agent span was called by: the nearest agent span above it (the plan's own, when it
 * is an agent); a framework's wrapper around agents is none.
 */
function callerAgent(scope: PlanScope, s: OtlpSpan): string | undefined {
  const { tree, planSpan } = scope;
  for (const a of tree.ancestors(s)) {
    const agent = tree.role(a) === 'agent' && !tree.isWrapper(a);
    if (a === planSpan) return agent ? scope.planAgent : undefined;
    if (agent) return agentNameOf(a) ?? a.name;
  }
  return undefined;
}

/**
 * A handoff a step's span declares (`plan_ledger.handoff_from`, else its convention's), a graph
 * node named as its origin read as the agent of the step that is that node.
 */
function declaredHandoff(s: OtlpSpan, agentOfNode: Map<string, string>): { from: string; reason: string } | undefined {
  const from = str(s.attributes[OVERRIDE.handoffFrom]);
  if (from !== undefined) return { from, reason: clip(str(s.attributes[OVERRIDE.handoffReason]) ?? 'handoff', 50) };
  const declared = declaredHandoffOf(s);
  if (!declared) return undefined;
  return { from: (declared.fromNode && agentOfNode.get(declared.from)) || declared.from, reason: declared.reason };
}

/**
 * The handoffs that spans marking one give (a span named `handoff to <agent>`): from the agent
 * the marking span runs in to the first step of the agent it names that starts after it. A mark
 * whose agent has no such step gives none.
 */
function markedHandoffs(
  scope: PlanScope,
  plan: PlanSteps,
  graph: StepGraph,
): Map<Step, { from: string; reason: string }> {
  const marked = new Map<Step, { from: string; reason: string }>();
  for (const mark of [...plan.handoffMarks].sort(byStart)) {
    const to = clip(handoffTargetOf(mark) ?? '', 100);
    const target = graph.ordered.find(
      (st) =>
        st.role === 'agent' && st.agentId === to && st.span.startNs + CLOCK_GRAIN_NS >= mark.startNs && !marked.has(st),
    );
    if (target) marked.set(target, { from: agentAbove(scope, mark), reason: 'handoff' });
  }
  return marked;
}

/**
 * The handoffs of a plan: declared by a step's span, else marked by a handoff span, else an agent
 * called by another agent (a delegation); plus graph edges.
 */
export function findHandoffs(
  scope: PlanScope,
  plan: PlanSteps,
  graph: StepGraph,
): { handoffs: Handoff[]; unplacedMarks: number } {
  const handoffs: Handoff[] = [];
  const agentOfNode = new Map<string, string>();
  for (const st of graph.ordered) {
    const node = st.role === 'agent' ? graphNodeOf(st.span) : undefined;
    if (node !== undefined && !agentOfNode.has(node)) agentOfNode.set(node, st.agentId);
  }
  const marked = markedHandoffs(scope, plan, graph);
  for (const step of graph.ordered) {
    const declared = declaredHandoff(step.span, agentOfNode) ?? marked.get(step);
    const caller = declared === undefined && step.role === 'agent' ? callerAgent(scope, step.span) : undefined;
    if (declared) handoffs.push({ step, ...declared });
    else if (caller !== undefined && caller !== step.agentId)
      handoffs.push({ step, from: caller, reason: 'delegation' });
  }
  const calledModel = new Set(plan.llms.flatMap((l) => scope.tree.ancestors(l).map((a) => a.spanId)));
  // graph nodes that called a model are agents: control passing from one to the next is a handoff
  const agentNodes = graph.ordered.filter((st) => st.role === 'chain' && calledModel.has(st.span.spanId));
  agentNodes.forEach((step, i) => {
    const from = agentNodes
      .slice(0, i)
      .filter((o) => graph.precedes(o, step))
      .at(-1);
    if (from && from.agentId !== step.agentId && step.span.attributes[OVERRIDE.handoffFrom] === undefined)
      handoffs.push({ step, from: from.agentId, reason: 'graph_edge' });
  });
  return { handoffs, unplacedMarks: plan.handoffMarks.length - marked.size };
}
