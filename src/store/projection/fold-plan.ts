import type { PlanEvent, StepSpec } from '../../contracts';
import type { ExecutionPlanRow, PlanStepRow, PlanHandoffRow, PlanDecisionRow, WorkflowDagRow, WorkflowCheckpointRow } from '../entities';
import { derivedId } from './derived-id';
import { dagLayers } from './dag-layers';

/** Everything stored about one plan, derived from its events alone. */
export interface PlanRows {
  plan: ExecutionPlanRow;
  steps: PlanStepRow[];
  handoffs: PlanHandoffRow[];
  decisions: PlanDecisionRow[];
  dag: WorkflowDagRow;
  checkpoints: WorkflowCheckpointRow[];
}

const TERMINAL_PLAN = new Set(['completed', 'failed', 'cancelled']);
const TERMINAL_STEP = new Set(['completed', 'failed', 'skipped']);

/** Canonical application order: by seq, ties broken by eventId so the order is total. */
function bySeq(a: PlanEvent, b: PlanEvent): number {
  return a.seq - b.seq || (a.eventId < b.eventId ? -1 : a.eventId > b.eventId ? 1 : 0);
}

/**
 * Fold one plan's events into its rows. Pure and deterministic: the same set of events gives the
 * same rows whatever order they arrived in and however often (duplicates by eventId are dropped).
 * This is what makes the worker idempotent and order-independent: it rebuilds a plan from its
 * whole event log instead of patching rows event by event.
 *
 * Returns null while the plan has no `plan.created` (its other events wait in plan_events).
 * `plan.created` is applied first whatever its seq; the others follow in seq order.
 */
export function foldPlan(events: PlanEvent[]): PlanRows | null {
  const unique = [...new Map(events.map((e) => [e.eventId, e])).values()].sort(bySeq);
  const created = unique.find((e): e is Extract<PlanEvent, { type: 'plan.created' }> => e.type === 'plan.created');
  if (!created) return null;
  const state = new PlanFold(created);
  for (const event of unique) if (event !== created) state.apply(event);
  return state.rows(unique);
}

class PlanFold {
  private readonly plan: ExecutionPlanRow;
  private steps = new Map<string, PlanStepRow>();
  /** Handoffs with the executor's step key, resolved to a step row id once the final steps are known. */
  private readonly handoffs = new Map<string, { row: PlanHandoffRow; stepKey?: string }>();
  private readonly decisions: PlanDecisionRow[] = [];
  private readonly checkpoints = new Map<string, WorkflowCheckpointRow>();

  constructor(private readonly created: Extract<PlanEvent, { type: 'plan.created' }>) {
    const at = new Date(created.occurredAt);
    const p = created.payload;
    const requiresApproval = p.requiresApproval === true;
    this.plan = {
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
    for (const spec of p.steps) this.steps.set(spec.stepId, this.newStep(spec, at));
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
      deletedAt: null,
    };
  }

  private get terminal(): boolean {
    return TERMINAL_PLAN.has(this.plan.status);
  }

  /** Any step activity means the plan is running, unless it already ended. */
  private markExecuting(): void {
    if (!this.terminal) this.plan.status = 'executing';
  }

  apply(event: PlanEvent): void {
    const at = new Date(event.occurredAt);
    switch (event.type) {
      case 'plan.created':
        return; // a second plan.created for the same plan is ignored: the first (by seq) defines it
      case 'plan.decision':
        return this.decide(event, at);
      case 'step.started': {
        const step = this.steps.get(event.payload.stepId);
        if (!step) return;
        if (!TERMINAL_STEP.has(step.status)) step.status = 'in_progress';
        step.startedAt ??= at;
        if (event.payload.agentId) step.agentId = event.payload.agentId;
        return this.markExecuting();
      }
      case 'step.completed':
      case 'step.failed':
      case 'step.skipped':
        return this.finishStep(event, at);
      case 'handoff.recorded': {
        const h = event.payload;
        const row: PlanHandoffRow = {
          id: derivedId(this.plan.id, 'handoff', h.handoffId),
          planId: this.plan.id,
          stepId: null,
          handoffKey: h.handoffId,
          fromAgentId: h.fromAgentId,
          toAgentId: h.toAgentId,
          reason: h.reason,
          explanation: h.explanation ?? null,
          timestamp: at,
          deletedAt: null,
        };
        this.handoffs.set(h.handoffId, { row, stepKey: h.stepId });
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
          deletedAt: null,
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

  private finishStep(event: Extract<PlanEvent, { type: 'step.completed' | 'step.failed' | 'step.skipped' }>, at: Date): void {
    const step = this.steps.get(event.payload.stepId);
    if (!step) return;
    step.completedAt = at;
    if (event.type === 'step.completed') {
      const p = event.payload;
      Object.assign(step, { status: 'completed', result: p.result ?? null, outputContent: p.outputContent ?? null, error: null });
      Object.assign(step, { inputTokens: p.inputTokens, outputTokens: p.outputTokens, model: p.model ?? step.model });
    } else if (event.type === 'step.failed') {
      const p = event.payload;
      Object.assign(step, { status: 'failed', error: p.error, model: p.model ?? step.model });
      if (p.inputTokens !== undefined) step.inputTokens = p.inputTokens;
      if (p.outputTokens !== undefined) step.outputTokens = p.outputTokens;
    } else {
      Object.assign(step, { status: 'skipped', result: event.payload.reason ?? null });
    }
    this.markExecuting();
  }

  private decide(event: Extract<PlanEvent, { type: 'plan.decision' }>, at: Date): void {
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
      deletedAt: null,
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
    const next = new Map<string, PlanStepRow>();
    for (const spec of specs) {
      const old = this.steps.get(spec.stepId);
      const fresh = this.newStep(spec, old?.createdAt ?? at);
      next.set(spec.stepId, old && old.status !== 'pending' ? { ...old, ...definition(fresh) } : fresh);
    }
    let spare = Math.max(-1, ...specs.map((s) => s.index)) + 1;
    const ran = [...this.steps.values()].filter((s) => s.status !== 'pending' && !next.has(s.stepKey));
    for (const old of ran.sort((a, b) => a.stepIndex - b.stepIndex)) next.set(old.stepKey, { ...old, stepIndex: spare++ });
    this.steps = next;
  }

  rows(events: PlanEvent[]): PlanRows {
    const steps = [...this.steps.values()].sort((a, b) => a.stepIndex - b.stepIndex);
    const plan = { ...this.plan };
    plan.totalSteps = steps.length;
    plan.completedSteps = steps.filter((s) => s.status === 'completed').length;
    plan.failedSteps = steps.filter((s) => s.status === 'failed').length;
    plan.skippedSteps = steps.filter((s) => s.status === 'skipped').length;
    plan.totalInputTokens = steps.reduce((sum, s) => sum + s.inputTokens, 0);
    plan.totalOutputTokens = steps.reduce((sum, s) => sum + s.outputTokens, 0);
    plan.updatedAt = new Date(Math.max(...events.map((e) => Date.parse(e.occurredAt))));
    const nodes = steps.map((s) => ({ stepId: s.stepKey, index: s.stepIndex, agentId: s.agentId, dependsOn: JSON.parse(s.dependsOn ?? '[]') as string[] }));
    const dag: WorkflowDagRow = {
      workflowId: plan.id,
      dag: JSON.stringify({ steps: nodes, layers: dagLayers(nodes) }),
      intent: plan.query,
      createdAt: plan.createdAt,
      expiresAt: null,
      deletedAt: null,
    };
    const byKey = <T extends { id: string }>(rows: T[]) => rows.sort((a, b) => (a.id < b.id ? -1 : 1));
    return {
      plan,
      steps,
      // a handoff points at its step only if the step survived every edit (FK to plan_steps)
      handoffs: byKey([...this.handoffs.values()].map(({ row, stepKey }) => ({ ...row, stepId: stepKey && this.steps.has(stepKey) ? this.steps.get(stepKey)!.id : null }))),
      decisions: byKey(this.decisions),
      dag,
      checkpoints: byKey([...this.checkpoints.values()]),
    };
  }
}

/** The descriptive fields of a step an edit may change. */
function definition(s: PlanStepRow): Partial<PlanStepRow> {
  const { stepIndex, agentId, task, title, expectedOutput, dependsOn } = s;
  return { stepIndex, agentId, task, title, expectedOutput, dependsOn };
}
