/**
 * Stage 1 of the mapping: the trace as a tree. One copy per span id, a fixed order whatever order
 * the spans came in, each span's role and ancestors, and which spans are plans.
 */
import type { SpanRole } from '../conventions/convention';
import { agentNameOf, handoffTargetOf, usageOf } from '../conventions/conventions';
import type { OtlpSpan } from '../otlp-span';
import { OVERRIDE, roleOf } from './overrides';

/** Spans in a fixed order whatever order they came in: by start, then span id. */
export function byStart(a: OtlpSpan, b: OtlpSpan): number {
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

export class SpanTree {
  /** Distinct spans, by start. */
  readonly spans: OtlpSpan[];
  private readonly byId: Map<string, OtlpSpan>;
  private readonly roles: Map<string, SpanRole>;
  private readonly chains = new Map<string, OtlpSpan[]>();
  private wrappers?: Set<string>;

  constructor(input: readonly OtlpSpan[]) {
    this.spans = distinct(input);
    this.byId = new Map(this.spans.map((s) => [s.spanId, s]));
    this.roles = new Map(this.spans.map((s) => [s.spanId, roleOf(s)]));
  }

  role(s: OtlpSpan): SpanRole {
    return this.roles.get(s.spanId)!;
  }

  parentOf(s: OtlpSpan): OtlpSpan | undefined {
    return s.parentSpanId ? this.byId.get(s.parentSpanId) : undefined;
  }

  /**
   * Whether `s` is a framework's wrapper around agents rather than an agent: an agent span no
   * convention names, with agent spans under it and no model or tool call of its own (every one
   * under it runs in an agent below it), such as the OpenAI Agents SDK's "Agent workflow" span.
   * A wrapper is neither a step nor the end of a handoff. A span that reports usage is never one
   * (its usage is a step's).
   */
  isWrapper(s: OtlpSpan): boolean {
    if (!this.wrappers) {
      const acting = new Set<string>();
      const holding = new Set<string>();
      for (const x of this.spans) {
        const role = this.role(x);
        const agent = this.ancestors(x).find((a) => this.role(a) === 'agent');
        if (agent && (role === 'llm' || (role === 'tool' && handoffTargetOf(x) === undefined)))
          acting.add(agent.spanId);
        if (agent && role === 'agent') holding.add(agent.spanId);
      }
      this.wrappers = new Set(
        this.spans
          .filter(
            (x) =>
              this.role(x) === 'agent' &&
              holding.has(x.spanId) &&
              !acting.has(x.spanId) &&
              agentNameOf(x) === undefined &&
              usageOf(x).input === undefined &&
              usageOf(x).output === undefined,
          )
          .map((x) => x.spanId),
      );
    }
    return this.wrappers.has(s.spanId);
  }

  /** The span's ancestors, nearest first, computed once (a cycle of parent ids ends the chain). */
  ancestors(s: OtlpSpan): OtlpSpan[] {
    let chain = this.chains.get(s.spanId);
    if (chain) return chain;
    chain = [];
    const seen = new Set<string>([s.spanId]);
    for (let p = this.parentOf(s); p && !seen.has(p.spanId); p = this.parentOf(p)) {
      seen.add(p.spanId);
      chain.push(p);
    }
    this.chains.set(s.spanId, chain);
    return chain;
  }

  /**
   * The spans that become plans: each outermost workflow/plan span (or OpenInference CHAIN that is
   * the trace's root); without one, each outermost agent span. A recognised span under none of
   * them (a model call whose framework spans no convention names, say) makes a plan of the top of
   * its tree, so nothing with usage is dropped.
   */
  planSpans(): OtlpSpan[] {
    const plans = this.namedPlanSpans();
    const planIds = new Set(plans.map((p) => p.spanId));
    for (const s of this.spans) {
      if (this.role(s) === 'none' || planIds.has(s.spanId)) continue;
      const chain = this.ancestors(s);
      if (chain.some((a) => planIds.has(a.spanId))) continue;
      const top = chain.at(-1) ?? s;
      planIds.add(top.spanId);
      plans.push(top);
    }
    return plans.sort(byStart);
  }

  private namedPlanSpans(): OtlpSpan[] {
    const planLike = (s: OtlpSpan) => {
      const role = this.role(s);
      return role === 'plan' || (role === 'chain' && !this.parentOf(s) && s.attributes[OVERRIDE.role] === undefined);
    };
    const outermost = (is: (s: OtlpSpan) => boolean) => this.spans.filter((s) => is(s) && !this.ancestors(s).some(is));
    const plans = outermost(planLike);
    return plans.length > 0 ? plans : outermost((s) => this.role(s) === 'agent');
  }

  /** The spans under each plan span (by its span id): those whose nearest plan ancestor it is. */
  membersOf(planSpans: readonly OtlpSpan[]): Map<string, OtlpSpan[]> {
    const planIds = new Set(planSpans.map((p) => p.spanId));
    const members = new Map<string, OtlpSpan[]>(planSpans.map((p) => [p.spanId, []]));
    for (const s of this.spans) {
      if (planIds.has(s.spanId)) continue;
      const plan = this.ancestors(s).find((a) => planIds.has(a.spanId));
      if (plan) members.get(plan.spanId)!.push(s);
    }
    return members;
  }
}
