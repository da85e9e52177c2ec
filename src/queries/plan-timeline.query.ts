import type { DataSource } from 'typeorm';
import { planSourceOf, type PlanSource } from '../otlp/trace-source';
import {
  ENTITY,
  ExecutionPlanRow,
  PlanDecisionRow,
  PlanEventRow,
  PlanHandoffRow,
  PlanStepRow,
  PlanHeadRow,
  WorkflowCheckpointRow,
} from '../store/entities';
import { pushAll } from '../shared/arrays';
import { dagLayers } from '../store/projection/dag-layers';
import { isFork, loadForkView } from './fork-view.query';
import { NotFoundError } from './query-errors';
import { PlanSummary, StepView, toPlanSummary, toStepView } from './plan-rows';
import { compareText, parseJson, toIso } from './row-normalize';
import { addPricedCosts } from './priced-cost';
import { formatInt } from './text-output';

export interface HandoffView {
  handoffId: string;
  /** The executor's stepId of the step it happened in, when known. */
  stepId: string | null;
  fromAgentId: string;
  toAgentId: string;
  reason: string;
  explanation: string | null;
  at: string;
}

export interface DecisionView {
  decisionId: string;
  decision: PlanDecisionRow['decision'];
  decidedBy: string | null;
  feedback: string | null;
  /** Edit only: how many steps the edited plan has. */
  editedStepCount: number | null;
  /**
   * Edit only: what it changed against the step list before it (the plan.created one, or the
   * previous edit's), by stepId; null when that list is not stored any more.
   */
  stepChanges: StepChanges | null;
  at: string;
}

/** Step ids an edit added, removed, or kept with another agent, task, title, expected output or dependencies. */
export interface StepChanges {
  added: string[];
  removed: string[];
  changed: string[];
  /** What the edit replaced: the steps it removed or changed, as they were before it, in their list's order. */
  replaced: ReplacedStep[];
}

/** A step as it was before an edit replaced it (the audit of what a person changed). */
export interface ReplacedStep {
  stepId: string;
  agentId: string | null;
  task: string | null;
  title: string | null;
  expectedOutput: string | null;
  dependsOn: string[];
}

type SpecLike = {
  stepId?: unknown;
  agentId?: unknown;
  task?: unknown;
  title?: unknown;
  expectedOutput?: unknown;
  dependsOn?: unknown;
};

/** What an edit changed: step lists compared by stepId (the order of the lists does not count). */
export function diffSteps(before: readonly SpecLike[], after: readonly SpecLike[]): StepChanges {
  const key = (s: SpecLike) => String(s.stepId);
  const shape = (s: SpecLike) =>
    JSON.stringify([
      s.agentId ?? null,
      s.task ?? null,
      s.title ?? null,
      s.expectedOutput ?? null,
      Array.isArray(s.dependsOn) ? [...s.dependsOn].map(String).sort() : [],
    ]);
  const old = new Map(before.map((s) => [key(s), shape(s)]));
  const now = new Map(after.map((s) => [key(s), shape(s)]));
  const replaced = before.filter((s) => now.get(key(s)) !== old.get(key(s))).map(toReplaced);
  return {
    added: [...now.keys()].filter((id) => !old.has(id)),
    removed: [...old.keys()].filter((id) => !now.has(id)),
    changed: [...now.keys()].filter((id) => old.has(id) && old.get(id) !== now.get(id)),
    replaced: [...new Map(replaced.map((r) => [r.stepId, r])).values()],
  };
}

const textOrNull = (v: unknown) => (typeof v === 'string' ? v : null);

function toReplaced(s: SpecLike): ReplacedStep {
  return {
    stepId: String(s.stepId),
    agentId: textOrNull(s.agentId),
    task: textOrNull(s.task),
    title: textOrNull(s.title),
    expectedOutput: textOrNull(s.expectedOutput),
    dependsOn: Array.isArray(s.dependsOn) ? s.dependsOn.map(String) : [],
  };
}

export interface CheckpointView {
  checkpointId: string;
  layer: number;
  at: string;
}

export type TimelineKind =
  | 'plan.created'
  | 'plan.decision'
  | 'step.started'
  | 'step.completed'
  | 'step.failed'
  | 'step.skipped'
  | 'handoff'
  | 'checkpoint'
  | 'plan.finalized';

/** One line of `plans show`: what happened when, by which agent, at what cost. */
export interface TimelineEntry {
  /** ISO instant; null for a step skipped without a recorded time (listed last). */
  at: string | null;
  kind: TimelineKind;
  stepId: string | null;
  stepIndex: number | null;
  agentId: string | null;
  inputTokens: number | null;
  outputTokens: number | null;
  /** USD as an exact decimal string, for a finished step or the finalized plan; null when not priced. */
  cost: string | null;
  durationMs: number | null;
  error: string | null;
  detail: string;
}

export interface PlanView {
  plan: PlanSummary;
  steps: StepView[];
  handoffs: HandoffView[];
  decisions: DecisionView[];
  checkpoints: CheckpointView[];
  /**
   * The steps' topological layers (layer 0: no dependency), by the function the resume point and
   * the stored DAG use, so what the console draws is what an executor resumes by.
   */
  layers: string[][];
  timeline: TimelineEntry[];
  /** Sent as events, or mapped from an OpenTelemetry trace (POST /v1/traces). */
  source: PlanSource;
  /**
   * Set while the plan is stalled (running, no event within its deadline: docs/store.md#stalled-plans):
   * since when. Absent otherwise.
   */
  stalledSince?: string;
}

/** Everything stored about one plan, and its timeline. Soft-deleted plans are not found. */
export async function getPlanView(ds: DataSource, planId: string): Promise<PlanView> {
  const plan = await ds.getRepository<ExecutionPlanRow>(ENTITY.plan).findOne({ where: { id: planId } });
  if (!plan) throw new NotFoundError('plan', planId);
  const [stepRows, handoffRows, decisionRows, checkpointRows, created, head] = await Promise.all([
    // a fork's steps include those it inherits or has yet to run, read from its ancestors
    isFork(plan)
      ? loadForkView(ds, plan).then((v) => v.steps)
      : ds.getRepository<PlanStepRow>(ENTITY.step).find({ where: { planId }, order: { stepIndex: 'ASC' } }),
    ds.getRepository<PlanHandoffRow>(ENTITY.handoff).find({ where: { planId } }),
    ds.getRepository<PlanDecisionRow>(ENTITY.decision).find({ where: { planId } }),
    ds.getRepository<WorkflowCheckpointRow>(ENTITY.checkpoint).find({ where: { workflowId: planId } }),
    ds.getRepository<PlanEventRow>(ENTITY.event).findOne({
      select: { payload: true },
      where: { planId, type: 'plan.created' },
      order: { seq: 'ASC', eventId: 'ASC' },
    }),
    ds
      .getRepository<PlanHeadRow>(ENTITY.head)
      .findOne({ select: { planId: true, stalledAt: true }, where: { planId } }),
  ]);
  const steps = stepRows.map(toStepView);
  await addPricedCosts(ds, steps);
  const stepKeyByRowId = new Map(stepRows.map((s) => [s.id, s.stepKey]));
  const handoffs = handoffRows
    .map((h): HandoffView => ({
      handoffId: h.handoffKey,
      stepId: h.stepId ? (stepKeyByRowId.get(h.stepId) ?? null) : null,
      fromAgentId: h.fromAgentId,
      toAgentId: h.toAgentId,
      reason: h.reason,
      explanation: h.explanation ?? null,
      at: toIso(h.timestamp)!,
    }))
    .sort((a, b) => compareText(a.at, b.at) || compareText(a.handoffId, b.handoffId));
  const decisions = decisionRows
    .map((d) => ({
      decisionId: d.id,
      decision: d.decision,
      decidedBy: d.decidedBy ?? null,
      feedback: d.feedback ?? null,
      edited: d.modifiedSteps ? parseJson<SpecLike[]>(d.modifiedSteps, []) : null,
      at: toIso(d.decidedAt)!,
    }))
    .sort((a, b) => compareText(a.at, b.at) || compareText(a.decisionId, b.decisionId));
  // each edit against the list before it: the plan.created one (its event), then the previous edit's
  let before: SpecLike[] | null = decisions.some((d) => d.edited) ? await createdSteps(ds, planId) : null;
  const decisionViews = decisions.map(({ edited, ...d }): DecisionView => {
    const stepChanges = edited && before ? diffSteps(before, edited) : null;
    if (edited) before = edited;
    return { ...d, editedStepCount: edited ? edited.length : null, stepChanges };
  });
  const checkpoints = checkpointRows
    .map((c): CheckpointView => ({ checkpointId: c.checkpointKey, layer: Number(c.layer), at: toIso(c.createdAt)! }))
    .sort((a, b) => a.layer - b.layer || compareText(a.at, b.at) || compareText(a.checkpointId, b.checkpointId));
  const summary = toPlanSummary(plan);
  // a fork's row counts the steps it has rows of; its view counts every step it runs, pending too
  if (isFork(plan)) {
    const own = steps.filter((st) => st.inheritedFrom === null);
    Object.assign(summary, {
      totalSteps: own.length,
      completedSteps: own.filter((st) => st.status === 'completed').length,
      failedSteps: own.filter((st) => st.status === 'failed').length,
      skippedSteps: own.filter((st) => st.status === 'skipped').length,
    });
  }
  return {
    plan: summary,
    steps,
    handoffs,
    decisions: decisionViews,
    checkpoints,
    layers: dagLayers(steps.map((st) => ({ stepId: st.stepId, index: st.index, dependsOn: st.dependsOn }))),
    // inherited steps ran in an ancestor, before this plan existed: not part of its timeline
    timeline: buildTimeline(
      summary,
      steps.filter((st) => st.inheritedFrom === null),
      handoffs,
      decisionViews,
      checkpoints,
    ),
    source: planSourceOf(created ? parseJson<unknown>(created.payload, {}) : undefined),
    ...(head?.stalledAt ? { stalledSince: toIso(head.stalledAt)! } : {}),
  };
}

/** The step list of the plan's stored plan.created event; null when it is gone (or unreadable). */
async function createdSteps(ds: DataSource, planId: string): Promise<SpecLike[] | null> {
  const row = await ds
    .getRepository<PlanEventRow>(ENTITY.event)
    .findOne({ where: { planId, type: 'plan.created' }, order: { seq: 'ASC' } });
  const steps = row ? parseJson<{ steps?: unknown }>(row.payload, {}).steps : undefined;
  return Array.isArray(steps) ? (steps as SpecLike[]) : null;
}

const KIND_ORDER: TimelineKind[] = [
  'plan.created',
  'plan.decision',
  'step.started',
  'handoff',
  'step.completed',
  'step.failed',
  'step.skipped',
  'checkpoint',
  'plan.finalized',
];

const blank = {
  stepId: null,
  stepIndex: null,
  agentId: null,
  inputTokens: null,
  outputTokens: null,
  cost: null,
  durationMs: null,
  error: null,
};

/**
 * Merges the plan's facts into time order. Ties (same millisecond) follow the lifecycle order
 * above, then the step index, so the timeline reads the same on every database.
 */
export function buildTimeline(
  plan: PlanSummary,
  steps: StepView[],
  handoffs: HandoffView[],
  decisions: DecisionView[],
  checkpoints: CheckpointView[],
): TimelineEntry[] {
  const out: TimelineEntry[] = [];
  const approval = plan.requiresApproval ? ', approval required' : '';
  out.push({
    ...blank,
    at: plan.createdAt,
    kind: 'plan.created',
    detail: `${plan.totalSteps} steps${approval}: ${plan.query}`,
  });
  for (const d of decisions) {
    const edited = d.editedStepCount !== null ? ` (${d.editedStepCount} steps)` : '';
    const by = d.decidedBy ? ` by ${d.decidedBy}` : '';
    out.push({
      ...blank,
      at: d.at,
      kind: 'plan.decision',
      agentId: d.decidedBy,
      detail: `${d.decision}${edited}${by}${d.feedback ? `: ${d.feedback}` : ''}`,
    });
  }
  for (const s of steps) pushAll(out, stepEntries(s));
  for (const h of handoffs) {
    const step = h.stepId ? steps.find((s) => s.stepId === h.stepId) : undefined;
    out.push({
      ...blank,
      at: h.at,
      kind: 'handoff',
      stepId: h.stepId,
      stepIndex: step?.index ?? null,
      agentId: h.fromAgentId,
      detail: `${h.fromAgentId} -> ${h.toAgentId} (${h.reason})${h.explanation ? `: ${h.explanation}` : ''}`,
    });
  }
  for (const c of checkpoints)
    out.push({ ...blank, at: c.at, kind: 'checkpoint', detail: `layer ${c.layer} saved (${c.checkpointId})` });
  if (plan.completedAt) {
    const totals = {
      inputTokens: plan.inputTokens,
      outputTokens: plan.outputTokens,
      cost: plan.cost,
      durationMs: plan.durationMs,
    };
    out.push({
      ...blank,
      ...totals,
      at: plan.completedAt,
      kind: 'plan.finalized',
      error: plan.failureReason,
      detail: `${plan.status}${plan.summary ? `: ${plan.summary}` : ''}`,
    });
  }
  return out.sort(
    (a, b) =>
      (a.at === null ? 1 : 0) - (b.at === null ? 1 : 0) ||
      compareText(a.at, b.at) ||
      KIND_ORDER.indexOf(a.kind) - KIND_ORDER.indexOf(b.kind) ||
      (a.stepIndex ?? -1) - (b.stepIndex ?? -1),
  );
}

function stepEntries(s: StepView): TimelineEntry[] {
  const base = { ...blank, stepId: s.stepId, stepIndex: s.index, agentId: s.agentId };
  const name = s.title ?? s.task;
  const out: TimelineEntry[] = [];
  if (s.startedAt) out.push({ ...base, at: s.startedAt, kind: 'step.started', detail: name });
  const tokens = { inputTokens: s.inputTokens, outputTokens: s.outputTokens, cost: s.cost, durationMs: s.durationMs };
  const detail = `${name}${s.model ? ` [${s.model}]` : ''}${usageNote(s)}`;
  if (s.status === 'completed') out.push({ ...base, ...tokens, at: s.completedAt, kind: 'step.completed', detail });
  if (s.status === 'failed')
    out.push({ ...base, ...tokens, at: s.completedAt, kind: 'step.failed', error: s.error, detail });
  if (s.status === 'skipped')
    out.push({ ...base, at: s.completedAt, kind: 'step.skipped', detail: `${name}${s.result ? `: ${s.result}` : ''}` });
  return out;
}

/**
 * What a step's tokens and cost hold beyond in/out, for its timeline line, e.g.
 * `(cache read 900, reasoning 40; reported $0.05, priced $0.07)`; the priced cost only when it differs.
 */
function usageNote(s: StepView): string {
  const parts = [
    s.cacheReadTokens > 0 ? `cache read ${formatInt(s.cacheReadTokens)}` : '',
    s.cacheWriteTokens > 0 ? `cache write ${formatInt(s.cacheWriteTokens)}` : '',
    s.reasoningTokens > 0 ? `reasoning ${formatInt(s.reasoningTokens)}` : '',
  ].filter((p) => p !== '');
  const money: string[] = [];
  if (s.reportedCost !== null) {
    money.push(`reported $${s.reportedCost}`);
    if (s.pricedCost !== s.reportedCost)
      money.push(s.pricedCost === null ? 'unpriced by the table' : `priced $${s.pricedCost}`);
  }
  const text = [parts.join(', '), money.join(', ')].filter((p) => p !== '').join('; ');
  return text === '' ? '' : ` (${text})`;
}
