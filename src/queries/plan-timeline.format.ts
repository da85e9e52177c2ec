import type { PlanView, TimelineEntry } from './plan-timeline.query';
import type { PlanSummary } from './plan-rows';
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
    `tokens:    ${formatInt(plan.inputTokens)} in / ${formatInt(plan.outputTokens)} out`,
    `cost:      ${formatPlanCost(plan)}`,
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
