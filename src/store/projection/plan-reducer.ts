import type { PlanEvent, StepSpec, StepUsageFields } from '../../contracts';
import { costColumn, formatMoney, moneyFromColumn, type PriceOverride, priceStep } from '../../pricing';
import type {
  ExecutionPlanRow,
  PlanDecisionRow,
  PlanHandoffRow,
  PlanStepRow,
  WorkflowCheckpointRow,
  WorkflowDagRow,
} from '../entities';
import { dagLayers } from './dag-layers';
import { derivedId } from './derived-id';
import { isVoidedSeq } from './voided-seq';

export type CreatedEvent = Extract<PlanEvent, { type: 'plan.created' }>;

/** Everything stored about one plan. */
export interface PlanRows {
  plan: ExecutionPlanRow;
  /** Time of the latest plan-level event (created, decision, finalized): the session's activity. */
  sessionActivity: Date | null;
  steps: PlanStepRow[];
  handoffs: PlanHandoffRow[];
  decisions: PlanDecisionRow[];
  dag: WorkflowDagRow;
  checkpoints: WorkflowCheckpointRow[];
}

const ZERO_COST = formatMoney(0n);
/** The empty defaults of PlanReducer's fields that most plans never fill: one shared instance, never changed. */
const NONE_KEPT: ReadonlyMap<string, StoredStepPrice> = new Map();
const NONE_REFERENCED: ReadonlyMap<string, PlanStepRow | null> = new Map();
const NONE_MATERIALIZED: ReadonlySet<string> = new Set();
const TERMINAL_PLAN = new Set(['completed', 'failed', 'cancelled']);

/** A plan that ended (finalized, or rejected): later events of it are rare. */
export function planEnded(plan: Pick<ExecutionPlanRow, 'status'>): boolean {
  return TERMINAL_PLAN.has(plan.status);
}
const TERMINAL_STEP = new Set(['completed', 'failed', 'skipped']);

/** What a stored step row says of its usage and the cost fixed for it (PlanReducer.keepPrices). */
export type StoredStepPrice = Pick<
  PlanStepRow,
  | 'stepKey'
  | 'model'
  | 'provider'
  | 'inputTokens'
  | 'outputTokens'
  | 'cacheReadTokens'
  | 'cacheWriteTokens'
  | 'reasoningTokens'
  | 'reportedCost'
  | 'completedAt'
  | 'cost'
  | 'costSource'
  | 'priceRef'
>;

type Finish = Extract<PlanEvent, { type: 'step.completed' | 'step.failed' | 'step.skipped' }>;
type Decision = Extract<PlanEvent, { type: 'plan.decision' }>;

/**
 * The one place that says what an event does to a plan's rows: a plan in memory and its rules.
 * `PlanReducer.create(plan.created)` then `apply(event)` for every other event in canonical order
 * gives the plan's rows (`rows()`): that is the whole-log fold (fold-plan.ts). The store runs the
 * same rules on a plan resumed from its stored rows (plan-projection.ts), so both agree.
 *
 * Counters (steps per status, token totals) are kept up to date as steps change, so a plan's new
 * events never need its other steps. Every event moves `updated_at` to its time if later,
 * including events that change nothing else (a step id the plan does not have); a voided seq
 * (voided-seq.ts) is not an event of the plan and changes nothing. What the events touched is
 * recorded (`touched`), for whoever writes the rows back.
 */
export class PlanReducer {
  protected steps = new Map<string, PlanStepRow>();
  protected readonly handoffs = new Map<string, PlanHandoffRow>();
  protected readonly checkpoints = new Map<string, WorkflowCheckpointRow>();
  protected readonly decisions: PlanDecisionRow[] = [];
  protected dag: WorkflowDagRow | null = null;
  /** Negotiated prices in force for the steps this reducer prices (usePrices). */
  protected overrides: readonly PriceOverride[] = [];
  /** Stored steps whose cost stands while their usage is the same (keepPrices), by step key. */
  protected kept: ReadonlyMap<string, StoredStepPrice> = NONE_KEPT;
  /** Latest plan-level event applied (see PlanRows.sessionActivity). */
  protected sessionActivity: Date | null = null;
  /** What the applied events changed: step and handoff keys, and whether an edit replaced the step list. */
  protected readonly touched = { steps: new Set<string>(), handoffs: new Set<string>(), stepsReplaced: false };
  /**
   * A fork's steps it has no row of, as its ancestors define them (`reference`): the row of the
   * nearest ancestor that has the step, or null when none has it. Shared and empty until the first
   * `reference` (only forks have any).
   */
  protected references: ReadonlyMap<string, PlanStepRow | null> = NONE_REFERENCED;
  /** Steps of a fork that became its own rows from a reference (taken over by their first event); shared and empty until the first. */
  protected materialized: ReadonlySet<string> = NONE_MATERIALIZED;

  protected constructor(readonly plan: ExecutionPlanRow) {}

  /** A plan from its defining plan.created (the first in canonical order, see event-order.ts). */
  static create(created: CreatedEvent): PlanReducer {
    const reducer = new PlanReducer(planRowOf(created));
    reducer.define(created);
    return reducer;
  }

  apply(event: PlanEvent): void {
    if (isVoidedSeq(event)) return; // a seq whose event was refused: it holds the seq, it changes nothing
    const at = new Date(event.occurredAt);
    if (at > this.plan.updatedAt) this.plan.updatedAt = at;
    if (
      (event.type === 'plan.created' || event.type === 'plan.decision' || event.type === 'plan.finalized') &&
      !(this.sessionActivity && this.sessionActivity >= at)
    )
      this.sessionActivity = at;
    switch (event.type) {
      case 'plan.created':
        return; // only the defining plan.created counts (event-order.ts)
      case 'plan.decision':
        return this.decide(event, at);
      case 'step.started': {
        const step = this.step(event.payload.stepId);
        if (!step) return;
        this.changeStep(step, (s) => {
          if (!TERMINAL_STEP.has(s.status)) s.status = 'in_progress';
          s.startedAt ??= at;
          if (event.payload.agentId) s.agentId = event.payload.agentId;
        });
        return this.markExecuting();
      }
      case 'step.completed':
      case 'step.failed':
      case 'step.skipped':
        return this.finishStep(event, at);
      case 'handoff.recorded':
        return this.recordHandoff(event.payload, at);
      case 'checkpoint.saved': {
        const c = event.payload;
        this.checkpoints.set(c.checkpointId, {
          id: derivedId(this.plan.id, 'checkpoint', c.checkpointId),
          workflowId: this.plan.id,
          checkpointKey: c.checkpointId,
          layer: c.layer,
          state: JSON.stringify(c.state),
          createdAt: at,
          deletedAt: this.plan.deletedAt,
        });
        return;
      }
      case 'plan.finalized': {
        const f = event.payload;
        this.plan.status = f.status;
        this.plan.summary = f.summary ?? this.plan.summary;
        this.plan.failureReason = f.failureReason ?? this.plan.failureReason;
        this.plan.completedAt = at;
        return;
      }
    }
  }

  /** Every row of a plan built from its plan.created (which holds all of them). */
  rows(): PlanRows {
    return {
      plan: { ...this.plan },
      sessionActivity: this.sessionActivity,
      steps: this.sortedSteps(),
      handoffs: byId([...this.handoffs.values()]),
      decisions: byId([...this.decisions]),
      dag: this.dag!,
      checkpoints: byId([...this.checkpoints.values()]),
    };
  }

  /** Start from the defining plan.created: its steps, counters and DAG. */
  protected define(created: CreatedEvent): void {
    const at = new Date(created.occurredAt);
    this.sessionActivity = at;
    for (const spec of created.payload.steps) this.steps.set(spec.stepId, this.newStep(spec, at));
    this.defineSteps();
  }

  /**
   * Ancestors' rows of steps a fork refers to and has no row of: `found` among the `lookedUp` keys
   * (the others no ancestor has). A fork's first event of such a step makes it the fork's own row.
   */
  reference(found: readonly PlanStepRow[], lookedUp: readonly string[]): void {
    const own =
      this.references === NONE_REFERENCED
        ? new Map<string, PlanStepRow | null>()
        : (this.references as Map<string, PlanStepRow | null>);
    for (const key of lookedUp) if (!own.has(key)) own.set(key, null);
    for (const row of found) own.set(row.stepKey, row);
    this.references = own;
  }

  /**
   * The step with this key, or undefined when the plan has none. A fork's step that only its
   * ancestors have becomes its own row here, pending, with the ancestor's definition.
   */
  protected step(key: string): PlanStepRow | undefined {
    return this.ownStep(key) ?? this.materialize(key);
  }

  /** The plan's own row of this step, or undefined. */
  protected ownStep(key: string): PlanStepRow | undefined {
    return this.steps.get(key);
  }

  /** A fork's own pending row of a step its ancestors define, or undefined when none does. */
  private materialize(key: string): PlanStepRow | undefined {
    const from = this.references.get(key);
    if (!from) return undefined;
    // the ancestor's index: `plans fork` gives the steps a fork adds indexes past all of its parent's
    const row = this.newStep(specOfStep(from), this.plan.createdAt);
    this.steps.set(key, row);
    if (this.materialized === NONE_MATERIALIZED) this.materialized = new Set();
    (this.materialized as Set<string>).add(key);
    this.plan.totalSteps++;
    this.touched.steps.add(key);
    return row;
  }

  /** Called before an edit replaces the step list, which needs every step of the plan. */
  protected beforeReplacingSteps(): void {}

  /** The row id of a step the plan has a row of (a handoff to a fork's referenced step names none). */
  protected stepIdOf(stepKey: string | null): string | null {
    return stepKey === null ? null : (this.ownStep(stepKey)?.id ?? null);
  }

  protected sortedSteps(): PlanStepRow[] {
    return [...this.steps.values()].sort((a, b) => a.stepIndex - b.stepIndex);
  }

  private recordHandoff(h: Extract<PlanEvent, { type: 'handoff.recorded' }>['payload'], at: Date): void {
    const stepKey = h.stepId ?? null;
    this.handoffs.set(h.handoffId, {
      id: derivedId(this.plan.id, 'handoff', h.handoffId),
      planId: this.plan.id,
      stepId: this.stepIdOf(stepKey),
      stepKey,
      handoffKey: h.handoffId,
      fromAgentId: h.fromAgentId,
      toAgentId: h.toAgentId,
      reason: h.reason,
      explanation: h.explanation ?? null,
      timestamp: at,
      deletedAt: this.plan.deletedAt,
    });
    this.touched.handoffs.add(h.handoffId);
  }

  private newStep(spec: StepSpec, createdAt: Date): PlanStepRow {
    return pendingStep(this.plan, spec, createdAt);
  }

  /** Change one step, keeping the plan's counters in step with it. */
  private changeStep(step: PlanStepRow, change: (s: PlanStepRow) => void): void {
    this.count(step, -1);
    change(step);
    this.count(step, 1);
    this.touched.steps.add(step.stepKey);
  }

  private count(step: PlanStepRow, sign: 1 | -1): void {
    const p = this.plan;
    if (step.status === 'completed') p.completedSteps += sign;
    else if (step.status === 'failed') p.failedSteps += sign;
    else if (step.status === 'skipped') p.skippedSteps += sign;
    p.totalInputTokens += sign * step.inputTokens;
    p.totalOutputTokens += sign * step.outputTokens;
    if (step.cost !== null)
      p.totalCost = formatMoney(moneyFromColumn(p.totalCost)! + BigInt(sign) * moneyFromColumn(step.cost)!);
    if (step.costSource === 'unpriced') p.unpricedSteps += sign;
  }

  /**
   * Overrides (negotiated prices) that price the steps this reducer finishes from now on; without
   * them only reported costs and the bundled table do.
   */
  usePrices(overrides: readonly PriceOverride[]): this {
    this.overrides = overrides;
    return this;
  }

  /**
   * The stored rows of the steps of a plan rebuilt from its log: a step whose event gives the
   * usage its row holds (sameUsage) keeps the row's cost, source and price reference instead of
   * being priced again, so a rebuild leaves historic costs as stored (only a reprice changes them).
   */
  keepPrices(stored: readonly StoredStepPrice[]): this {
    this.kept = new Map(stored.map((s) => [s.stepKey, s]));
    return this;
  }

  /** The usage a step's event reported, and its cost at the prices in force at `at` (fixed here). */
  private priceUsage(s: PlanStepRow, p: StepUsageFields, at: Date): void {
    if (p.provider !== undefined) s.provider = p.provider;
    if (p.cacheReadTokens !== undefined) s.cacheReadTokens = p.cacheReadTokens;
    if (p.cacheWriteTokens !== undefined) s.cacheWriteTokens = p.cacheWriteTokens;
    if (p.reasoningTokens !== undefined) s.reasoningTokens = p.reasoningTokens;
    if (p.reportedCost !== undefined) s.reportedCost = formatMoney(moneyFromColumn(p.reportedCost)!);
    const kept = this.kept.get(s.stepKey);
    if (kept && kept.costSource !== null && sameUsage(kept, s)) {
      const cost = moneyFromColumn(kept.cost);
      s.cost = cost === null ? null : formatMoney(cost);
      s.costSource = kept.costSource;
      s.priceRef = kept.priceRef;
      return;
    }
    const cost = priceStep(s, at, this.overrides);
    s.cost = costColumn(cost);
    s.costSource = cost.source;
    s.priceRef = cost.priceRef;
  }

  /** Any step activity means the plan is running, unless it already ended. */
  private markExecuting(): void {
    if (!planEnded(this.plan)) this.plan.status = 'executing';
  }

  private finishStep(event: Finish, at: Date): void {
    const step = this.step(event.payload.stepId);
    if (!step) return;
    this.changeStep(step, (s) => {
      s.completedAt = at;
      if (event.type === 'step.completed') {
        const p = event.payload;
        Object.assign(s, {
          status: 'completed',
          result: p.result ?? null,
          // the output stays in the event (the log); the row names the event that holds it
          outputContent: null,
          outputEventId: p.outputContent === undefined || p.outputContent === null ? null : event.eventId,
          error: null,
        });
        Object.assign(s, { inputTokens: p.inputTokens, outputTokens: p.outputTokens, model: p.model ?? s.model });
        this.priceUsage(s, p, at);
      } else if (event.type === 'step.failed') {
        const p = event.payload;
        Object.assign(s, { status: 'failed', error: p.error, model: p.model ?? s.model });
        if (p.inputTokens !== undefined) s.inputTokens = p.inputTokens;
        if (p.outputTokens !== undefined) s.outputTokens = p.outputTokens;
        this.priceUsage(s, p, at);
      } else {
        Object.assign(s, { status: 'skipped', result: event.payload.reason ?? null });
      }
    });
    this.markExecuting();
  }

  private decide(event: Decision, at: Date): void {
    const d = event.payload;
    this.decisions.push({
      id: event.eventId,
      planId: this.plan.id,
      sessionId: event.sessionId,
      decision: d.decision,
      modifiedSteps: d.decision === 'edit' && d.steps ? JSON.stringify(d.steps) : null,
      feedback: d.feedback ?? null,
      decidedBy: d.decidedBy ?? null,
      decidedAt: at,
      deletedAt: this.plan.deletedAt,
    });
    if (d.decision === 'reject') {
      this.plan.approvalStatus = 'rejected';
      if (!planEnded(this.plan)) Object.assign(this.plan, { status: 'cancelled', completedAt: at });
      return;
    }
    this.plan.approvalStatus = d.decision === 'edit' ? 'edited' : 'approved';
    if (d.decision === 'edit' && d.steps) this.replaceSteps(d.steps, at);
    this.markExecuting();
  }

  /**
   * An edit gives the new step list. Steps that already ran (not pending) keep their runtime
   * state; one the edit dropped is kept too (it ran, the audit needs it) and moved after the new
   * steps so step indexes stay unique.
   */
  private replaceSteps(specs: StepSpec[], at: Date): void {
    this.beforeReplacingSteps();
    const next = new Map<string, PlanStepRow>();
    let spare = 0;
    for (const spec of specs) {
      const old = this.steps.get(spec.stepId);
      const fresh = this.newStep(spec, old?.createdAt ?? at);
      next.set(spec.stepId, old && old.status !== 'pending' ? { ...old, ...definition(fresh) } : fresh);
      if (spec.index + 1 > spare) spare = spec.index + 1;
    }
    const ran = [...this.steps.values()].filter((s) => s.status !== 'pending' && !next.has(s.stepKey));
    for (const old of ran.sort((a, b) => a.stepIndex - b.stepIndex))
      next.set(old.stepKey, { ...old, stepIndex: spare++ });
    this.steps = next;
    this.touched.stepsReplaced = true;
    this.defineSteps();
  }

  /**
   * The step list was (re)defined: recount, re-point handoffs at the steps that exist now, and
   * draw the DAG. The DAG is the plan as defined (stored once per workflow), so later step events
   * do not rewrite it.
   */
  private defineSteps(): void {
    const steps = this.sortedSteps();
    const p = this.plan;
    Object.assign(p, {
      totalSteps: steps.length,
      completedSteps: 0,
      failedSteps: 0,
      skippedSteps: 0,
      totalInputTokens: 0,
      totalOutputTokens: 0,
      totalCost: ZERO_COST,
      unpricedSteps: 0,
    });
    for (const s of steps) this.count(s, 1);
    for (const h of this.handoffs.values()) h.stepId = this.stepIdOf(h.stepKey);
    const nodes = steps.map((s) => ({
      stepId: s.stepKey,
      index: s.stepIndex,
      agentId: s.agentId,
      dependsOn: JSON.parse(s.dependsOn ?? '[]') as string[],
    }));
    const layers = dagLayers(nodes);
    this.dag = {
      workflowId: p.id,
      dag: JSON.stringify({ steps: nodes, layers }),
      layers: JSON.stringify(layers),
      intent: p.query,
      createdAt: p.createdAt,
      expiresAt: null,
      deletedAt: p.deletedAt,
    };
  }
}

/** The plan row a plan.created defines. */
export function planRowOf(created: CreatedEvent): ExecutionPlanRow {
  const at = new Date(created.occurredAt);
  const p = created.payload;
  const requiresApproval = p.requiresApproval === true;
  return {
    id: created.planId,
    sessionId: created.sessionId,
    query: p.query,
    status: requiresApproval ? 'planning' : 'executing',
    summary: null,
    failureReason: null,
    totalSteps: 0,
    completedSteps: 0,
    failedSteps: 0,
    skippedSteps: 0,
    totalInputTokens: 0,
    totalOutputTokens: 0,
    totalCost: ZERO_COST,
    unpricedSteps: 0,
    requiresApproval,
    approvalStatus: requiresApproval ? 'pending' : null,
    complexity: p.complexity ?? null,
    parentPlanId: p.forkOf?.planId ?? null,
    forkKind: p.forkOf?.kind ?? null,
    forkLayer: p.forkOf?.layer ?? null,
    forkCheckpoint: p.forkOf?.checkpointId ?? null,
    createdAt: at,
    updatedAt: at,
    completedAt: null,
    deletedAt: null,
  };
}

/**
 * Whether a stored step row was priced from the usage a step has now: the same model, provider,
 * token counts, reported cost (as money) and completion time (to the millisecond).
 */
function sameUsage(stored: StoredStepPrice, s: PlanStepRow): boolean {
  return (
    stored.model === s.model &&
    stored.provider === s.provider &&
    Number(stored.inputTokens) === s.inputTokens &&
    Number(stored.outputTokens) === s.outputTokens &&
    Number(stored.cacheReadTokens) === s.cacheReadTokens &&
    Number(stored.cacheWriteTokens) === s.cacheWriteTokens &&
    Number(stored.reasoningTokens) === s.reasoningTokens &&
    moneyFromColumn(stored.reportedCost) === moneyFromColumn(s.reportedCost) &&
    stored.completedAt !== null &&
    s.completedAt !== null &&
    new Date(stored.completedAt).getTime() === s.completedAt.getTime()
  );
}

/** A plan's row of a step as defined and not run yet. */
export function pendingStep(
  plan: Pick<ExecutionPlanRow, 'id' | 'deletedAt'>,
  spec: StepSpec,
  createdAt: Date,
): PlanStepRow {
  return {
    id: derivedId(plan.id, 'step', spec.stepId),
    planId: plan.id,
    stepKey: spec.stepId,
    stepIndex: spec.index,
    agentId: spec.agentId,
    task: spec.task,
    title: spec.title ?? null,
    expectedOutput: spec.expectedOutput ?? null,
    dependsOn: JSON.stringify(spec.dependsOn ?? []),
    status: 'pending',
    result: null,
    error: null,
    outputContent: null,
    outputEventId: null,
    model: null,
    inputTokens: 0,
    outputTokens: 0,
    provider: null,
    cacheReadTokens: 0,
    cacheWriteTokens: 0,
    reasoningTokens: 0,
    reportedCost: null,
    cost: null,
    costSource: null,
    priceRef: null,
    startedAt: null,
    completedAt: null,
    createdAt,
    deletedAt: plan.deletedAt,
  };
}

/** The definition a stored step row holds, as a step list gives it. */
export function specOfStep(
  row: Pick<PlanStepRow, 'stepKey' | 'stepIndex' | 'agentId' | 'task' | 'title' | 'expectedOutput' | 'dependsOn'>,
): StepSpec {
  return {
    stepId: row.stepKey,
    index: Number(row.stepIndex),
    agentId: row.agentId,
    task: row.task,
    ...(row.title !== null && row.title !== undefined ? { title: row.title } : {}),
    ...(row.expectedOutput !== null && row.expectedOutput !== undefined ? { expectedOutput: row.expectedOutput } : {}),
    dependsOn: JSON.parse(row.dependsOn ?? '[]') as string[],
  };
}

/** The descriptive fields of a step an edit may change. */
function definition(s: PlanStepRow): Partial<PlanStepRow> {
  const { stepIndex, agentId, task, title, expectedOutput, dependsOn } = s;
  return { stepIndex, agentId, task, title, expectedOutput, dependsOn };
}

export function byId<T extends { id: string }>(rows: T[]): T[] {
  return rows.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}
