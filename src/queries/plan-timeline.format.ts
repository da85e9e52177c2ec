import type { PlanView, TimelineEntry } from './plan-timeline.query';
import type { PlanSummary } from './plan-rows';
import { displayMoney, parseMoney } from '../pricing';
import { formatDuration, formatInt, renderTable } from './text-output';

/**
 * `plans show` for a person debugging a failure: a header that says how the plan ended and why,
 * then one line per fact in time order (time, what, agent, tokens, duration, error/detail).
 */
export function formatPlanView(view: PlanView): string[] {
  return [...formatPlanHeader(view.plan, view), '', ...formatTimeline(view.timeline)];
}

/** `fork:      of wf-1 from layer 3 (after checkpoint cp-2); 45 steps inherited` */
function forkLine(forkOf: NonNullable<PlanSummary['forkOf']>, steps?: PlanView['steps']): string {
  const inherited = steps?.filter((s) => s.inheritedFrom !== null).length;
  const after = forkOf.checkpointId ? ` (after checkpoint ${forkOf.checkpointId})` : '';
  return `${`${forkOf.kind}:`.padEnd(11)}of ${forkOf.planId} from layer ${forkOf.layer}${after}${inherited !== undefined ? `; ${inherited} steps inherited` : ''}`;
}

export function formatPlanHeader(
  plan: PlanSummary,
  view?: Pick<PlanView, 'steps'> & Partial<Pick<PlanView, 'source'>>,
): string[] {
  const pending = plan.totalSteps - plan.completedSteps - plan.failedSteps - plan.skippedSteps;
  const lines = [
    `plan ${plan.planId}  ${plan.status.toUpperCase()}  (session ${plan.sessionId})`,
    `query:     ${plan.query}`,
    ...(view?.source?.kind === 'opentelemetry'
      ? [`source:    OpenTelemetry trace${view.source.traceId ? ` ${view.source.traceId}` : ''}`]
      : []),
    ...(plan.forkOf ? [forkLine(plan.forkOf, view?.steps)] : []),
    `steps:     ${plan.totalSteps} total, ${plan.completedSteps} completed, ${plan.failedSteps} failed, ${plan.skippedSteps} skipped, ${pending} not finished`,
    `tokens:    ${formatInt(plan.inputTokens)} in / ${formatInt(plan.outputTokens)} out${view ? usageOfSteps(view.steps) : ''}`,
    `cost:      ${formatPlanCost(plan)}`,
    ...(view ? reportedLine(view.steps) : []),
  ];
  if (plan.approvalStatus) lines.push(`approval:  ${plan.approvalStatus}`);
  const ended = plan.completedAt
    ? `, ended ${plan.completedAt} after ${formatDuration(plan.durationMs)}`
    : ', still running';
  lines.push(`created:   ${plan.createdAt}${ended}`);
  if (plan.failureReason) lines.push(`failure:   ${plan.failureReason}`);
  else if (plan.summary) lines.push(`summary:   ${plan.summary}`);
  for (const s of view?.steps.filter((x) => x.status === 'failed' && x.inheritedFrom === null) ?? []) {
    lines.push(`failed:    step #${s.index} ${s.stepId} (${s.agentId}): ${s.error ?? 'no error recorded'}`);
  }
  return lines;
}

const WHAT: Record<TimelineEntry['kind'], string> = {
  'plan.created': 'plan created',
  'plan.decision': 'decision',
  'step.started': 'started',
  'step.completed': 'completed',
  'step.failed': 'FAILED',
  'step.skipped': 'skipped',
  handoff: 'handoff',
  checkpoint: 'checkpoint',
  'plan.finalized': 'plan finalized',
};

export function formatTimeline(timeline: TimelineEntry[]): string[] {
  const rows = timeline.map((e) => [
    e.at ?? '(no time)',
    e.stepIndex !== null && e.kind.startsWith('step.') ? `#${e.stepIndex} ${WHAT[e.kind]}` : WHAT[e.kind],
    e.agentId ?? '',
    e.inputTokens !== null ? `${formatInt(e.inputTokens)}/${formatInt(e.outputTokens ?? 0)}` : '',
    e.cost !== null ? `$${e.cost}` : e.inputTokens ? 'unpriced' : '',
    e.durationMs !== null ? formatDuration(e.durationMs) : '',
    e.error ? `ERROR: ${e.error} (${e.detail})` : e.detail,
  ]);
  // the last column is not clipped: an error message is what the reader came for
  return renderTable(['TIME', 'WHAT', 'AGENT', 'TOKENS in/out', 'COST USD', 'DURATION', 'DETAIL'], rows, 10_000);
}

/** "$0.0215", and how many steps it leaves out for want of a price: never a silent zero. */
export function formatPlanCost(plan: Pick<PlanSummary, 'cost' | 'unpricedSteps'>): string {
  if (plan.unpricedSteps === 0) return `$${plan.cost} USD`;
  const steps = plan.unpricedSteps === 1 ? '1 step' : `${plan.unpricedSteps} steps`;
  return `$${plan.cost} USD + ${steps} unpriced (no known price for its model)`;
}

/** `, of which cache read 900, cache write 100, reasoning 40`: the parts of the tokens the steps reported. */
function usageOfSteps(steps: PlanView['steps']): string {
  const own = steps.filter((s) => s.inheritedFrom === null);
  const sum = (pick: (s: PlanView['steps'][number]) => number) => own.reduce((n, s) => n + pick(s), 0);
  const parts = [
    ['cache read', sum((s) => s.cacheReadTokens)],
    ['cache write', sum((s) => s.cacheWriteTokens)],
    ['reasoning', sum((s) => s.reasoningTokens)],
  ] as const;
  if (parts.every(([, n]) => n === 0)) return '';
  return `, of which ${parts.map(([what, n]) => `${what} ${formatInt(n)}`).join(', ')}`;
}

/**
 * `reported:  2 steps at the provider's own cost, $0.05; the prices give $0.07 for them`, when a
 * step's reported cost differs from what the prices give for its tokens.
 */
function reportedLine(steps: PlanView['steps']): string[] {
  const differ = steps.filter(
    (s) => s.inheritedFrom === null && s.reportedCost !== null && s.pricedCost !== s.reportedCost,
  );
  if (differ.length === 0) return [];
  const total = (costs: (string | null)[]) =>
    displayMoney(costs.reduce((n, c) => n + (c === null ? 0n : (parseMoney(c) ?? 0n)), 0n));
  const unpriced = differ.filter((s) => s.pricedCost === null).length;
  const count = differ.length === 1 ? '1 step' : `${differ.length} steps`;
  const gap = unpriced > 0 ? ` (${unpriced} of them unpriced)` : '';
  return [
    `reported:  ${count} at the provider's own cost, $${total(differ.map((s) => s.reportedCost))}; the prices give $${total(differ.map((s) => s.pricedCost))} for them${gap}`,
  ];
}
