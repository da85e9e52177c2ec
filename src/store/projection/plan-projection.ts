import type { PlanEvent } from '../../contracts';
import {
  isFork,
  type ExecutionPlanRow,
  type PlanHandoffRow,
  type PlanStepRow,
  type WorkflowCheckpointRow,
  type WorkflowDagRow,
  type PlanDecisionRow,
} from '../entities';
import { byId, CreatedEvent, PlanReducer, PlanRows, planRowOf } from './plan-reducer';
import { isVoidedSeq } from './voided-seq';

export { planEnded } from './plan-reducer';
export type { CreatedEvent, PlanRows } from './plan-reducer';

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
  /** All steps when isNew or stepsReplaced, else the changed ones (those in `newSteps` excepted). */
  steps: PlanStepRow[];
  /** A stored fork's steps that became its own rows by these events (to insert); empty otherwise. */
  newSteps: PlanStepRow[];
  /** All handoffs when isNew or stepsReplaced, else the new or changed ones. */
  handoffs: PlanHandoffRow[];
  /**
   * Agents of the plan's steps that may have no `plan_agents` row yet: every agent of its steps
   * when isNew or stepsReplaced, else those of changed or new steps no step as read was given to.
   */
  agents: string[];
  /**
   * Agents of the steps as read that no step held now is given to (a step moved to another
   * agent): their `plan_agents` row goes unless a step not read is still given to them. Empty
   * when isNew or stepsReplaced (every row is written anew).
   */
  leftAgents: string[];
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

/**
 * A plan as the store applies events to it: the reducer's rules (plan-reducer.ts) on either a new
 * plan (`create`) or a stored one resumed from its rows (`resume`), plus the protocol that lets a
 * stored plan be read only as far as its new events need:
 * 1. `resume(planRow)`; `needs(events)` says which step rows (or, for an edit, every step and
 *    handoff) the events touch;
 * 2. the store reads those and hands them over with `provide`; a step the events name that was
 *    never provided is a bug, and throws rather than being taken as absent;
 * 3. `apply` the events; `changes()` is what to write back, `held()` what a row cache can keep.
 */
export class PlanProjection extends PlanReducer {
  /** Step keys read from storage (found or not), or 'all': every step and handoff of the plan is here. */
  private known: Set<string> | 'all';
  /** A fork: steps it has no row of are looked up among its ancestors' (missingReferences, reference). */
  private readonly isFork: boolean;
  /** The stored rows as read (resume, provide), before any event changed them. */
  private readonly stored: { plan: ExecutionPlanRow; steps: Map<string, PlanStepRow> } | undefined;
  /**
   * A stored plan's rows as read, before any event changed them: the plan row, and the steps by
   * key (resume, provide). What the rows added to the analytics rollups before (rollup-rows.ts).
   */
  readonly before: { plan: ExecutionPlanRow; steps: Map<string, PlanStepRow> } | undefined;
  /** Agents of the stored steps as read: each has its `plan_agents` row already. */
  private readonly readAgents = new Set<string>();

  private constructor(
    plan: ExecutionPlanRow,
    known: Set<string> | 'all',
    private readonly isNew: boolean,
    keepStored: boolean,
    asRead?: Readonly<ExecutionPlanRow>,
  ) {
    super(plan);
    this.known = known;
    this.isFork = isFork(plan);
    // the rows as read are only ever read: one that nobody changes (a cached row) needs no copy
    const read = (asRead as ExecutionPlanRow | undefined) ?? (keepStored || !isNew ? { ...plan } : undefined);
    if (keepStored) this.stored = { plan: read!, steps: new Map() };
    if (!isNew) this.before = { plan: read!, steps: this.stored?.steps ?? new Map() };
  }

  /** A new plan from its defining plan.created (the first in canonical order, see event-order.ts). */
  static override create(created: CreatedEvent): PlanProjection {
    const projection = new PlanProjection(planRowOf(created), 'all', true, false);
    projection.define(created);
    return projection;
  }

  /**
   * A stored plan from its row (which it takes over and changes), then the steps (and, for an
   * edit, the handoffs) `needs` asks for through `provide`. `keepStored`: keep a copy of the rows
   * as read, for a database that writes only what changed (PlanChanges.stored). `asRead`: a row
   * equal to `plan` that nobody changes (a cached row), kept as the plan row as read instead of a copy.
   */
  static resume(plan: ExecutionPlanRow, keepStored = false, asRead?: Readonly<ExecutionPlanRow>): PlanProjection {
    return new PlanProjection(plan, new Set(), false, keepStored, asRead);
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
      } else if (
        e.type === 'step.started' ||
        e.type === 'step.completed' ||
        e.type === 'step.failed' ||
        e.type === 'step.skipped'
      )
        keys.add(e.payload.stepId);
    }
    return { stepKeys: [...keys], everyStep };
  }

  /** Step keys of `needs` not read yet (empty once every step is here). */
  missing(needs: ProjectionNeeds): ProjectionNeeds {
    if (this.known === 'all') return { stepKeys: [], everyStep: false };
    const known = this.known;
    return { stepKeys: needs.stepKeys.filter((k) => !known.has(k)), everyStep: needs.everyStep };
  }

  /** Every row the plan's events could need is here: nothing to read (a new plan that is not a fork). */
  get complete(): boolean {
    return this.known === 'all' && !this.isFork;
  }

  /**
   * Keys of `needs` a fork must look up among its ancestors' steps: those it has no row of (read
   * already, or known absent) and has not looked up yet. Empty for a plan that is not a fork.
   */
  missingReferences(needs: ProjectionNeeds): string[] {
    if (!this.isFork) return [];
    const known = this.known;
    return needs.stepKeys.filter(
      (k) => (known === 'all' || known.has(k)) && !this.steps.has(k) && !this.references.has(k),
    );
  }

  /**
   * Stored rows read for `missing(...)`: the steps found among `lookedUp` keys (the others do not
   * exist), or with `handoffs` given, every step and handoff of the plan. `asRead`: rows equal to
   * `steps`, in the same order, that nobody changes (cached rows): kept as the rows as read instead
   * of copies.
   */
  provide(
    steps: PlanStepRow[],
    lookedUp: readonly string[],
    handoffs?: PlanHandoffRow[],
    asRead?: readonly Readonly<PlanStepRow>[],
  ): void {
    if (this.known === 'all') return;
    const before = this.stored?.steps ?? this.before?.steps;
    for (let i = 0; i < steps.length; i++) {
      const s = steps[i];
      if (this.steps.has(s.stepKey)) continue;
      this.readAgents.add(s.agentId);
      this.steps.set(s.stepKey, s);
      before?.set(s.stepKey, (asRead?.[i] as PlanStepRow | undefined) ?? { ...s });
    }
    if (handoffs) {
      for (const h of handoffs) if (!this.handoffs.has(h.handoffKey)) this.handoffs.set(h.handoffKey, h);
      this.known = 'all';
    } else for (const k of lookedUp) this.known.add(k);
  }

  /** An edit replaced the step list: the steps held are all of the plan's (steps it dropped are gone). */
  get stepsReplaced(): boolean {
    return this.touched.stepsReplaced;
  }

  /**
   * The plan row and the step rows held now (all of them for a plan started by `create`, else
   * those read or provided), as they are after the events applied: what a row cache can keep.
   * `handoffIds`: ids of the handoff rows written, and whether they are all the plan has (a new
   * plan, or an edit: every handoff is held and written) or only those the events recorded.
   */
  held(): { plan: ExecutionPlanRow; steps: PlanStepRow[]; handoffIds: { ids: string[]; all: boolean } } {
    const all = this.isNew || this.touched.stepsReplaced;
    const ids: string[] = [];
    if (all) for (const h of this.handoffs.values()) ids.push(h.id);
    else for (const k of this.touched.handoffs) ids.push(this.handoffs.get(k)!.id);
    return { plan: this.plan, steps: [...this.steps.values()], handoffIds: { ids, all } };
  }

  /** Every row of the plan (a plan started by `create`, which holds all of them). */
  override rows(): PlanRows {
    if (!this.isNew) throw new Error('rows() needs a plan built from its plan.created');
    return super.rows();
  }

  /** What to write back: everything for a new plan, the rows the applied events touched otherwise. */
  changes(): PlanChanges {
    const all = this.isNew || this.touched.stepsReplaced;
    let steps: PlanStepRow[];
    let newSteps: PlanStepRow[] = [];
    if (all) steps = this.sortedSteps();
    else {
      let keys = [...this.touched.steps];
      if (this.materialized.size > 0) {
        keys = keys.filter((k) => !this.materialized.has(k));
        newSteps = [...this.materialized].map((k) => this.steps.get(k)!);
      }
      steps = keys.map((k) => this.steps.get(k)!);
    }
    return {
      plan: this.plan,
      sessionActivity: this.sessionActivity,
      stored: this.stored,
      isNew: this.isNew,
      stepsReplaced: this.touched.stepsReplaced,
      steps,
      newSteps,
      agents: agentsOf(steps, newSteps, all ? undefined : this.readAgents),
      leftAgents: all ? [] : this.leftAgents(),
      handoffs: byId(all ? [...this.handoffs.values()] : [...this.touched.handoffs].map((k) => this.handoffs.get(k)!)),
      decisions: byId([...this.decisions]),
      dag: all ? this.dag : null,
      checkpoints: byId([...this.checkpoints.values()]),
    };
  }

  /**
   * Agents of the steps as read that no step held now is given to. Steps are only dropped by an
   * edit (when this is not asked) and change agent only by an event that touches them, so unless a
   * touched step left the agent it was read with, every agent read is still held.
   */
  private leftAgents(): string[] {
    if (this.readAgents.size === 0 || !this.touchedStepMovedAgent()) return [];
    const left = new Set(this.readAgents);
    for (const s of this.steps.values()) left.delete(s.agentId);
    return [...left];
  }

  /** A step touched by the applied events is given to another agent than the one it was read with. */
  private touchedStepMovedAgent(): boolean {
    const read = this.before?.steps;
    if (!read) return true;
    for (const k of this.touched.steps) {
      const was = read.get(k);
      if (was && was.agentId !== this.steps.get(k)?.agentId) return true;
    }
    return false;
  }

  protected override ownStep(key: string): PlanStepRow | undefined {
    if (this.known !== 'all' && !this.known.has(key))
      throw new Error(`plan ${this.plan.id}: step ${key} was not read before its event was applied`);
    return this.steps.get(key);
  }

  protected override step(key: string): PlanStepRow | undefined {
    const own = this.ownStep(key);
    if (own || !this.isFork) return own;
    if (!this.references.has(key))
      throw new Error(`plan ${this.plan.id}: step ${key} was not looked up among its ancestors before its event`);
    return super.step(key);
  }

  protected override beforeReplacingSteps(): void {
    if (this.known !== 'all') throw new Error(`plan ${this.plan.id}: an edit was applied without every step read`);
  }
}

/** Distinct agents of these steps, less those in `known`. */
function agentsOf(steps: PlanStepRow[], more: PlanStepRow[], known?: ReadonlySet<string>): string[] {
  let out: Set<string> | undefined;
  for (const s of steps) if (!known?.has(s.agentId)) (out ??= new Set()).add(s.agentId);
  for (const s of more) if (!known?.has(s.agentId)) (out ??= new Set()).add(s.agentId);
  return out ? [...out] : [];
}
