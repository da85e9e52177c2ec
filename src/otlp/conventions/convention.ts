/**
 * One way of describing agent runs in span attributes: the OpenTelemetry GenAI semantic
 * conventions, OpenInference, the Vercel AI SDK's telemetry. Each is a module implementing
 * `SpanConvention` with its attribute names as named constants, the way each database is one
 * dialect object; conventions.ts lists them and combines their answers. A new framework is one
 * module added to that list.
 */
import type { AttrValue, OtlpSpan } from '../otlp-span';

/** What a span is to the mapping. */
export type SpanRole = 'plan' | 'agent' | 'tool' | 'chain' | 'llm' | 'none';

/**
 * What a model call used, as one convention reports it, in the ledger's meaning: `input` counts
 * every input token, cache reads and writes included; `output` every output token, reasoning
 * included (each convention's module converts its own meaning to this one). Undefined: the span
 * does not say.
 */
export interface SpanUsage {
  input?: number;
  output?: number;
  cacheRead?: number;
  cacheWrite?: number;
  reasoning?: number;
  model?: string;
  /** The model's provider, lower-cased (`openai`, `anthropic`, `gcp.gemini`, ...). */
  provider?: string;
  /** The provider's or instrumentation's own figure for the call, in USD pico-dollars. */
  reportedCost?: bigint;
}

/** Token counts as a convention reports them, before they mean what SpanUsage says. */
export interface RawTokens {
  input?: number;
  output?: number;
  cacheRead?: number;
  cacheWrite?: number;
  reasoning?: number;
}

/**
 * SpanUsage's counts from a convention's raw ones. `inputHoldsCache`: whether the convention's
 * input count already includes the cache reads and writes (the OpenTelemetry conventions and
 * OpenAI: yes; Anthropic's own `input_tokens`: no). A count smaller than its parts cannot hold
 * them, whatever the convention says: the parts are added then. Reasoning tokens are part of the
 * output count unless the output is smaller than they are.
 */
export function normaliseTokens(raw: RawTokens, inputHoldsCache: boolean): SpanUsage {
  const cache = (raw.cacheRead ?? 0) + (raw.cacheWrite ?? 0);
  const input =
    raw.input === undefined && cache === 0
      ? undefined
      : !inputHoldsCache || (raw.input ?? 0) < cache
        ? (raw.input ?? 0) + cache
        : raw.input;
  const output =
    raw.output !== undefined && raw.reasoning !== undefined && raw.output < raw.reasoning
      ? raw.output + raw.reasoning
      : raw.output;
  const usage: SpanUsage = {};
  if (input !== undefined) usage.input = Math.min(input, MAX_TOKENS);
  if (output !== undefined) usage.output = Math.min(output, MAX_TOKENS);
  if (raw.cacheRead) usage.cacheRead = raw.cacheRead;
  if (raw.cacheWrite) usage.cacheWrite = raw.cacheWrite;
  if (raw.reasoning) usage.reasoning = raw.reasoning;
  return usage;
}

/** USD as an attribute gives it (a number or a decimal string), in pico-dollars; undefined when it is not an amount. */
export function usdOf(v: AttrValue | undefined): bigint | undefined {
  const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : NaN;
  if (!Number.isFinite(n) || n < 0 || n >= 1e12) return undefined;
  const [whole, frac = ''] = n.toFixed(12).split('.');
  return BigInt(whole!) * 10n ** 12n + BigInt(frac.padEnd(12, '0'));
}

/**
 * A handoff a span declares: the agent that passed the work on, and a short reason code.
 * `fromNode`: `from` names a graph node (resolved to the agent of the span that is that node,
 * when the trace has one).
 */
export interface DeclaredHandoff {
  from: string;
  reason: string;
  fromNode?: boolean;
}

export interface SpanConvention {
  readonly name: string;
  /**
   * Whether the span carries this convention's own word for what a span is (the attribute that
   * names its kind); a span marked by none is read by the conventions that `defer`.
   */
  marks(span: OtlpSpan): boolean;
  /** Read only when no convention without `defer` marks the span (the AI SDK's spans also carry GenAI usage). */
  readonly defer?: boolean;
  /** The span's role by this convention, or undefined when it does not say. */
  role(span: OtlpSpan): SpanRole | undefined;
  /** The agent the span is (or runs as). */
  agentName(span: OtlpSpan): string | undefined;
  /** The name of the workflow a plan span runs, the agent name of last resort. */
  workflowName(span: OtlpSpan): string | undefined;
  /** The conversation or session the run belongs to. */
  sessionId(span: OtlpSpan): string | undefined;
  usage(span: OtlpSpan): SpanUsage;
  /** The prompt or arguments the span was given (captured only with OTLP_CAPTURE_CONTENT). */
  input(span: OtlpSpan): string | undefined;
  /** What the span produced (captured only with OTLP_CAPTURE_CONTENT). */
  output(span: OtlpSpan): string | undefined;
  /** The tool a tool span ran. */
  tool(span: OtlpSpan): string | undefined;
  /** A handoff the span declares itself. */
  handoff(span: OtlpSpan): DeclaredHandoff | undefined;
  /**
   * The agent a span passes control to when the span only marks a handoff (it is then no step:
   * the handoff belongs to the agent it names).
   */
  handoffTo(span: OtlpSpan): string | undefined;
  /** The span's node id in the framework's agent graph. */
  nodeId(span: OtlpSpan): string | undefined;
}

/** A non-empty string of a scalar attribute. */
export function str(v: AttrValue | undefined): string | undefined {
  if (typeof v === 'string') return v.length > 0 ? v : undefined;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return undefined;
}

/** The first of `keys` the attributes hold as a non-empty value. */
export function first(attrs: Record<string, AttrValue>, keys: readonly string[]): string | undefined {
  for (const k of keys) {
    const v = str(attrs[k]);
    if (v !== undefined) return v;
  }
  return undefined;
}

/** A column holds at most this many tokens (a 32-bit signed integer). */
export const MAX_TOKENS = 2_147_483_647;

/** The first of `keys` holding a token count (a non-negative integer, as a number or a string), capped at MAX_TOKENS. */
export function tokens(attrs: Record<string, AttrValue>, keys: readonly string[]): number | undefined {
  for (const k of keys) {
    const v = attrs[k];
    const n = typeof v === 'number' ? v : typeof v === 'string' ? Number(v) : NaN;
    if (Number.isInteger(n) && n >= 0) return Math.min(n, MAX_TOKENS);
  }
  return undefined;
}

/** The text of the first event named `event` that holds attribute `key`. */
export function eventText(span: OtlpSpan, event: string, key: string): string | undefined {
  for (const e of span.events) {
    if (e.name !== event) continue;
    const text = str(e.attributes[key]);
    if (text) return text;
  }
  return undefined;
}
