import { derivedId } from '../projection/derived-id';
import {
  ENTITY,
  ExecutionPlanRow,
  PlanAgentRow,
  PlanDecisionRow,
  PlanHandoffRow,
  PlanStepRow,
  SessionRow,
  WorkflowCheckpointRow,
  WorkflowDagRow,
} from '../entities';
import { PROJECTION_TABLES, STEPS_OF_AGENT } from '../plan-tables';
import type { PlanChanges, PlanRows } from '../projection/plan-projection';
import type { RowStore } from '../sql/sql-dialect';

/** Columns a plan's events change after plan.created; the others are written once. */
const PLAN_UPDATE = [
  'status',
  'summary',
  'failureReason',
  'totalSteps',
  'completedSteps',
  'failedSteps',
  'skippedSteps',
  'totalInputTokens',
  'totalOutputTokens',
  'totalCost',
  'unpricedSteps',
  'approvalStatus',
  'updatedAt',
  'completedAt',
  'deletedAt',
] as const;
/** Columns step events change; the definition columns change only when an edit replaces the steps. */
const STEP_UPDATE = [
  'agentId',
  'status',
  'result',
  'error',
  'outputContent',
  'outputEventId',
  'model',
  'inputTokens',
  'outputTokens',
  'provider',
  'cacheReadTokens',
  'cacheWriteTokens',
  'reasoningTokens',
  'reportedCost',
  'cost',
  'costSource',
  'priceRef',
  'startedAt',
  'completedAt',
  'deletedAt',
] as const;
const HANDOFF_UPDATE = [
  'stepId',
  'stepKey',
  'fromAgentId',
  'toAgentId',
  'reason',
  'explanation',
  'timestamp',
  'deletedAt',
] as const;
const CHECKPOINT_UPDATE = ['layer', 'state', 'createdAt', 'deletedAt'] as const;

/**
 * The rows one transaction writes for the plans it touched, collected plan by plan and written
 * table by table: one statement (or one chunk) per table and kind of write, whatever the number
 * of plans. New and rebuilt plans are inserted whole; a plan whose events were applied
 * incrementally gets only the rows they changed.
 */
export class PlanWrites {
  private readonly rebuilt: string[] = [];
  private readonly replaced: string[] = [];
  private readonly insertPlans: ExecutionPlanRow[] = [];
  private readonly updatePlans: ExecutionPlanRow[] = [];
  private readonly insertSteps: PlanStepRow[] = [];
  private readonly updateSteps: PlanStepRow[] = [];
  private readonly insertHandoffs: PlanHandoffRow[] = [];
  private readonly upsertHandoffs: PlanHandoffRow[] = [];
  private readonly decisions: PlanDecisionRow[] = [];
  private readonly insertDags: WorkflowDagRow[] = [];
  private readonly upsertDags: WorkflowDagRow[] = [];
  private readonly insertCheckpoints: WorkflowCheckpointRow[] = [];
  private readonly upsertCheckpoints: WorkflowCheckpointRow[] = [];
  private readonly insertAgents: PlanAgentRow[] = [];
  private readonly upsertAgents: PlanAgentRow[] = [];
  /** `plan_agents` ids of agents a step left: deleted unless a step of the plan is still given to them. */
  private readonly leftAgents: string[] = [];
  private readonly sessions = new Map<string, SessionRow>();
  /** Rows as read before this transaction's events, by key: what an UPDATE may leave out (SQLite). */
  private readonly storedPlans = new Map<string, ExecutionPlanRow>();
  private readonly storedSteps = new Map<string, PlanStepRow>();

  /** Plans whose rows this transaction writes. */
  get plans(): number {
    return this.insertPlans.length + this.updatePlans.length;
  }

  /** Rows of a plan rebuilt from its whole log: its stored rows are replaced. */
  addRebuilt(rows: PlanRows, deletedAt: Date | null): void {
    this.rebuilt.push(rows.plan.id);
    const agents = [...new Set(rows.steps.map((s) => s.agentId))];
    this.addWhole({ ...rows, isNew: true, stepsReplaced: false, newSteps: [], agents, leftAgents: [] }, deletedAt);
  }

  /** What applying new events changed (PlanProjection.changes). */
  add(changes: PlanChanges, deletedAt: Date | null): void {
    if (changes.isNew) return this.addWhole(changes, deletedAt);
    this.updatePlans.push(stamped(changes.plan, deletedAt));
    this.session(changes.plan, changes.sessionActivity);
    if (changes.stored) {
      this.storedPlans.set(changes.plan.id, changes.stored.plan);
      for (const step of changes.stored.steps.values()) this.storedSteps.set(step.id, step);
    }
    if (changes.stepsReplaced) {
      this.replaced.push(changes.plan.id);
      pushStamped(this.insertSteps, changes.steps, deletedAt);
      pushStamped(this.insertHandoffs, changes.handoffs, deletedAt);
      pushAgentRows(this.insertAgents, changes.plan, changes.agents);
      if (changes.dag) this.upsertDags.push(stamped(changes.dag, deletedAt));
    } else {
      pushStamped(this.insertSteps, changes.newSteps, deletedAt);
      pushStamped(this.updateSteps, changes.steps, deletedAt);
      pushStamped(this.upsertHandoffs, changes.handoffs, deletedAt);
      pushAgentRows(this.upsertAgents, changes.plan, changes.agents);
      for (const agentId of changes.leftAgents) this.leftAgents.push(agentRowId(changes.plan.id, agentId));
    }
    pushStamped(this.decisions, changes.decisions, deletedAt);
    pushStamped(this.upsertCheckpoints, changes.checkpoints, deletedAt);
  }

  private addWhole(rows: Omit<PlanChanges, 'dag'> & { dag: WorkflowDagRow | null }, deletedAt: Date | null): void {
    this.insertPlans.push(stamped(rows.plan, deletedAt));
    pushAgentRows(this.insertAgents, rows.plan, rows.agents);
    this.session(rows.plan, rows.sessionActivity);
    pushStamped(this.insertSteps, rows.steps, deletedAt);
    pushStamped(this.insertHandoffs, rows.handoffs, deletedAt);
    pushStamped(this.decisions, rows.decisions, deletedAt);
    if (rows.dag) this.insertDags.push(stamped(rows.dag, deletedAt));
    pushStamped(this.insertCheckpoints, rows.checkpoints, deletedAt);
  }

  /**
   * A session spans its plans: from its first plan's creation to the last plan-level event of
   * any of them (a plan created, decided on, or finished). Kept as min/max, so order-independent.
   * Step events leave the session row alone: most events then write one row fewer.
   */
  private session(plan: ExecutionPlanRow, activity: Date | null): void {
    if (!activity) return;
    const s = this.sessions.get(plan.sessionId);
    if (!s) this.sessions.set(plan.sessionId, { id: plan.sessionId, createdAt: plan.createdAt, updatedAt: activity });
    else {
      if (plan.createdAt < s.createdAt) s.createdAt = plan.createdAt;
      if (activity > s.updatedAt) s.updatedAt = activity;
    }
  }

  /** Sessions first (plans reference them), then deletes children first, inserts parents first. */
  async write(rows: RowStore): Promise<void> {
    const sessions = [...this.sessions.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    // a session spans plans: writers of its different plans (no shared head lock) may create it at once
    await rows.upsert(ENTITY.session, sessions, {
      key: 'id',
      update: [],
      keep: { createdAt: 'min', updatedAt: 'max' },
      concurrentInserts: true,
    });
    await rows.deleteWhereIn(ENTITY.planAgent, 'planId', [...this.rebuilt, ...this.replaced]);
    for (const t of PROJECTION_TABLES) await rows.deleteWhereIn(t.entity, t.planKey, this.rebuilt);
    await rows.deleteWhereIn(ENTITY.handoff, 'planId', this.replaced);
    await rows.deleteWhereIn(ENTITY.step, 'planId', this.replaced);
    await rows.insert(ENTITY.plan, this.insertPlans);
    await rows.update(ENTITY.plan, this.updatePlans, 'id', PLAN_UPDATE, (p) => this.storedPlans.get(p.id));
    await rows.insert(ENTITY.planAgent, this.insertAgents);
    await rows.upsert(ENTITY.planAgent, this.upsertAgents, { key: 'id', update: [] });
    await rows.insert(ENTITY.step, this.insertSteps);
    await rows.update(ENTITY.step, this.updateSteps, 'id', STEP_UPDATE, (s) => this.storedSteps.get(s.id));
    // once the steps are written: `plan_agents` holds exactly the agents of a plan's steps
    await rows.deleteWhereIn(ENTITY.planAgent, 'id', this.leftAgents, STEPS_OF_AGENT);
    await rows.insert(ENTITY.handoff, this.insertHandoffs);
    await rows.upsert(ENTITY.handoff, this.upsertHandoffs, { key: 'id', update: HANDOFF_UPDATE });
    await rows.insert(ENTITY.decision, this.decisions);
    await rows.insert(ENTITY.dag, this.insertDags);
    await rows.upsert(ENTITY.dag, this.upsertDags, { key: 'workflowId', update: ['dag', 'layers'] });
    await rows.insert(ENTITY.checkpoint, this.insertCheckpoints);
    await rows.upsert(ENTITY.checkpoint, this.upsertCheckpoints, { key: 'id', update: CHECKPOINT_UPDATE });
  }
}

/** Appends the `plan_agents` rows of a plan's agents to `target`. */
function pushAgentRows(target: PlanAgentRow[], plan: ExecutionPlanRow, agents: readonly string[]): void {
  for (const agentId of agents)
    target.push({ id: agentRowId(plan.id, agentId), planId: plan.id, agentId, createdAt: plan.createdAt });
}

/** The id of a plan's `plan_agents` row of an agent. */
function agentRowId(planId: string, agentId: string): string {
  return derivedId(planId, 'agent', agentId);
}

/** Rows written for a plan retention already soft-deleted stay soft-deleted: a late event does not resurrect it. */
function stamped<T extends { deletedAt: Date | null }>(row: T, deletedAt: Date | null): T {
  return deletedAt && !row.deletedAt ? { ...row, deletedAt } : row;
}

/** Appends `rows` to `target`, each `stamped`. */
function pushStamped<T extends { deletedAt: Date | null }>(
  target: T[],
  rows: readonly T[],
  deletedAt: Date | null,
): void {
  for (const row of rows) target.push(stamped(row, deletedAt));
}
