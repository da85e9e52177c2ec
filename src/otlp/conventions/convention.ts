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

/** What a model call used, as one convention reports it; undefined: the span does not say. */
export interface SpanUsage {
  input?: number;
  output?: number;
  model?: string;
}

/** A handoff a span declares: the agent that passed the work on, and a short reason code. */
export interface DeclaredHandoff {
  from: string;
  reason: string;
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
