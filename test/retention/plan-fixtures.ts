import { measurePlans } from '../../src/store/rollups/rollup-measure';
import { RollupDelta } from '../../src/store/rollups/rollup-rows';
import { randomUUID } from 'node:crypto';
import type { Queue } from 'bullmq';
import type { DataSource, QueryRunner } from 'typeorm';
import { RETENTION_JOB } from '../../src/retention/retention-scheduler';
import { ENTITY, PlanStatus } from '../../src/store/entities';
import { dialectOf, sqlDialectOf } from '../../src/store/sql/dialects';
import { PLAN_TABLES, PlanTable } from '../../src/retention/retention-sql';

/**
 * Plans written straight into the tables, with every date under the test's control (the worker
 * stamps plan_heads.updated_at with the wall clock, which a retention test must not depend on).
 */
export interface PlanSpec {
  id: string;
  status: PlanStatus;
  /** @defaultValue 1 h after createdAt for terminal plans, null otherwise */
  completedAt?: Date | null;
  /** @defaultValue 1 h before completedAt, or 1000 days before NOW */
  createdAt?: Date;
  /** plan_heads.updated_at: the last event written. @defaultValue completedAt ?? createdAt */
  lastActivity?: Date;
  /** Soft-deleted at this instant (every row of the plan). @defaultValue null */
  deletedAt?: Date | null;
  /** Only plan_heads + plan_events (plan.created never arrived). @defaultValue false */
  orphan?: boolean;
  /** @defaultValue 3 */
  steps?: number;
  /** @defaultValue 2 */
  checkpoints?: number;
  /** The plan's session. @defaultValue `sess-<id>` (one session per plan) */
  sessionId?: string;
  /** workflow_dags.expires_at. @defaultValue null (the worker never sets it) */
  dagExpiresAt?: Date | null;
  /** A fork (`kind` fork, layer 1) of this plan. @defaultValue none */
  forkOf?: string;
}

export const NOW = new Date('2030-06-01T00:00:00.000Z');
export const DAY = 86_400_000;
export const HOUR = 3_600_000;
export const ago = (ms: number, from = NOW) => new Date(from.getTime() - ms);
export const later = (ms: number, from = NOW) => new Date(from.getTime() + ms);

const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

/** Rows each fixture plan owns in each table (orphans: head and events only). */
export function expectedRows(spec: PlanSpec): Record<PlanTable, number> {
  const steps = spec.steps ?? 3;
  const checkpoints = spec.checkpoints ?? 2;
  if (spec.orphan) return { ...zero(), plan_events: 2, plan_heads: 1 };
  return {
    plan_handoffs: 1,
    plan_decisions: 1,
    workflow_checkpoints: checkpoints,
    workflow_dags: 1,
    plan_steps: steps,
    plan_events: steps + 2,
    execution_plans: 1,
    plan_heads: 1,
  };
}

export function zero(): Record<PlanTable, number> {
  return Object.fromEntries(PLAN_TABLES.map((t) => [t.table, 0])) as Record<PlanTable, number>;
}

export async function insertPlans(ds: DataSource, specs: PlanSpec[]): Promise<void> {
  const rows: Record<string, object[]> = {};
  const add = (entity: string, row: object) => (rows[entity] ??= []).push(row);
  for (const s of specs) {
    const ended = s.completedAt !== undefined ? s.completedAt : TERMINAL.has(s.status) ? ago(DAY) : null;
    const created = s.createdAt ?? (ended ? ago(HOUR, ended) : ago(1000 * DAY));
    const deletedAt = s.deletedAt ?? null;
    const session = s.sessionId ?? `sess-${s.id}`;
    const steps = s.steps ?? 3;
    add(ENTITY.session, { id: session, createdAt: created, updatedAt: created });
    add(ENTITY.head, {
      planId: s.id,
      sessionId: session,
      version: 1,
      eventCount: steps + 2,
      lastSeq: steps + 2,
      appliedSeq: s.orphan ? null : steps + 2,
      pendingEvents: s.orphan ? 2 : 0,
      gapSince: null,
      updatedAt: s.lastActivity ?? ended ?? created,
      deletedAt,
    });
    const events = s.orphan ? 2 : steps + 2;
    for (let i = 0; i < events; i++) {
      add(ENTITY.event, {
        eventId: randomUUID(),
        planId: s.id,
        sessionId: session,
        type: 'step.started',
        seq: i + 1,
        specVersion: 1,
        occurredAt: created,
        recordedAt: created,
        payload: '{}',
        deletedAt,
      });
    }
    if (s.orphan) continue;
    add(ENTITY.plan, {
      id: s.id,
      sessionId: session,
      query: `query of ${s.id}`,
      status: s.status,
      summary: null,
      failureReason: null,
      totalSteps: steps,
      completedSteps: 0,
      failedSteps: 0,
      skippedSteps: 0,
      totalInputTokens: 0,
      totalOutputTokens: 0,
      requiresApproval: true,
      approvalStatus: 'approved',
      complexity: 2,
      ...(s.forkOf ? { parentPlanId: s.forkOf, forkKind: 'fork', forkLayer: 1, forkCheckpoint: 'c0' } : {}),
      createdAt: created,
      updatedAt: ended ?? created,
      completedAt: ended,
      deletedAt,
    });
    const stepIds: string[] = [];
    for (let i = 0; i < steps; i++) {
      const id = randomUUID();
      stepIds.push(id);
      add(ENTITY.step, {
        id,
        planId: s.id,
        stepKey: `s${i}`,
        stepIndex: i,
        agentId: 'agent',
        task: 'task',
        title: null,
        expectedOutput: null,
        dependsOn: i ? `["s${i - 1}"]` : '[]',
        status: 'completed',
        result: null,
        error: null,
        outputContent: 'out',
        model: 'm',
        inputTokens: 1,
        outputTokens: 1,
        startedAt: created,
        completedAt: ended,
        createdAt: created,
        deletedAt,
      });
    }
    add(ENTITY.handoff, {
      id: randomUUID(),
      planId: s.id,
      stepId: stepIds[0] ?? null,
      stepKey: stepIds[0] ? 's0' : null,
      handoffKey: 'h1',
      fromAgentId: 'a',
      toAgentId: 'b',
      reason: 'r',
      explanation: null,
      timestamp: created,
      deletedAt,
    });
    add(ENTITY.decision, {
      id: randomUUID(),
      planId: s.id,
      sessionId: session,
      decision: 'approve',
      modifiedSteps: null,
      feedback: null,
      decidedBy: 'me',
      decidedAt: created,
      deletedAt,
    });
    add(ENTITY.dag, {
      workflowId: s.id,
      dag: '{"steps":[],"layers":[]}',
      intent: 'q',
      createdAt: created,
      expiresAt: s.dagExpiresAt ?? null,
      deletedAt,
    });
    for (let i = 0; i < (s.checkpoints ?? 2); i++) {
      add(ENTITY.checkpoint, {
        id: randomUUID(),
        workflowId: s.id,
        checkpointKey: `c${i}`,
        layer: i,
        state: '{}',
        createdAt: created,
        deletedAt,
      });
    }
  }
  const perStatement = dialectOf(ds) === 'sqlite' ? 40 : 200;
  for (const entity of [
    ENTITY.session,
    ENTITY.head,
    ENTITY.event,
    ENTITY.plan,
    ENTITY.step,
    ENTITY.handoff,
    ENTITY.decision,
    ENTITY.dag,
    ENTITY.checkpoint,
  ]) {
    const list = rows[entity] ?? [];
    for (let i = 0; i < list.length; i += perStatement) {
      const qb = ds
        .createQueryBuilder()
        .insert()
        .into(entity)
        .values(list.slice(i, i + perStatement))
        .updateEntity(false);
      await (entity === ENTITY.session ? qb.orIgnore() : qb).execute();
    }
  }
  // what the worker adds to the analytics rollups for these rows
  const rollups = new RollupDelta();
  await measurePlans(
    ds.manager,
    specs.map((s) => s.id),
    rollups,
    1,
  );
  await rollups.write(sqlDialectOf(ds).rows(ds.manager));
}

/**
 * Rows of one plan per table: live (what reads see), soft-deleted (retired: stamped `deleted_at`,
 * or hidden through the plan's stamped head: a soft delete stamps the plan row and head only),
 * all, or only those stamped themselves (`stamped`).
 */
export async function planRows(
  ds: DataSource,
  planId: string,
  which: 'live' | 'deleted' | 'all' | 'stamped',
): Promise<Record<PlanTable, number>> {
  const retired = which !== 'all' && which !== 'stamped' && (await stampedRows(ds, planId, 'stamped')).plan_heads > 0;
  if (retired) return which === 'live' ? zero() : stampedRows(ds, planId, 'all');
  return stampedRows(ds, planId, which === 'deleted' ? 'stamped' : which);
}

async function stampedRows(
  ds: DataSource,
  planId: string,
  which: 'live' | 'stamped' | 'all',
): Promise<Record<PlanTable, number>> {
  const out = zero();
  for (const spec of PLAN_TABLES) {
    const qb = ds
      .createQueryBuilder()
      .select('COUNT(*)', 'n')
      .from(spec.entity, 't')
      .withDeleted()
      .where(`t.${spec.planKey} = :planId`, { planId });
    if (which === 'live') qb.andWhere('t.deletedAt IS NULL');
    if (which === 'stamped') qb.andWhere('t.deletedAt IS NOT NULL');
    out[spec.table] = Number((await qb.getRawOne())?.n ?? 0);
  }
  return out;
}

/** Empties every plan table (children first) and sessions, so each test starts from nothing. */
export async function wipe(ds: DataSource): Promise<void> {
  for (const spec of PLAN_TABLES) await ds.createQueryBuilder().delete().from(spec.entity).where('1 = 1').execute();
  await ds.createQueryBuilder().delete().from(ENTITY.session).where('1 = 1').execute();
}

export function sum(specs: PlanSpec[]): Record<PlanTable, number> {
  const out = zero();
  for (const s of specs)
    for (const [t, n] of Object.entries(expectedRows(s)) as Array<[PlanTable, number]>) out[t] += n;
  return out;
}

/** Session rows with these ids (0 or 1 each). */
export async function sessionRows(ds: DataSource, ids: string[]): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const id of ids)
    out[id] = Number(
      (
        await ds
          .createQueryBuilder()
          .select('COUNT(*)', 'n')
          .from(ENTITY.session, 's')
          .where('s.id = :id', { id })
          .getRawOne()
      )?.n ?? 0,
    );
  return out;
}

/**
 * A retention run that cannot finish (PostgreSQL): a plan due for retirement, `execution_plans`
 * locked by another transaction, then a retention job on `maintenance`. Resolves once the job is
 * active and its first statement waits on the lock. Roll back the returned runner to let it go;
 * release it in any case.
 */
export async function stuckRetentionRun(ds: DataSource, maintenance: Queue, planId: string): Promise<QueryRunner> {
  await insertPlans(ds, [{ id: planId, status: 'completed', completedAt: new Date(Date.now() - 40 * DAY) }]);
  const locker = ds.createQueryRunner();
  await locker.startTransaction();
  await locker.query('LOCK TABLE execution_plans IN ACCESS EXCLUSIVE MODE');
  const job = await maintenance.add(RETENTION_JOB, { v: 1 });
  for (let i = 0; (await job.getState()) !== 'active'; i++) {
    if (i > 400) throw new Error(`retention job still ${await job.getState()} after 20 s`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  await new Promise((resolve) => setTimeout(resolve, 200)); // its first statement is waiting on the lock
  return locker;
}
