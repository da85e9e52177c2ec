/**
 * The mapping from the spans of one trace to plan events (docs/otlp.md#the-mapping). Pure:
 * the same set of spans, in any order and with any duplicates, gives the same events, with the
 * same eventIds (derived from the trace and span ids) and seqs 0, 1, 2, ... without gaps.
 */
import { createHash } from 'node:crypto';
import { EXTERNAL_ID_PATTERN } from '../contracts/field-formats';
import { DEFAULT_LIMITS } from '../contracts/limits';
import type { PlanEvent, StepSpec } from '../contracts';
import type { AttrValue, OtlpSpan } from './otlp-span';

/** Attributes a user may set on a span to steer the mapping. */
export const OVERRIDE = Object.freeze({
  /** `plan`, `step` or `none`: what the span becomes, whatever its other attributes say. */
  role: 'plan_ledger.role',
  /** On the plan span: the plan's id (an external id), instead of one derived from the trace. */
  planId: 'plan_ledger.plan_id',
  /** On a step span: the step's id, instead of its span id. */
  stepId: 'plan_ledger.step_id',
  /** On a step span: step ids (a string array, or one comma-separated string) it depends on. */
  dependsOn: 'plan_ledger.depends_on',
  /** On the plan span: the session id, instead of the conversation id or the trace. */
  sessionId: 'plan_ledger.session_id',
  /** On a step span: the agent that handed the work to this step's agent (a handoff, whatever the tree says). */
  handoffFrom: 'plan_ledger.handoff_from',
  /** With handoff_from: a short reason code (at most 50 characters). @defaultValue `handoff` */
  handoffReason: 'plan_ledger.handoff_reason',
});

export type SpanRole = 'plan' | 'agent' | 'tool' | 'chain' | 'llm' | 'none';

export interface MappingOptions {
  /** OTLP_CAPTURE_CONTENT: store prompts and outputs (query, result, outputContent). */
  captureContent: boolean;
}

export interface MappedTrace {
  /** Each plan's events, in seq order (seq 0 is its plan.created). */
  plans: { planId: string; events: PlanEvent[] }[];
  /** Spans that became (part of) an event. */
  mapped: number;
  /** Spans that did not, with why: reason to count. */
  unmapped: Map<string, number>;
}

const WORKFLOW_OPERATIONS = new Set(['invoke_workflow', 'workflow', 'create_plan', 'plan']);
const AGENT_OPERATIONS = new Set(['invoke_agent']);
const TOOL_OPERATIONS = new Set(['execute_tool']);
const LLM_OPERATIONS = new Set(['chat', 'text_completion', 'generate_content', 'embeddings']);
const AI_SDK_AGENT = /^ai\.(generateText|streamText|generateObject|streamObject)$/;
const AI_SDK_LLM = /^ai\.(generateText|streamText|generateObject|streamObject)\.(doGenerate|doStream)$/;
/**
 * Span times are only as fine as the exporter's clock: the OpenTelemetry JS SDK stamps a span's
 * start to the millisecond and its end finer, so a step that starts right after its sibling ended
 * can appear to start up to a millisecond before that end.
 */
const CLOCK_GRAIN_NS = 1_000_000n;
/** A captured text is cut at this many characters, so one plan's events stay well under the event size limit. */
const MAX_CAPTURED_CHARS = 32_000;

function str(v: AttrValue | undefined): string | undefined {
  if (typeof v === 'string') return v.length > 0 ? v : undefined;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return undefined;
}

function first(attrs: Record<string, AttrValue>, ...keys: string[]): string | undefined {
  for (const k of keys) {
    const v = str(attrs[k]);
    if (v !== undefined) return v;
  }
  return undefined;
}

function tokens(attrs: Record<string, AttrValue>, ...keys: string[]): number | undefined {
  for (const k of keys) {
    const v = attrs[k];
    const n = typeof v === 'number' ? v : typeof v === 'string' ? Number(v) : NaN;
    if (Number.isInteger(n) && n >= 0) return Math.min(n, 2_147_483_647);
  }
  return undefined;
}

/** What a span is, by the override, the GenAI conventions (old and new) or OpenInference. */
export function roleOf(span: OtlpSpan): SpanRole {
  const a = span.attributes;
  const override = str(a[OVERRIDE.role]);
  if (override === 'plan' || override === 'none') return override;
  if (override === 'step') return 'chain';
  const op = str(a['gen_ai.operation.name']);
  const kind = str(a['openinference.span.kind'])?.toUpperCase();
  const aiSdk = str(a['ai.operationId']);
  if (aiSdk !== undefined && op === undefined && kind === undefined) {
    // the Vercel AI SDK's telemetry: a generate/stream call is an agent, its provider calls LLM calls
    if (AI_SDK_LLM.test(aiSdk)) return 'llm';
    if (aiSdk === 'ai.toolCall') return 'tool';
    if (AI_SDK_AGENT.test(aiSdk)) return 'agent';
  }
  if ((op && WORKFLOW_OPERATIONS.has(op)) || a['gen_ai.workflow.name'] !== undefined) return 'plan';
  if ((op && AGENT_OPERATIONS.has(op)) || kind === 'AGENT') return 'agent';
  if ((op && TOOL_OPERATIONS.has(op)) || kind === 'TOOL') return 'tool';
  if ((op && LLM_OPERATIONS.has(op)) || kind === 'LLM' || kind === 'EMBEDDING') return 'llm';
  if (kind === 'CHAIN') return 'chain';
  return 'none';
}

/** Whether a span carries anything the mapping reads (the others only link the tree). */
export function isRecognised(span: OtlpSpan): boolean {
  return roleOf(span) !== 'none' || span.attributes[OVERRIDE.planId] !== undefined;
}

function agentNameOf(span: OtlpSpan): string | undefined {
  return first(span.attributes, 'gen_ai.agent.name', 'agent.name', 'gen_ai.workflow.name', 'ai.telemetry.functionId');
}

function clip(text: string, max: number): string {
  return text.length > max ? text.slice(0, max) : text;
}

function inputOf(span: OtlpSpan): string | undefined {
  const a = span.attributes;
  const text =
    first(a, 'gen_ai.input.messages', 'input.value', 'gen_ai.prompt', 'gen_ai.tool.call.arguments', 'ai.prompt') ??
    span.events
      .map((e) => (e.name === 'gen_ai.content.prompt' ? str(e.attributes['gen_ai.prompt']) : undefined))
      .find(Boolean);
  return text === undefined ? undefined : clip(text, MAX_CAPTURED_CHARS);
}

function outputOf(span: OtlpSpan): string | undefined {
  const a = span.attributes;
  const text =
    first(
      a,
      'gen_ai.output.messages',
      'output.value',
      'gen_ai.completion',
      'gen_ai.tool.call.result',
      'ai.response.text',
      'ai.toolCall.result',
    ) ??
    span.events
      .map((e) => (e.name === 'gen_ai.content.completion' ? str(e.attributes['gen_ai.completion']) : undefined))
      .find(Boolean);
  return text === undefined ? undefined : clip(text, MAX_CAPTURED_CHARS);
}

function errorOf(span: OtlpSpan): string {
  const exception = span.events.find((e) => e.name === 'exception');
  const type = exception ? str(exception.attributes['exception.type']) : undefined;
  const message = exception ? str(exception.attributes['exception.message']) : undefined;
  const thrown = [type, message].filter(Boolean).join(': ');
  return clip(
    span.statusMessage || thrown || str(span.attributes['error.type']) || 'the span ended with status ERROR',
    10_000,
  );
}

/** An external id from a user's value: kept when valid, else a digest of it. */
function externalId(value: string, prefix: string): string {
  return EXTERNAL_ID_PATTERN.test(value)
    ? value
    : `${prefix}-${createHash('sha256').update(value).digest('hex').slice(0, 40)}`;
}

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

/** The event kinds of one span: each takes its own 16 bytes of the span's digest. */
const SLOT: Record<PlanEvent['type'], number> = {
  'plan.created': 0,
  'step.started': 0,
  'plan.finalized': 1,
  'step.completed': 1,
  'step.failed': 1,
  'step.skipped': 1,
  'handoff.recorded': 2,
  'plan.decision': 3,
  'checkpoint.saved': 3,
};

/**
 * The ids of one span's events: UUIDs (version 8, RFC 9562) cut from one SHA-512 digest of the
 * plan and span ids, 16 bytes per kind of event, so a retried span gives the same ids.
 */
export function derivedEventIds(planId: string, spanKey: string): (type: PlanEvent['type']) => string {
  const h = createHash('sha512').update(planId).update('\u0000').update(spanKey).digest();
  return (type) => {
    const at = SLOT[type] * 16;
    let x = '';
    for (let i = 0; i < 16; i++) {
      const byte = i === 6 ? (h[at + i] & 0x0f) | 0x80 : i === 8 ? (h[at + i] & 0x3f) | 0x80 : h[at + i];
      x += HEX[byte];
      if (i === 3 || i === 5 || i === 7 || i === 9) x += '-';
    }
    return x;
  };
}

const EARLIEST_MS = Date.UTC(1000, 0, 1);
const LATEST_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

/** ISO-8601 of a time in ns, in the range every database stores; a run's events share a few instants. */
function isoOf(ns: bigint, memo: Map<number, string>): string {
  const ms = Math.min(Math.max(Number(ns / 1_000_000n), EARLIEST_MS), LATEST_MS);
  let iso = memo.get(ms);
  if (iso === undefined) {
    iso = new Date(ms).toISOString();
    memo.set(ms, iso);
  }
  return iso;
}

/** Spans in a fixed order whatever order they came in: by start, then span id. */
function byStart(a: OtlpSpan, b: OtlpSpan): number {
  return a.startNs < b.startNs
    ? -1
    : a.startNs > b.startNs
      ? 1
      : a.spanId < b.spanId
        ? -1
        : a.spanId > b.spanId
          ? 1
          : 0;
}

/**
 * One copy per span id: of duplicates, the one sorting first by its JSON text, so the choice does
 * not depend on arrival order.
 */
function distinct(spans: readonly OtlpSpan[]): OtlpSpan[] {
  const byId = new Map<string, { span: OtlpSpan; key: string }>();
  const keyOf = (s: OtlpSpan) => JSON.stringify(s, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
  for (const span of spans) {
    const seen = byId.get(span.spanId);
    if (!seen) {
      byId.set(span.spanId, { span, key: '' });
      continue;
    }
    if (seen.key === '') seen.key = keyOf(seen.span);
    const key = keyOf(span);
    if (key < seen.key) byId.set(span.spanId, { span, key });
  }
  return [...byId.values()].map((v) => v.span).sort(byStart);
}

interface Step {
  span: OtlpSpan;
  role: SpanRole;
  stepId: string;
  agentId: string;
  inputTokens: number;
  outputTokens: number;
  model?: string;
  /** An LLM span under it reported tokens. */
  counted: boolean;
}

/**
 * Maps all the spans of one trace (in any order, duplicates allowed) to plans:
 * - the plan: each outermost workflow/plan span (`gen_ai.operation.name` = invoke_workflow, a
 *   `gen_ai.workflow.name`, an OpenInference CHAIN that is the trace's root, or `plan_ledger.role`
 *   = plan); without one, each outermost agent span;
 * - steps: the agent and tool spans under it, and the CHAIN spans right under it (graph nodes);
 *   LLM spans give their tokens and model to the nearest step above them, or become a step when
 *   there is none;
 * - dependsOn: the steps of the same parent that ended before the step started (the latest of
 *   them), the span's links to other steps, and `plan_ledger.depends_on`; only earlier steps (by
 *   start), so the graph has no cycle;
 * - a handoff where an agent step runs under another agent (step or plan) of another name;
 * - step.failed for status ERROR (the status message, else the exception event), plan.finalized
 *   from the plan span's end and status.
 */
export function mapTrace(input: readonly OtlpSpan[], options: MappingOptions): MappedTrace {
  const spans = distinct(input);
  const byId = new Map(spans.map((s) => [s.spanId, s]));
  const roles = new Map(spans.map((s) => [s.spanId, roleOf(s)]));
  const unmapped = new Map<string, number>();
  const skip = (reason: string, n = 1) => unmapped.set(reason, (unmapped.get(reason) ?? 0) + n);
  const parentOf = (s: OtlpSpan): OtlpSpan | undefined => (s.parentSpanId ? byId.get(s.parentSpanId) : undefined);
  // each span's ancestors, nearest first, computed once (a cycle of parent ids ends the chain)
  const chains = new Map<string, OtlpSpan[]>();
  const ancestors = (s: OtlpSpan): OtlpSpan[] => {
    let chain = chains.get(s.spanId);
    if (chain) return chain;
    chain = [];
    const seen = new Set<string>([s.spanId]);
    for (let p = parentOf(s); p && !seen.has(p.spanId); p = parentOf(p)) {
      seen.add(p.spanId);
      chain.push(p);
    }
    chains.set(s.spanId, chain);
    return chain;
  };
  const isRoot = (s: OtlpSpan) => parentOf(s) === undefined;
  const planLike = (s: OtlpSpan) => {
    const role = roles.get(s.spanId);
    return role === 'plan' || (role === 'chain' && isRoot(s) && s.attributes[OVERRIDE.role] === undefined);
  };
  let planSpans = spans.filter((s) => planLike(s) && !ancestors(s).some(planLike));
  if (planSpans.length === 0) {
    const agent = (s: OtlpSpan) => roles.get(s.spanId) === 'agent';
    planSpans = spans.filter((s) => agent(s) && !ancestors(s).some(agent));
  }
  const planOf = new Map<string, OtlpSpan>();
  const planIds = new Set(planSpans.map((p) => p.spanId));
  for (const s of spans) {
    if (planIds.has(s.spanId)) continue;
    const plan = ancestors(s).find((a) => planIds.has(a.spanId));
    if (plan) planOf.set(s.spanId, plan);
  }

  const plans: MappedTrace['plans'] = [];
  let mapped = 0;
  for (const planSpan of planSpans) {
    const result = mapPlan(planSpan, spans, { roles, planOf, ancestors, parentOf, options, skip });
    mapped += result.mapped;
    plans.push({ planId: result.planId, events: result.events });
  }
  for (const s of spans) {
    if (!planIds.has(s.spanId) && !planOf.has(s.spanId))
      skip(roles.get(s.spanId) === 'none' ? 'no GenAI or OpenInference attributes' : 'not under a plan span');
  }
  return { plans, mapped, unmapped };
}

interface PlanContext {
  roles: Map<string, SpanRole>;
  planOf: Map<string, OtlpSpan>;
  ancestors: (s: OtlpSpan) => OtlpSpan[];
  parentOf: (s: OtlpSpan) => OtlpSpan | undefined;
  options: MappingOptions;
  skip: (reason: string, n?: number) => void;
}

function mapPlan(
  planSpan: OtlpSpan,
  spans: OtlpSpan[],
  ctx: PlanContext,
): { planId: string; events: PlanEvent[]; mapped: number } {
  const { roles, planOf, ancestors, options, skip } = ctx;
  const members = spans.filter((s) => planOf.get(s.spanId) === planSpan);
  const overridePlanId = str(planSpan.attributes[OVERRIDE.planId]);
  const planId = overridePlanId
    ? externalId(overridePlanId, 'otlp')
    : planSpan.parentSpanId
      ? `otlp-${planSpan.traceId}-${planSpan.spanId}`
      : `otlp-${planSpan.traceId}`;
  const sessionSource =
    str(planSpan.attributes[OVERRIDE.sessionId]) ??
    [planSpan, ...members]
      .map((s) => first(s.attributes, 'gen_ai.conversation.id', 'session.id', 'ai.telemetry.metadata.sessionId'))
      .find(Boolean);
  const sessionId = sessionSource ? externalId(sessionSource, 'otlp') : `otlp-${planSpan.traceId}`;
  const planAgent = agentNameOf(planSpan) ?? first(planSpan.attributes, 'service.name') ?? 'agent';

  // steps: agent and tool spans, CHAIN spans right under the plan; LLM spans fold into the nearest step
  const isStepSpan = (s: OtlpSpan) => {
    const role = roles.get(s.spanId);
    if (role === 'agent' || role === 'tool') return true;
    // graph nodes; LangGraph's own __start__ / __end__ nodes are not steps of the run
    if (role === 'chain')
      return s.attributes[OVERRIDE.role] === 'step' || (ctx.parentOf(s) === planSpan && !/^__.*__$/.test(s.name));
    return false;
  };
  const steps = new Map<string, Step>();
  const stepAbove = (s: OtlpSpan) => ancestors(s).find((a) => steps.has(a.spanId));
  const agentAbove = (s: OtlpSpan): string => {
    for (const a of ancestors(s)) {
      if (a === planSpan) return planAgent;
      if (roles.get(a.spanId) === 'agent' || (roles.get(a.spanId) === 'chain' && ctx.parentOf(a) === planSpan))
        return agentNameOf(a) ?? a.name ?? planAgent;
    }
    return planAgent;
  };
  /** The agent an agent span was called by: the nearest agent span above it (the plan's own, when it is an agent). */
  const callerAgent = (s: OtlpSpan): string | undefined => {
    for (const a of ancestors(s)) {
      if (a === planSpan) return roles.get(a.spanId) === 'agent' ? planAgent : undefined;
      if (roles.get(a.spanId) === 'agent') return agentNameOf(a) ?? a.name;
    }
    return undefined;
  };
  const newStep = (s: OtlpSpan, role: SpanRole): Step => {
    const own = str(s.attributes[OVERRIDE.stepId]);
    const agentId = role === 'agent' || role === 'chain' ? (agentNameOf(s) ?? (s.name || planAgent)) : agentAbove(s);
    return {
      span: s,
      role,
      stepId: own ? externalId(own, 'step') : s.spanId,
      agentId: clip(agentId, 100),
      inputTokens: 0,
      outputTokens: 0,
      counted: false,
    };
  };
  for (const s of members) if (isStepSpan(s)) steps.set(s.spanId, newStep(s, roles.get(s.spanId)!));
  const llms = members.filter((s) => roles.get(s.spanId) === 'llm');
  for (const s of llms) if (!stepAbove(s)) steps.set(s.spanId, newStep(s, 'llm'));
  // LLM spans' usage adds up on their step; a step's own usage counts only when no LLM span under it reported any
  const usageOf = (s: OtlpSpan) => {
    const a = s.attributes;
    return {
      input: tokens(a, 'gen_ai.usage.input_tokens', 'gen_ai.usage.prompt_tokens', 'llm.token_count.prompt'),
      output: tokens(a, 'gen_ai.usage.output_tokens', 'gen_ai.usage.completion_tokens', 'llm.token_count.completion'),
      model: first(a, 'gen_ai.response.model', 'gen_ai.request.model', 'llm.model_name'),
    };
  };
  const add = (step: Step, usage: ReturnType<typeof usageOf>) => {
    step.inputTokens = Math.min(step.inputTokens + (usage.input ?? 0), 2_147_483_647);
    step.outputTokens = Math.min(step.outputTokens + (usage.output ?? 0), 2_147_483_647);
  };
  for (const s of llms) {
    const own = steps.get(s.spanId);
    const above = own ? undefined : stepAbove(s);
    const step = own ?? (above ? steps.get(above.spanId) : undefined);
    if (!step) continue;
    const usage = usageOf(s);
    if (usage.input !== undefined || usage.output !== undefined) {
      add(step, usage);
      step.counted = true;
    }
    if (usage.model) step.model = clip(usage.model, 100);
  }
  for (const step of steps.values()) {
    if (step.role === 'llm') continue;
    const usage = usageOf(step.span);
    if (!step.counted && (usage.input !== undefined || usage.output !== undefined)) add(step, usage);
    if (usage.model && !step.model) step.model = clip(usage.model, 100);
  }

  // by start; of spans started in the same instant, the caller before the callee
  const depth = new Map(members.map((m) => [m.spanId, ancestors(m).length]));
  const depthOf = (s: OtlpSpan) => depth.get(s.spanId) ?? 0;
  let ordered = [...steps.values()].sort(
    (x, y) =>
      (x.span.startNs < y.span.startNs ? -1 : x.span.startNs > y.span.startNs ? 1 : 0) ||
      depthOf(x.span) - depthOf(y.span) ||
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
  const index = new Map(ordered.map((st, i) => [st.span.spanId, i]));
  const byStepId = new Map(ordered.map((st) => [st.stepId, st]));
  // b ran after a: a ended before b started, within the clock's grain
  const precedes = (a: Step, b: Step) =>
    index.get(a.span.spanId)! < index.get(b.span.spanId)! && a.span.endNs <= b.span.startNs + CLOCK_GRAIN_NS;
  const parents = new Map(ordered.map((st) => [st, stepAbove(st.span)?.spanId ?? '']));
  const parentKey = (st: Step) => parents.get(st)!;

  const specs: StepSpec[] = ordered.map((st, i) => {
    const deps = new Set<string>();
    const siblings = ordered.filter((o, j) => j < i && parentKey(o) === parentKey(st) && precedes(o, st));
    for (const c of siblings) if (!siblings.some((d) => d !== c && precedes(c, d))) deps.add(c.stepId);
    for (const link of st.span.links) {
      const target = ordered.find((o) => o.span.spanId === link.spanId);
      if (target && index.get(target.span.spanId)! < i) deps.add(target.stepId);
    }
    const given = st.span.attributes[OVERRIDE.dependsOn];
    const named = Array.isArray(given) ? given.map(str) : (str(given)?.split(',') ?? []);
    for (const raw of named) {
      const target = raw === undefined ? undefined : byStepId.get(raw.trim());
      if (target && index.get(target.span.spanId)! < i) deps.add(target.stepId);
    }
    const tool = first(st.span.attributes, 'gen_ai.tool.name', 'tool.name', 'ai.toolCall.name');
    const spec: StepSpec = {
      stepId: st.stepId,
      index: i,
      agentId: st.agentId,
      task: clip(st.span.name || st.role, 10_000),
      title: clip(tool ?? agentNameOf(st.span) ?? st.span.name ?? st.role, 500),
    };
    const dependsOn = [...deps].slice(0, DEFAULT_LIMITS.maxDependsOn);
    if (dependsOn.length > 0) spec.dependsOn = dependsOn;
    return spec;
  });

  // events, then seq by time (plan.created first, plan.finalized last)
  interface Draft {
    type: PlanEvent['type'];
    ns: bigint;
    rank: number;
    key: string;
    payload: Record<string, unknown>;
  }
  const drafts: Draft[] = [];
  for (const st of ordered) {
    const s = st.span;
    drafts.push({ type: 'step.started', ns: s.startNs, rank: 2, key: s.spanId, payload: { stepId: st.stepId } });
    const usage = {
      inputTokens: st.inputTokens,
      outputTokens: st.outputTokens,
      ...(st.model ? { model: st.model } : {}),
    };
    if (s.statusCode === 2) {
      drafts.push({
        type: 'step.failed',
        ns: s.endNs,
        rank: 3,
        key: s.spanId,
        payload: { stepId: st.stepId, error: errorOf(s), ...usage },
      });
    } else {
      const output = options.captureContent ? outputOf(s) : undefined;
      const content = output === undefined ? {} : { result: clip(output, 2_000), outputContent: output };
      drafts.push({
        type: 'step.completed',
        ns: s.endNs,
        rank: 3,
        key: s.spanId,
        payload: { stepId: st.stepId, ...content, ...usage },
      });
    }
    // a handoff the span declares, else an agent called by another agent: a delegation
    const declared = str(s.attributes[OVERRIDE.handoffFrom]);
    const caller = declared === undefined && st.role === 'agent' ? callerAgent(s) : undefined;
    const handoff =
      declared !== undefined
        ? { from: declared, reason: clip(str(s.attributes[OVERRIDE.handoffReason]) ?? 'handoff', 50) }
        : caller !== undefined && caller !== st.agentId
          ? { from: caller, reason: 'delegation' }
          : undefined;
    if (handoff)
      drafts.push({
        type: 'handoff.recorded',
        ns: s.startNs,
        rank: 1,
        key: s.spanId,
        payload: {
          handoffId: `handoff-${s.spanId}`,
          stepId: st.stepId,
          fromAgentId: clip(handoff.from, 100),
          toAgentId: st.agentId,
          reason: handoff.reason,
        },
      });
  }
  const calledModel = new Set(llms.flatMap((l) => ancestors(l).map((a) => a.spanId)));
  // graph nodes that called a model are agents: control passing from one to the next is a handoff
  const agentNodes = ordered.filter((st) => st.role === 'chain' && calledModel.has(st.span.spanId));
  agentNodes.forEach((st, i) => {
    const before = agentNodes.slice(0, i).filter((o) => precedes(o, st));
    const from = before.at(-1);
    if (from && from.agentId !== st.agentId && st.span.attributes[OVERRIDE.handoffFrom] === undefined)
      drafts.push({
        type: 'handoff.recorded',
        ns: st.span.startNs,
        rank: 1,
        key: st.span.spanId,
        payload: {
          handoffId: `handoff-${st.span.spanId}`,
          stepId: st.stepId,
          fromAgentId: from.agentId,
          toAgentId: st.agentId,
          reason: 'graph_edge',
        },
      });
  });
  // in one instant: handoffs, then starts (callers first), then ends (callees first)
  const nesting = (d: Draft) => (d.rank >= 3 ? -1 : 1) * (depth.get(d.key) ?? 0);
  drafts.sort((x, y) =>
    x.ns < y.ns
      ? -1
      : x.ns > y.ns
        ? 1
        : x.rank - y.rank || nesting(x) - nesting(y) || (x.key < y.key ? -1 : x.key > y.key ? 1 : 0),
  );
  const query = (options.captureContent ? inputOf(planSpan) : undefined) ?? (planSpan.name || `${planAgent} run`);
  const finalStatus = planSpan.statusCode === 2 ? 'failed' : 'completed';
  const all: Draft[] = [
    {
      type: 'plan.created',
      ns: planSpan.startNs,
      rank: 0,
      key: planSpan.spanId,
      payload: { query: clip(query, MAX_CAPTURED_CHARS), steps: specs },
    },
    ...drafts,
    {
      type: 'plan.finalized',
      ns: planSpan.endNs,
      rank: 4,
      key: planSpan.spanId,
      payload:
        finalStatus === 'failed' ? { status: 'failed', failureReason: errorOf(planSpan) } : { status: 'completed' },
    },
  ];
  const idsOf = new Map<string, (type: PlanEvent['type']) => string>();
  const times = new Map<number, string>();
  const events = all.map((d, seq) => {
    let ids = idsOf.get(d.key);
    if (!ids) idsOf.set(d.key, (ids = derivedEventIds(planId, d.key)));
    return {
      specVersion: 1,
      eventId: ids(d.type),
      type: d.type,
      planId,
      sessionId,
      seq,
      occurredAt: isoOf(d.ns, times),
      payload: d.payload,
    } as unknown as PlanEvent;
  });
  const llmsMapped = llms.filter((s) => !steps.has(s.spanId)).length;
  const others = members.length - steps.size - llmsMapped;
  if (others > 0) skip('inside a plan but neither an agent, tool nor LLM span', others);
  return { planId, events, mapped: 1 + ordered.length + llmsMapped };
}
