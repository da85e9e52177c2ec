import type { DataSource, SelectQueryBuilder } from 'typeorm';
import {
  ENTITY,
  ExecutionPlanRow,
  PlanStatus,
  PlanStepRow,
  WorkflowCheckpointRow,
  WorkflowDagRow,
} from '../store/entities';
import { isFork, loadForkView } from './fork-view.query';
import { NotFoundError } from './query-errors';
import { getNextSeq } from './next-seq.query';
import { parseJson, toIso, toNum } from './row-normalize';

/** The DAG as stored once per workflow. Workflow id = plan id. */
export interface WorkflowDag {
  steps: Array<{ stepId: string; index: number; agentId: string; dependsOn: string[] }>;
  /** Topological layers of step ids: every step depends only on steps of earlier layers. */
  layers: string[][];
}

export interface ResumeCheckpoint {
  checkpointId: string;
  layer: number;
  state: unknown;
  at: string;
}

export interface ResumeStep {
  stepId: string;
  index: number;
  agentId: string;
  title: string | null;
  task: string;
  dependsOn: string[];
  status: PlanStepRow['status'];
}

export interface LayerProgress {
  layer: number;
  steps: number;
  completed: number;
  failed: number;
  skipped: number;
  /** pending or in progress */
  unfinished: number;
}

export interface Resumable {
  workflowId: string;
  resumable: true;
  status: PlanStatus;
  dag: WorkflowDag;
  intent: string | null;
  expiresAt: string | null;
  /** The checkpoint of the highest layer (the newest one if a layer was saved twice); null: none yet. */
  latestCheckpoint: ResumeCheckpoint | null;
  /** Layer the latest checkpoint closes; null when no layer was checkpointed (resume from layer 0). */
  lastCompletedLayer: number | null;
  /** Layer to run next; null when every layer is checkpointed and only finalization is missing. */
  nextLayer: number | null;
  nextSteps: ResumeStep[];
  layers: LayerProgress[];
  /** The `seq` to publish next for this plan (one past the highest stored): a resumed executor continues from it. */
  nextSeq: number;
}

export interface NotResumable {
  workflowId: string;
  resumable: false;
  /** Null when the plan was deleted. */
  status: PlanStatus | null;
  /** Completes "cannot be resumed because ...". */
  reason: string;
  /**
   * When the finished (completed/cancelled) workflow's DAG and checkpoints expire: the
   * `expires_at` retention stamped, else its end + `dagTtlMinutes` when the caller passed it;
   * null when they never expire, are already gone, or the TTL is not known here.
   */
  expiresAt: string | null;
  /** The `seq` to publish next for this plan, were anything still published for it. */
  nextSeq: number;
}

export type ResumePoint = Resumable | NotResumable;

/**
 * Where a workflow continues after a restart or a pause (a workflow's `continue`): its
 * DAG, its latest checkpoint and the next layer's steps, or why it cannot be resumed.
 * Unknown ids throw `NotFoundError`.
 */
export interface ResumePointOptions {
  /**
   * Retention's DAG TTL (RETENTION_DAG_TTL), to show when a finished workflow's DAG expires before retention stamped
   * it.
   */
  dagTtlMinutes?: number;
}

export async function getResumePoint(
  ds: DataSource,
  workflowId: string,
  options: ResumePointOptions = {},
): Promise<ResumePoint> {
  const plan = await ds.getRepository<ExecutionPlanRow>(ENTITY.plan).findOne({ where: { id: workflowId } });
  if (!plan) {
    // only the fact that it existed is read, none of its rows: deleted data stays invisible
    const deleted = await ds
      .getRepository<ExecutionPlanRow>(ENTITY.plan)
      .exists({ where: { id: workflowId }, withDeleted: true });
    if (!deleted) throw new NotFoundError('plan', workflowId);
    return {
      workflowId,
      resumable: false,
      status: null,
      reason: 'it was deleted by retention',
      expiresAt: null,
      nextSeq: await getNextSeq(ds, workflowId),
    };
  }
  const dagRow = await ds.getRepository<WorkflowDagRow>(ENTITY.dag).findOne({ where: { workflowId } });
  const refusal = statusRefusal(plan);
  if (refusal)
    return {
      workflowId,
      resumable: false,
      status: plan.status,
      reason: refusal,
      expiresAt: dagRow ? dagExpiresAt(plan, dagRow, options) : null,
      nextSeq: await getNextSeq(ds, workflowId),
    };
  if (!dagRow)
    return {
      workflowId,
      resumable: false,
      status: plan.status,
      reason: 'no DAG is stored for it (expired or never written)',
      expiresAt: null,
      nextSeq: await getNextSeq(ds, workflowId),
    };
  const [own, nextSeq] = await Promise.all([
    buildLatestCheckpointQuery(ds, workflowId).getOne(),
    getNextSeq(ds, workflowId),
  ]);
  let dag: WorkflowDag;
  let steps: ResumeStep[];
  let checkpoint = own;
  if (isFork(plan)) {
    // a fork's steps and DAG include its ancestors'; before its first checkpoint it resumes from the one it started at
    const view = await loadForkView(ds, plan, 'no-output');
    steps = view.steps.map(resumeStep);
    dag = {
      steps: steps.map(({ stepId, index, agentId, dependsOn }) => ({ stepId, index, agentId, dependsOn })),
      layers: view.layers,
    };
    checkpoint ??= view.startCheckpoint;
  } else {
    dag = parseJson<WorkflowDag>(dagRow.dag, { steps: [], layers: [] });
    steps = await loadSteps(ds, workflowId);
  }
  // a fork that saved no checkpoint yet has run nothing: its inherited layers are the completed ones
  const forkLayer = isFork(plan) && !own ? toNum(plan.forkLayer ?? 0) : null;
  const lastCompletedLayer =
    forkLayer !== null ? (forkLayer > 0 ? forkLayer - 1 : null) : checkpoint ? toNum(checkpoint.layer) : null;
  const next = lastCompletedLayer === null ? 0 : lastCompletedLayer + 1;
  const nextLayer = next < dag.layers.length ? next : null;
  const byKey = new Map(steps.map((s) => [s.stepId, s]));
  return {
    workflowId,
    resumable: true,
    status: plan.status,
    dag,
    intent: dagRow.intent ?? null,
    expiresAt: toIso(dagRow.expiresAt),
    latestCheckpoint: checkpoint
      ? {
          checkpointId: checkpoint.checkpointKey,
          layer: toNum(checkpoint.layer),
          state: parseJson<unknown>(checkpoint.state, null),
          at: toIso(checkpoint.createdAt)!,
        }
      : null,
    lastCompletedLayer,
    nextLayer,
    nextSteps:
      nextLayer === null
        ? []
        : dag.layers[nextLayer].map((key) => byKey.get(key)).filter((s): s is ResumeStep => s !== undefined),
    layers: dag.layers.map((keys, layer) => layerProgress(layer, keys, byKey)),
    nextSeq,
  };
}

/** Stamped by retention, or end + TTL for a completed/cancelled workflow (as retention will stamp it). */
function dagExpiresAt(plan: ExecutionPlanRow, dagRow: WorkflowDagRow, options: ResumePointOptions): string | null {
  if (dagRow.expiresAt) return toIso(dagRow.expiresAt);
  if (!options.dagTtlMinutes || !plan.completedAt || (plan.status !== 'completed' && plan.status !== 'cancelled'))
    return null;
  const ended = new Date(toIso(plan.completedAt)!);
  return new Date(ended.getTime() + options.dagTtlMinutes * 60_000).toISOString();
}

function statusRefusal(plan: ExecutionPlanRow): string | null {
  const at = plan.completedAt ? ` at ${toIso(plan.completedAt)}` : '';
  switch (plan.status) {
    case 'completed':
      return `it already finished${at} (completed)`;
    case 'failed':
      return `it already finished${at} (failed${plan.failureReason ? `: ${plan.failureReason}` : ''})`;
    case 'cancelled':
      if (plan.approvalStatus === 'rejected') return `it was cancelled${at}: its plan was rejected`;
      return `it was cancelled${at}${plan.summary ? ` (${plan.summary})` : ''}`;
    case 'planning':
      return plan.approvalStatus === 'pending' ? 'it is still waiting for an approval decision' : null;
    default:
      return null;
  }
}

/** Highest layer first, then the newest save of it; one row (OFFSET/FETCH on SQL Server). */
export function buildLatestCheckpointQuery(
  ds: DataSource,
  workflowId: string,
): SelectQueryBuilder<WorkflowCheckpointRow> {
  return ds
    .getRepository<WorkflowCheckpointRow>(ENTITY.checkpoint)
    .createQueryBuilder('c')
    .where('c.workflowId = :workflowId', { workflowId })
    .orderBy('c.layer', 'DESC')
    .addOrderBy('c.createdAt', 'DESC')
    .addOrderBy('c.id', 'DESC')
    .limit(1);
}

async function loadSteps(ds: DataSource, planId: string): Promise<ResumeStep[]> {
  // output_content and result can be large and are not needed to resume
  const rows = await ds.getRepository<PlanStepRow>(ENTITY.step).find({
    where: { planId },
    select: { stepKey: true, stepIndex: true, agentId: true, title: true, task: true, dependsOn: true, status: true },
    order: { stepIndex: 'ASC' },
  });
  return rows.map(resumeStep);
}

function resumeStep(
  s: Pick<PlanStepRow, 'stepKey' | 'stepIndex' | 'agentId' | 'title' | 'task' | 'dependsOn' | 'status'>,
): ResumeStep {
  return {
    stepId: s.stepKey,
    index: toNum(s.stepIndex),
    agentId: s.agentId,
    title: s.title ?? null,
    task: s.task,
    dependsOn: parseJson<string[]>(s.dependsOn, []),
    status: s.status,
  };
}

function layerProgress(layer: number, keys: string[], byKey: Map<string, ResumeStep>): LayerProgress {
  const p: LayerProgress = { layer, steps: keys.length, completed: 0, failed: 0, skipped: 0, unfinished: 0 };
  for (const key of keys) {
    const status = byKey.get(key)?.status ?? 'pending';
    if (status === 'completed') p.completed += 1;
    else if (status === 'failed') p.failed += 1;
    else if (status === 'skipped') p.skipped += 1;
    else p.unfinished += 1;
  }
  return p;
}
