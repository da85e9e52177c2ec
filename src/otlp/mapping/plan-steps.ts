/**
 * Stage 2 of the mapping: the steps of one plan and what they used. Agent and tool spans are
 * steps, and CHAIN spans right under the plan (graph nodes); LLM spans give their tokens and model
 * to the nearest step above them, or become a step when there is none.
 */
import { str, MAX_TOKENS, type SpanRole, type SpanUsage } from '../conventions/convention';
import { agentNameOf, handoffTargetOf, usageOf } from '../conventions/conventions';
import type { OtlpSpan } from '../otlp-span';
import { clip, externalId, OVERRIDE } from './overrides';
import type { SpanTree } from './span-tree';

/** One plan of a trace: its span, the spans under it and what the plan's events share. */
export interface PlanScope {
  tree: SpanTree;
  planSpan: OtlpSpan;
  /** The spans whose nearest plan span is this one, by start. */
  members: OtlpSpan[];
  planId: string;
  sessionId: string;
  /** The plan span's agent: the agent of last resort of its steps. */
  planAgent: string;
}

export interface Step {
  span: OtlpSpan;
  role: SpanRole;
  stepId: string;
  agentId: string;
  inputTokens: number;
  outputTokens: number;
  /** Parts of inputTokens and outputTokens. */
  cacheReadTokens: number;
  cacheWriteTokens: number;
  reasoningTokens: number;
  model?: string;
  provider?: string;
  /** The reported costs of its model calls, summed (pico-dollars); undefined when none reported one. */
  reportedCost?: bigint;
  /** An LLM span under it reported tokens. */
  counted: boolean;
  /** What its events' ids derive from: its span id, unless the span is the plan's too. */
  eventKey: string;
}

export interface PlanSteps {
  /** By span id, in the members' order. */
  steps: Map<string, Step>;
  /** The LLM spans of the plan (steps of their own, or folded into the step above them). */
  llms: OtlpSpan[];
  /** The nearest span above `s` that is a step. */
  stepAbove(s: OtlpSpan): OtlpSpan | undefined;
  /** Spans that only mark a handoff to the agent they name (no steps). */
  handoffMarks: OtlpSpan[];
  /** Framework wrappers around agents (no steps, no agents: see SpanTree.isWrapper). */
  wrappers: OtlpSpan[];
}

/** Whether a member span is a step by itself (LLM spans aside). */
function isStepSpan(scope: PlanScope, s: OtlpSpan): boolean {
  const role = scope.tree.role(s);
  if (role === 'agent') return !scope.tree.isWrapper(s);
  if (role === 'tool') return handoffTargetOf(s) === undefined;
  // graph nodes; LangGraph's own __start__ / __end__ nodes are not steps of the run
  if (role === 'chain')
    return (
      s.attributes[OVERRIDE.role] === 'step' || (scope.tree.parentOf(s) === scope.planSpan && !/^__.*__$/.test(s.name))
    );
  return false;
}

/** The agent a tool or LLM step runs for: the nearest agent (or graph node) above it, else the plan's. */
export function agentAbove(scope: PlanScope, s: OtlpSpan): string {
  const { tree, planSpan, planAgent } = scope;
  for (const a of tree.ancestors(s)) {
    if (a === planSpan) return planAgent;
    if ((tree.role(a) === 'agent' && !tree.isWrapper(a)) || (tree.role(a) === 'chain' && tree.parentOf(a) === planSpan))
      return agentNameOf(a) ?? a.name ?? planAgent;
  }
  return planAgent;
}

function newStep(scope: PlanScope, s: OtlpSpan, role: SpanRole): Step {
  const own = str(s.attributes[OVERRIDE.stepId]);
  const agentId =
    role === 'agent' || role === 'chain' ? (agentNameOf(s) ?? (s.name || scope.planAgent)) : agentAbove(scope, s);
  return {
    span: s,
    role,
    stepId: own ? externalId(own, 'step') : s.spanId,
    agentId: clip(agentId, 100),
    inputTokens: 0,
    outputTokens: 0,
    cacheReadTokens: 0,
    cacheWriteTokens: 0,
    reasoningTokens: 0,
    counted: false,
    eventKey: s === scope.planSpan ? `${s.spanId}:step` : s.spanId,
  };
}

function addUsage(step: Step, usage: SpanUsage): void {
  step.inputTokens = Math.min(step.inputTokens + (usage.input ?? 0), MAX_TOKENS);
  step.outputTokens = Math.min(step.outputTokens + (usage.output ?? 0), MAX_TOKENS);
  step.cacheReadTokens = Math.min(step.cacheReadTokens + (usage.cacheRead ?? 0), step.inputTokens);
  step.cacheWriteTokens = Math.min(
    step.cacheWriteTokens + (usage.cacheWrite ?? 0),
    step.inputTokens - step.cacheReadTokens,
  );
  step.reasoningTokens = Math.min(step.reasoningTokens + (usage.reasoning ?? 0), step.outputTokens);
  if (usage.reportedCost !== undefined) step.reportedCost = (step.reportedCost ?? 0n) + usage.reportedCost;
}

/** The model and provider of a step: its latest model call's, else its own span's. */
function nameModel(step: Step, usage: SpanUsage, keep: boolean): void {
  if (usage.model && !(keep && step.model)) step.model = clip(usage.model, 100);
  if (usage.provider && !(keep && step.provider)) step.provider = clip(usage.provider, 100);
}

/**
 * Instrumentation scopes of client libraries that trace their own API calls: `@anthropic-ai/sdk`
 * emits a GenAI span for each call whenever a tracer provider is registered, inside the span an
 * instrumentation of the same client (OpenInference's, OpenLLMetry's) made for the same call.
 */
const CLIENT_SCOPES = new Set(['com.anthropic.sdk.typescript']);

const reportsUsage = (s: OtlpSpan) => usageOf(s).input !== undefined || usageOf(s).output !== undefined;

/** A client library's own span of a call that the model-call span around it already reports: counted once, there. */
function seenTwice(tree: SpanTree, s: OtlpSpan): boolean {
  if (s.scope === undefined || !CLIENT_SCOPES.has(s.scope)) return false;
  const parent = tree.ancestors(s)[0];
  return parent !== undefined && tree.role(parent) === 'llm' && reportsUsage(parent);
}

/** The plan's steps, with the usage of the LLM spans under them (a step's own usage counts only when none reported any). */
export function collectSteps(scope: PlanScope): PlanSteps {
  const { tree } = scope;
  // a plan made of a model call or tool call (the top of a tree no convention names) is its own step too
  const ownRole = tree.role(scope.planSpan);
  const members = ownRole === 'llm' || ownRole === 'tool' ? [scope.planSpan, ...scope.members] : scope.members;
  const steps = new Map<string, Step>();
  const stepAbove = (s: OtlpSpan) => tree.ancestors(s).find((a) => steps.has(a.spanId));
  for (const s of members) if (isStepSpan(scope, s)) steps.set(s.spanId, newStep(scope, s, tree.role(s)));
  const llms = members.filter((s) => tree.role(s) === 'llm');
  for (const s of llms) if (!stepAbove(s)) steps.set(s.spanId, newStep(scope, s, 'llm'));
  for (const s of llms) {
    const own = steps.get(s.spanId);
    const above = own ? undefined : stepAbove(s);
    const step = own ?? (above ? steps.get(above.spanId) : undefined);
    if (!step) continue;
    const usage = usageOf(s);
    if (reportsUsage(s) && !seenTwice(tree, s)) {
      addUsage(step, usage);
      step.counted = true;
    }
    nameModel(step, usage, false);
  }
  for (const step of steps.values()) {
    if (step.role === 'llm') continue;
    const usage = usageOf(step.span);
    if (!step.counted && (usage.input !== undefined || usage.output !== undefined)) addUsage(step, usage);
    nameModel(step, usage, true);
  }
  const handoffMarks = members.filter((s) => tree.role(s) === 'tool' && handoffTargetOf(s) !== undefined);
  const wrappers = members.filter((s) => tree.role(s) === 'agent' && tree.isWrapper(s));
  return { steps, llms, stepAbove, handoffMarks, wrappers };
}
