/**
 * Stage 4 of the mapping: the plan's events, typed drafts first (what, when, from which span),
 * then put in time order and given their seqs and ids. `plan.created` comes first and
 * `plan.finalized` last; in one instant, handoffs, then starts (callers first), then ends
 * (callees first). Event ids are derived from the plan and span ids, so a retried span gives the
 * same ids.
 */
import { createHash } from 'node:crypto';
import type { PlanEvent, StepSpec } from '../../contracts';
import { str } from '../conventions/convention';
import { inputOf, outputOf } from '../conventions/conventions';
import type { OtlpSpan } from '../otlp-span';
import { formatMoney, MAX_MONEY } from '../../pricing/money';
import { clip } from './overrides';
import type { PlanScope, Step } from './plan-steps';
import type { Handoff } from './step-graph';

/** A captured text is cut at this many characters, so one plan's events stay well under the event size limit. */
const MAX_CAPTURED_CHARS = 32_000;

export interface MappingOptions {
  /** OTLP_CAPTURE_CONTENT: store prompts and outputs (query, result, outputContent). */
  captureContent: boolean;
}

/** One event before its place in the plan's sequence is known. */
interface Draft {
  type: PlanEvent['type'];
  ns: bigint;
  /** Order within one instant: 0 plan.created, 1 handoff, 2 start, 3 end, 4 plan.finalized. */
  rank: number;
  /** The span it comes from. */
  key: string;
  payload: Record<string, unknown>;
}

/** Why a span failed: its status message, else its exception event, else its error type. */
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

/** What a step's events say it used: tokens and model always, the other usage fields when there is something to say. */
function usageFields(step: Step): Record<string, unknown> {
  return {
    inputTokens: step.inputTokens,
    outputTokens: step.outputTokens,
    ...(step.model ? { model: step.model } : {}),
    ...(step.provider ? { provider: step.provider } : {}),
    ...(step.cacheReadTokens > 0 ? { cacheReadTokens: step.cacheReadTokens } : {}),
    ...(step.cacheWriteTokens > 0 ? { cacheWriteTokens: step.cacheWriteTokens } : {}),
    ...(step.reasoningTokens > 0 ? { reasoningTokens: step.reasoningTokens } : {}),
    ...(step.reportedCost !== undefined && step.reportedCost <= MAX_MONEY
      ? { reportedCost: formatMoney(step.reportedCost) }
      : {}),
  };
}

function stepDrafts(step: Step, options: MappingOptions): Draft[] {
  const s = step.span;
  const usage = usageFields(step);
  const started: Draft = {
    type: 'step.started',
    ns: s.startNs,
    rank: 2,
    key: step.eventKey,
    payload: { stepId: step.stepId },
  };
  if (s.statusCode === 2)
    return [
      started,
      {
        type: 'step.failed',
        ns: s.endNs,
        rank: 3,
        key: step.eventKey,
        payload: { stepId: step.stepId, error: errorOf(s), ...usage },
      },
    ];
  const output = options.captureContent ? outputOf(s) : undefined;
  const content =
    output === undefined ? {} : { result: clip(output, 2_000), outputContent: clip(output, MAX_CAPTURED_CHARS) };
  return [
    started,
    {
      type: 'step.completed',
      ns: s.endNs,
      rank: 3,
      key: step.eventKey,
      payload: { stepId: step.stepId, ...content, ...usage },
    },
  ];
}

function handoffDraft({ step, from, reason }: Handoff): Draft {
  const s = step.span;
  return {
    type: 'handoff.recorded',
    ns: s.startNs,
    rank: 1,
    key: s.spanId,
    payload: {
      handoffId: `handoff-${s.spanId}`,
      stepId: step.stepId,
      fromAgentId: clip(from, 100),
      toAgentId: step.agentId,
      reason,
    },
  };
}

function planDrafts(scope: PlanScope, specs: StepSpec[], options: MappingOptions): [Draft, Draft] {
  const { planSpan, planAgent } = scope;
  const query = (options.captureContent ? inputOf(planSpan) : undefined) ?? (planSpan.name || `${planAgent} run`);
  const failed = planSpan.statusCode === 2;
  return [
    {
      type: 'plan.created',
      ns: planSpan.startNs,
      rank: 0,
      key: planSpan.spanId,
      payload: { query: clip(query, MAX_CAPTURED_CHARS), steps: specs, traceId: planSpan.traceId },
    },
    {
      type: 'plan.finalized',
      ns: planSpan.endNs,
      rank: 4,
      key: planSpan.spanId,
      payload: failed ? { status: 'failed', failureReason: errorOf(planSpan) } : { status: 'completed' },
    },
  ];
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
  // never drafted from a span: approvals come from executors and reviewers
  'approval.requested': 2,
  'approval.decided': 3,
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

/** The drafts in sequence: by time; in one instant by rank, then nesting, then span id. */
function inSequence(drafts: Draft[], depthOf: (key: string) => number): Draft[] {
  const nesting = (d: Draft) => (d.rank >= 3 ? -1 : 1) * depthOf(d.key);
  return drafts.sort((x, y) =>
    x.ns < y.ns
      ? -1
      : x.ns > y.ns
        ? 1
        : x.rank - y.rank || nesting(x) - nesting(y) || (x.key < y.key ? -1 : x.key > y.key ? 1 : 0),
  );
}

/** The plan's events, in seq order: plan.created, the steps' and handoffs' events by time, plan.finalized. */
export function planEvents(
  scope: PlanScope,
  steps: readonly Step[],
  specs: StepSpec[],
  handoffs: readonly Handoff[],
  options: MappingOptions,
): PlanEvent[] {
  const depth = new Map(scope.members.map((m) => [m.spanId, scope.tree.ancestors(m).length]));
  const body = inSequence(
    [...steps.flatMap((st) => stepDrafts(st, options)), ...handoffs.map(handoffDraft)],
    (key) => depth.get(key) ?? 0,
  );
  const [created, finalized] = planDrafts(scope, specs, options);
  const idsOf = new Map<string, (type: PlanEvent['type']) => string>();
  const times = new Map<number, string>();
  return [created, ...body, finalized].map((d, seq) => {
    let ids = idsOf.get(d.key);
    if (!ids) idsOf.set(d.key, (ids = derivedEventIds(scope.planId, d.key)));
    return {
      specVersion: 1,
      eventId: ids(d.type),
      type: d.type,
      planId: scope.planId,
      sessionId: scope.sessionId,
      seq,
      occurredAt: isoOf(d.ns, times),
      payload: d.payload,
    } as unknown as PlanEvent;
  });
}
