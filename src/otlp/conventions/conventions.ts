/**
 * The conventions the mapping reads, in the order their answers are taken, and the readers that
 * combine them: for each question, the first convention that answers (for a span's role, the
 * strongest role any convention gives it). Adding a framework is adding its module here.
 */
import type { OtlpSpan } from '../otlp-span';
import { aiSdkConvention } from './ai-sdk.convention';
import type { DeclaredHandoff, SpanConvention, SpanRole, SpanUsage } from './convention';
import { genAiConvention } from './genai.convention';
import { openInferenceConvention } from './openinference.convention';
import { openLlmetryConvention } from './openllmetry.convention';

export const CONVENTIONS: readonly SpanConvention[] = [
  genAiConvention,
  openInferenceConvention,
  openLlmetryConvention,
  aiSdkConvention,
];

const LEADING = CONVENTIONS.filter((c) => !c.defer);
const DEFERRING = CONVENTIONS.filter((c) => c.defer);

/** Of two conventions' roles for one span, the one earlier here wins. */
const ROLE_STRENGTH: readonly SpanRole[] = ['plan', 'agent', 'tool', 'llm', 'chain'];

/**
 * What a span is by the conventions (the user's `plan_ledger.role` aside: see overrides.ts): the
 * strongest role a convention gives it; a span no convention names but that reports token usage
 * is an LLM call.
 */
export function conventionRole(span: OtlpSpan): SpanRole {
  let known = roles.get(span);
  if (known === undefined) roles.set(span, (known = readRole(span)));
  return known;
}

/** Each span's role, read once. */
const roles = new WeakMap<OtlpSpan, SpanRole>();

function readRole(span: OtlpSpan): SpanRole {
  if (!LEADING.some((c) => c.marks(span)))
    for (const c of DEFERRING) {
      const role = c.role(span);
      if (role !== undefined) return role;
    }
  let best = ROLE_STRENGTH.length;
  for (const c of LEADING) {
    const role = c.role(span);
    if (role !== undefined) best = Math.min(best, ROLE_STRENGTH.indexOf(role));
  }
  // a span that reports token usage is a model call, whatever else it says: its tokens are never dropped
  if (best === ROLE_STRENGTH.length) {
    const usage = usageOf(span);
    if (usage.input !== undefined || usage.output !== undefined) return 'llm';
  }
  return ROLE_STRENGTH[best] ?? 'none';
}

function firstAnswer<T>(ask: (c: SpanConvention) => T | undefined): T | undefined {
  for (const c of CONVENTIONS) {
    const answer = ask(c);
    if (answer !== undefined) return answer;
  }
  return undefined;
}

/** The agent a span is or runs as; the workflow's name when no convention names an agent. */
export const agentNameOf = (span: OtlpSpan): string | undefined =>
  firstAnswer((c) => c.agentName(span)) ?? firstAnswer((c) => c.workflowName(span));
export const sessionIdOf = (span: OtlpSpan): string | undefined => firstAnswer((c) => c.sessionId(span));
export const inputOf = (span: OtlpSpan): string | undefined => firstAnswer((c) => c.input(span));
export const outputOf = (span: OtlpSpan): string | undefined => firstAnswer((c) => c.output(span));
export const toolOf = (span: OtlpSpan): string | undefined => firstAnswer((c) => c.tool(span));
export const declaredHandoffOf = (span: OtlpSpan): DeclaredHandoff | undefined => firstAnswer((c) => c.handoff(span));
export const handoffTargetOf = (span: OtlpSpan): string | undefined => firstAnswer((c) => c.handoffTo(span));
export const graphNodeOf = (span: OtlpSpan): string | undefined => firstAnswer((c) => c.nodeId(span));

/**
 * A span's usage: the token counts of the first convention that reports any, asking first the
 * conventions that mark the span (their meaning of "input" is the span's); the model, provider
 * and reported cost from the first that names them.
 */
export function usageOf(span: OtlpSpan): SpanUsage {
  let known = usages.get(span);
  if (!known) usages.set(span, (known = readUsage(span)));
  return known;
}

/** Each span's usage, read once: the assembler, the tree and the steps all ask. */
const usages = new WeakMap<OtlpSpan, SpanUsage>();

function readUsage(span: OtlpSpan): SpanUsage {
  let usage: SpanUsage | undefined;
  const named: SpanUsage = {};
  const ask = (c: SpanConvention) => {
    const own = c.usage(span);
    if (!usage && (own.input !== undefined || own.output !== undefined)) usage = own;
    named.model ??= own.model;
    named.provider ??= own.provider;
    named.reportedCost ??= own.reportedCost;
  };
  for (const c of CONVENTIONS) if (c.marks(span)) ask(c);
  for (const c of CONVENTIONS) if (!c.marks(span)) ask(c);
  const result: SpanUsage = { ...(usage ?? {}) };
  if (named.model) result.model = named.model;
  if (named.provider) result.provider = named.provider;
  if (named.reportedCost !== undefined) result.reportedCost = named.reportedCost;
  return result;
}
