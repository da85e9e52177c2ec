import type { PlanEvent, StepSpec } from '../../contracts';
import type { ExecutionPlanRow, PlanDecisionRow, PlanHandoffRow, PlanStepRow, WorkflowCheckpointRow, WorkflowDagRow } from '../entities';
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

/** The rows applying some events changed, to write back (see PlanProjection.changes). */
export interface PlanChanges {
  plan: ExecutionPlanRow;
  /** Time of the latest plan-level event applied (created, decision, finalized), or null: the session's activity. */
  sessionActivity: Date | null;
  /** A stored plan: its rows as read, before these events (the plan row, and the steps read by key). */
  stored?: { plan: ExecutionPlanRow; steps: ReadonlyMap<string, PlanStepRow> };
  /** The plan had no rows: insert all of them. */
  isNew: boolean;
  /** An edit replaced the step list: rewrite every step and handoff row of the plan. */
  stepsReplaced: boolean;
  /** All steps when isNew or stepsReplaced, else the changed ones. */
  steps: PlanStepRow[];
  /** All handoffs when isNew or stepsReplaced, else the new or changed ones. */
  handoffs: PlanHandoffRow[];
  decisions: PlanDecisionRow[];
  /** The DAG row when isNew or stepsReplaced (the DAG is the plan's definition), else null. */
  dag: WorkflowDagRow | null;
  checkpoints: WorkflowCheckpointRow[];
}

/** What applying some events to a stored plan needs read first, beyond its plan row. */
export interface ProjectionNeeds {
  /** Step keys the events refer to. */
  stepKeys: string[];
  /** An edit: every step and every handoff of the plan. */
  everyStep: boolean;
}

const TERMINAL_PLAN = new Set(['completed', 'failed', 'cancelled']);

/** A plan that ended (finalized, or rejected): later events of it are rare. */
export function planEnded(plan: Pick<ExecutionPlanRow, 'status'>): boolean {
  return TERMINAL_PLAN.has(plan.status);
}
const TERMINAL_STEP = new Set(['completed', 'failed', 'skipped']);
type Finish = Extract<PlanEvent, { type: 'step.completed' | 'step.failed' | 'step.skipped' }>;
type Decision = Extract<PlanEvent, { type: 'plan.decision' }>;

/**
 * A plan's rows in memory and the one place that decides what an event does to them. The
 * whole-log fold (foldPlan) starts it from plan.created and applies every event; the store starts
 * it from the stored rows and applies only the new events (README, "Store"). Both give the same
 * rows because both run this code on the same events in the same order; the property tests hold
 * them to it.
 *
 * Counters (steps per status, token totals) are kept up to date as steps change, so a stored
 * plan's new events never need its other steps. Every event moves `updated_at` to its time if
 * later, including events that change nothing else (a step id the plan does not have); a voided
 * seq (voided-seq.ts) is not an event of the plan and changes nothing.
 */
export class PlanProjection {
  private steps: Map<string, PlanStepRow>;
  private readonly handoffs = new Map<string, PlanHandoffRow>();
  private readonly checkpoints = new Map<string, WorkflowCheckpointRow>();
  private readonly decisions: PlanDecisionRow[] = [];
  private readonly changedSteps = new Set<string>();
  private readonly changedHandoffs = new Set<string>();
  private dag: WorkflowDagRow | null = null;
  private stepsReplaced = false;
  /** Latest plan-level event applied here (see PlanChanges.sessionActivity). */
  private sessionActivity: Date | null = null;
  /** Step keys read from storage (found or not), or 'all': every step and handoff of the plan is here. */
  private known: Set<string> | 'all';
  /** The stored rows as read (resume, provide), before any event changed them. */
  private readonly stored: { plan: ExecutionPlanRow; steps: Map<string, PlanStepRow> } | undefined;

  private constructor(
    readonly plan: ExecutionPlanRow,
    known: Set<string> | 'all',
    private readonly isNew: boolean,
    keepStored: boolean,
  ) {
    this.steps = new Map();
    this.known = known;
    if (keepStored) this.stored = { plan: { ...plan }, steps: new Map() };
  }

  /** A plan from its defining plan.created (the first in canonical order, see event-order.ts). */
  static create(created: CreatedEvent): PlanProjection {
    const at = new Date(created.occurredAt);
    const p = created.payload;
    const requiresApproval = p.requiresApproval === true;
    const plan: ExecutionPlanRow = {
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
      requiresApproval,
      approvalStatus: requiresApproval ? 'pending' : null,
      complexity: p.complexity ?? null,
      createdAt: at,
      updatedAt: at,
      completedAt: null,
      deletedAt: null,
    };
    const projection = new PlanProjection(plan, 'all', true, false);
    projection.sessionActivity = at;
    for (const spec of p.steps) projection.steps.set(spec.stepId, projection.newStep(spec, at));
    projection.defineSteps();
    return projection;
  }

  /**
   * A stored plan from its row (which it takes over and changes), then the steps (and, for an
   * edit, the handoffs) `needs` asks for through `provide`. `keepStored`: keep a copy of the rows
   * as read, for a database that writes only what changed (PlanChanges.stored).
   */
  static resume(plan: ExecutionPlanRow, keepStored = false): PlanProjection {
    return new PlanProjection(plan, new Set(), false, keepStored);
  }

  /** What the stored rows must provide before `events` can be applied to a resumed plan. */
  static needs(events: Iterable<PlanEvent>): ProjectionNeeds {
    const keys = new Set<string>();
    let everyStep = false;
    for (const e of events) {
      if (isVoidedSeq(e)) continue;
      if (e.type === 'plan.decision') everyStep ||= e.payload.decision === 'edit' && e.payload.steps !== undefined;
      else if (e.type === 'handoff.recorded') {
        if (e.payload.stepId !== undefined) keys.add(e.payload.stepId);
      } else if (e.type !== 'plan.created' && e.type !== 'checkpoint.saved' && e.type !== 'plan.finalized') keys.add(e.payload.stepId);
    }
    return { stepKeys: [...keys], everyStep };
  }

  /** Step keys of `needs` not read yet (empty once every step is here). */
  missing(needs: ProjectionNeeds): ProjectionNeeds {
    if (this.known === 'all') return { stepKeys: [], everyStep: false };
    const known = this.known;
    return { stepKeys: needs.stepKeys.filter((k) => !known.has(k)), everyStep: needs.everyStep };
  }

  /**
   * Stored rows read for `missing(...)`: the steps found among `lookedUp` keys (the others do not
   * exist), or with `handoffs` given, every step and handoff of the plan.
   */
  provide(steps: PlanStepRow[], lookedUp: string[], handoffs?: PlanHandoffRow[]): void {
    if (this.known === 'all') return;
    for (const s of steps) {
      if (this.steps.has(s.stepKey)) continue;
      this.steps.set(s.stepKey, s);
      this.stored?.steps.set(s.stepKey, { ...s });
    }
    if (handoffs) {
      for (const h of handoffs) if (!this.handoffs.has(h.handoffKey)) this.handoffs.set(h.handoffKey, h);
      this.known = 'all';
    } else for (const k of lookedUp) this.known.add(k);
  }

  apply(event: PlanEvent): void {
    if (isVoidedSeq(event)) return; // a seq whose event was refused: it holds the seq, it changes nothing
    const at = new Date(event.occurredAt);
    if (at > this.plan.updatedAt) this.plan.updatedAt = at;
    if ((event.type === 'plan.created' || event.type === 'plan.decision' || event.type === 'plan.finalized') && !(this.sessionActivity && this.sessionActivity >= at)) this.sessionActivity = at;
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
      case 'handoff.recorded': {
        const h = event.payload;
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
        this.changedHandoffs.add(h.handoffId);
        return;
      }
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

  /**
   * The plan row and the step rows held now (all of them for a plan started by `create`, else
   * those read or provided), as they are after the events applied: what a row cache can keep.
   */
  held(): { plan: ExecutionPlanRow; steps: PlanStepRow[] } {
    return { plan: this.plan, steps: [...this.steps.values()] };
  }

  /** Every row of the plan (a plan started by `create`, which holds all of them). */
  rows(): PlanRows {
    if (!this.isNew) throw new Error('rows() needs a plan built from its plan.created');
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

  /** What to write back: everything for a new plan, the rows the applied events touched otherwise. */
  changes(): PlanChanges {
    const all = this.isNew || this.stepsReplaced;
    return {
      plan: this.plan,
      sessionActivity: this.sessionActivity,
      stored: this.stored,
      isNew: this.isNew,
      stepsReplaced: this.stepsReplaced,
      steps: all ? this.sortedSteps() : [...this.changedSteps].map((k) => this.steps.get(k)!),
      handoffs: byId(all ? [...this.handoffs.values()] : [...this.changedHandoffs].map((k) => this.handoffs.get(k)!)),
      decisions: byId([...this.decisions]),
      dag: all ? this.dag : null,
      checkpoints: byId([...this.checkpoints.values()]),
    };
  }

  private step(key: string): PlanStepRow | undefined {
    if (this.known !== 'all' && !this.known.has(key)) throw new Error(`plan ${this.plan.id}: step ${key} was not read before its event was applied`);
    return this.steps.get(key);
  }

  private stepIdOf(stepKey: string | null): string | null {
    return stepKey === null ? null : (this.step(stepKey)?.id ?? null);
  }

  private newStep(spec: StepSpec, createdAt: Date): PlanStepRow {
    return {
      id: derivedId(this.plan.id, 'step', spec.stepId),
      planId: this.plan.id,
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
      model: null,
      inputTokens: 0,
      outputTokens: 0,
      startedAt: null,
      completedAt: null,
      createdAt,
      deletedAt: this.plan.deletedAt,
    };
  }

  /** Change one step, keeping the plan's counters in step with it. */
  private changeStep(step: PlanStepRow, change: (s: PlanStepRow) => void): void {
    this.count(step, -1);
    change(step);
    this.count(step, 1);
    this.changedSteps.add(step.stepKey);
  }

  private count(step: PlanStepRow, sign: 1 | -1): void {
    const p = this.plan;
    if (step.status === 'completed') p.completedSteps += sign;
    else if (step.status === 'failed') p.failedSteps += sign;
    else if (step.status === 'skipped') p.skippedSteps += sign;
    p.totalInputTokens += sign * step.inputTokens;
    p.totalOutputTokens += sign * step.outputTokens;
  }

  private get terminal(): boolean {
    return TERMINAL_PLAN.has(this.plan.status);
  }

  /** Any step activity means the plan is running, unless it already ended. */
  private markExecuting(): void {
    if (!this.terminal) this.plan.status = 'executing';
  }

  private finishStep(event: Finish, at: Date): void {
    const step = this.step(event.payload.stepId);
    if (!step) return;
    this.changeStep(step, (s) => {
      s.completedAt = at;
      if (event.type === 'step.completed') {
        const p = event.payload;
        Object.assign(s, { status: 'completed', result: p.result ?? null, outputContent: p.outputContent ?? null, error: null });
        Object.assign(s, { inputTokens: p.inputTokens, outputTokens: p.outputTokens, model: p.model ?? s.model });
      } else if (event.type === 'step.failed') {
        const p = event.payload;
        Object.assign(s, { status: 'failed', error: p.error, model: p.model ?? s.model });
        if (p.inputTokens !== undefined) s.inputTokens = p.inputTokens;
        if (p.outputTokens !== undefined) s.outputTokens = p.outputTokens;
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
      if (!this.terminal) Object.assign(this.plan, { status: 'cancelled', completedAt: at });
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
    if (this.known !== 'all') throw new Error(`plan ${this.plan.id}: an edit was applied without every step read`);
    const next = new Map<string, PlanStepRow>();
    let spare = 0;
    for (const spec of specs) {
      const old = this.steps.get(spec.stepId);
      const fresh = this.newStep(spec, old?.createdAt ?? at);
      next.set(spec.stepId, old && old.status !== 'pending' ? { ...old, ...definition(fresh) } : fresh);
      if (spec.index + 1 > spare) spare = spec.index + 1;
    }
    const ran = [...this.steps.values()].filter((s) => s.status !== 'pending' && !next.has(s.stepKey));
    for (const old of ran.sort((a, b) => a.stepIndex - b.stepIndex)) next.set(old.stepKey, { ...old, stepIndex: spare++ });
    this.steps = next;
    this.stepsReplaced = true;
    this.defineSteps();
  }

  /**
   * The step list was (re)defined: recount, re-point handoffs at the steps that exist now, and
   * draw the DAG. The DAG is the plan as defined (seed 002 stores it once per workflow), so later
   * step events do not rewrite it.
   */
  private defineSteps(): void {
    const steps = this.sortedSteps();
    const p = this.plan;
    Object.assign(p, { totalSteps: steps.length, completedSteps: 0, failedSteps: 0, skippedSteps: 0, totalInputTokens: 0, totalOutputTokens: 0 });
    for (const s of steps) this.count(s, 1);
    for (const h of this.handoffs.values()) h.stepId = this.stepIdOf(h.stepKey);
    const nodes = steps.map((s) => ({ stepId: s.stepKey, index: s.stepIndex, agentId: s.agentId, dependsOn: JSON.parse(s.dependsOn ?? '[]') as string[] }));
    this.dag = {
      workflowId: p.id,
      dag: JSON.stringify({ steps: nodes, layers: dagLayers(nodes) }),
      intent: p.query,
      createdAt: p.createdAt,
      expiresAt: null,
      deletedAt: p.deletedAt,
    };
  }

  private sortedSteps(): PlanStepRow[] {
    return [...this.steps.values()].sort((a, b) => a.stepIndex - b.stepIndex);
  }
}

/** The descriptive fields of a step an edit may change. */
function definition(s: PlanStepRow): Partial<PlanStepRow> {
  const { stepIndex, agentId, task, title, expectedOutput, dependsOn } = s;
  return { stepIndex, agentId, task, title, expectedOutput, dependsOn };
}

function byId<T extends { id: string }>(rows: T[]): T[] {
  return rows.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}
