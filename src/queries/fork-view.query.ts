import type { DataSource, FindOptionsSelect } from 'typeorm';
import { ENTITY, ExecutionPlanRow, isFork, PlanStepRow, WorkflowCheckpointRow } from '../store/entities';
import { dagLayers } from '../store/projection/dag-layers';
import { pendingStep, specOfStep } from '../store/projection/plan-reducer';
import { parseJson, toNum } from './row-normalize';

/** How many generations of ancestors a fork's steps are read from (as the store looks them up). */
const MAX_FORK_DEPTH = 100;

/**
 * A step as a plan shows it. A fork (docs/fork-and-lineage.md#referenced-not-copied) has rows only for the steps it
 * added, changed or has run; the others are read from its ancestors: those of layers before its
 * fork layer are inherited as they are there (`inheritedFrom`: the plan whose row it is), the
 * others are the fork's own steps, pending, with the ancestor's definition.
 */
export interface ViewStep extends PlanStepRow {
  /** The ancestor plan whose row this inherited step is; null for the plan's own steps. */
  inheritedFrom: string | null;
}

/** A fork's whole step list, its layers, and the checkpoint it started from. */
export interface ForkView {
  steps: ViewStep[];
  layers: string[][];
  /** The parent's checkpoint the fork starts from: the one it names, else the parent's latest before its fork layer. */
  startCheckpoint: WorkflowCheckpointRow | null;
}

export { isFork };

/** The columns of a step's definition: what a template and a pending copy are made of. */
const SPEC_COLUMNS = [
  'id',
  'planId',
  'stepKey',
  'stepIndex',
  'agentId',
  'task',
  'title',
  'expectedOutput',
  'dependsOn',
];

/**
 * Which columns of the steps a view reads, of the fork and of every ancestor: `whole` rows,
 * every column but the output (`no-output`), or the definition only (`spec`). The others are left
 * undefined in the rows returned (a pending copy is whole either way).
 */
export type ViewColumns = 'whole' | 'no-output' | 'spec';

/** The steps, layers and starting checkpoint of a fork, its ancestors' rows read where it has none. */
export async function loadForkView(
  ds: DataSource,
  plan: ExecutionPlanRow,
  columns: ViewColumns = 'whole',
): Promise<ForkView> {
  const steps = await viewSteps(ds, plan, { seen: new Set(), depth: 0, select: selectOf(ds, columns) });
  return { steps, layers: layersOf(steps), startCheckpoint: await startCheckpoint(ds, plan) };
}

/** The step properties `columns` reads; undefined: all of them. */
function selectOf(ds: DataSource, columns: ViewColumns): FindOptionsSelect<PlanStepRow> | undefined {
  if (columns === 'whole') return undefined;
  const props =
    columns === 'spec'
      ? SPEC_COLUMNS
      : ds
          .getMetadata(ENTITY.step)
          .columns.map((c) => c.propertyName)
          .filter((p) => p !== 'outputContent');
  return Object.fromEntries(props.map((p) => [p, true])) as FindOptionsSelect<PlanStepRow>;
}

/** Where a walk up the ancestors is, and which columns it reads. */
interface Walk {
  seen: Set<string>;
  depth: number;
  select: FindOptionsSelect<PlanStepRow> | undefined;
}

/** Layers of a step list, as the store draws a plan's DAG. */
export function layersOf(steps: readonly PlanStepRow[]): string[][] {
  return dagLayers(
    steps.map((s) => ({
      stepId: s.stepKey,
      index: toNum(s.stepIndex),
      dependsOn: parseJson<string[]>(s.dependsOn, []),
    })),
  );
}

async function viewSteps(ds: DataSource, plan: ExecutionPlanRow, walk: Walk): Promise<ViewStep[]> {
  const { seen, depth } = walk;
  // a soft-deleted ancestor's rows are hidden through its plan row (retention stamps only that
  // and the head): it lends the fork nothing of its own, its ancestors still do
  const own = plan.deletedAt
    ? []
    : await ds
        .getRepository<PlanStepRow>(ENTITY.step)
        .find({ where: { planId: plan.id }, order: { stepIndex: 'ASC' }, select: walk.select });
  const mine: ViewStep[] = own.map((s) => ({ ...s, inheritedFrom: null }));
  seen.add(plan.id);
  // a cycle of parent ids, or a chain deeper than the store looks up, ends here
  if (!isFork(plan) || seen.has(plan.parentPlanId!) || depth >= MAX_FORK_DEPTH) return mine;
  const parent = await ds
    .getRepository<ExecutionPlanRow>(ENTITY.plan)
    .findOne({ where: { id: plan.parentPlanId! }, withDeleted: true });
  if (!parent) return mine;
  const parentSteps = await viewSteps(ds, parent, { ...walk, depth: depth + 1 });
  const inheritedLayers = layersOf(parentSteps).slice(0, toNum(plan.forkLayer ?? 0));
  const inherited = new Set(inheritedLayers.flat());
  const ownKeys = new Set(own.map((s) => s.stepKey));
  const out = [...mine];
  for (const s of parentSteps) {
    if (ownKeys.has(s.stepKey)) continue;
    if (inherited.has(s.stepKey)) out.push({ ...s, inheritedFrom: s.inheritedFrom ?? parent.id });
    // as the store makes it the fork's own row on its first event
    else out.push(pendingCopy(s, plan));
  }
  return out.sort((a, b) => toNum(a.stepIndex) - toNum(b.stepIndex));
}

/** An ancestor's step as a fork's own step not run yet: its definition, nothing of its run. */
function pendingCopy(s: PlanStepRow, plan: ExecutionPlanRow): ViewStep {
  return { ...pendingStep(plan, specOfStep(s), plan.createdAt), inheritedFrom: null };
}

/**
 * The checkpoint a fork resumes from before it saved one of its own: the parent's checkpoint it
 * names, else the parent's latest of a layer before the fork layer (null: start at the fork layer
 * with no state). An ancestor's own fork start counts when the parent saved none.
 */
async function startCheckpoint(ds: DataSource, plan: ExecutionPlanRow): Promise<WorkflowCheckpointRow | null> {
  let current: ExecutionPlanRow | null = plan;
  for (let depth = 0; current && isFork(current) && depth < MAX_FORK_DEPTH; depth++) {
    const parentId: string = current.parentPlanId!;
    const parent: ExecutionPlanRow | null = await ds
      .getRepository<ExecutionPlanRow>(ENTITY.plan)
      .findOne({ where: { id: parentId }, withDeleted: true });
    // a soft-deleted parent's checkpoints are hidden through its plan row, as its steps are
    const found = parent?.deletedAt ? null : await parentCheckpoint(ds, current, parentId);
    if (found) return found;
    current = parent;
  }
  return null;
}

/** The parent's checkpoint a fork starts from: the one it names, else the latest of a layer before its fork layer. */
function parentCheckpoint(
  ds: DataSource,
  fork: ExecutionPlanRow,
  parentId: string,
): Promise<WorkflowCheckpointRow | null> {
  const qb = ds
    .getRepository<WorkflowCheckpointRow>(ENTITY.checkpoint)
    .createQueryBuilder('c')
    .where('c.workflowId = :parentId', { parentId });
  if (fork.forkCheckpoint) qb.andWhere('c.checkpointKey = :key', { key: fork.forkCheckpoint });
  else qb.andWhere('c.layer < :layer', { layer: toNum(fork.forkLayer ?? 0) });
  return qb.orderBy('c.layer', 'DESC').addOrderBy('c.createdAt', 'DESC').addOrderBy('c.id', 'DESC').limit(1).getOne();
}
