import type { DataSource } from 'typeorm';
import { idsIn } from '../store/sql/id-lists';
import { displayMoney, moneyFromColumn } from '../pricing';
import { ENTITY, ExecutionPlanRow, ForkKind } from '../store/entities';
import { sqlDialectOf } from '../store/sql/dialects';
import { NotFoundError } from './query-errors';
import { compareText, toIso, toNum } from './row-normalize';
import { formatInt } from './text-output';

/** Levels walked above the plan asked for, and below the root: a longer chain is cut (`truncated`). */
export const LINEAGE_MAX_DEPTH = 100;
/** Plans in one answer at most: a larger tree is cut (`truncated`), level by level from the root. */
export const LINEAGE_MAX_PLANS = 10_000;

/** The columns a node is made of: no query, summary or failure text (up to 10,000 plans are read). */
const NODE_COLUMNS = [
  'id',
  'sessionId',
  'parentPlanId',
  'forkKind',
  'forkLayer',
  'forkCheckpoint',
  'status',
  'createdAt',
  'completedAt',
  'deletedAt',
  'totalSteps',
  'completedSteps',
  'failedSteps',
  'totalInputTokens',
  'totalOutputTokens',
  'totalCost',
] as const;
type NodeRow = Pick<ExecutionPlanRow, (typeof NODE_COLUMNS)[number]>;
const NODE_SELECT = NODE_COLUMNS.map((c) => `p.${c}`);

/** One plan of a lineage tree, its forks and replays below it. */
export interface LineageNode {
  planId: string;
  sessionId: string;
  /** The plan it was forked or replayed from; null for a plan an executor created. */
  parentPlanId: string | null;
  /** `fork` or `replay`; null for a plan that is neither (the root of a tree, normally). */
  kind: ForkKind | null;
  /** The first layer the plan ran itself (earlier layers are its parent's). */
  forkLayer: number | null;
  /** The parent's checkpoint it started from, if any. */
  forkCheckpoint: string | null;
  status: ExecutionPlanRow['status'];
  createdAt: string;
  completedAt: string | null;
  /** When retention soft-deleted it (`plans restore` brings it back); null for a live plan. */
  retiredAt: string | null;
  totalSteps: number;
  completedSteps: number;
  failedSteps: number;
  inputTokens: number;
  outputTokens: number;
  /** What its priced steps cost, USD as an exact decimal string (as PlanSummary's `cost`). */
  cost: string;
  /** True on the plan the lineage was asked for. */
  current: boolean;
  /** Its forks and replays, oldest first (createdAt, then planId). */
  children: LineageNode[];
}

export interface PlanLineage {
  /** The plan asked for. */
  planId: string;
  /** The top of the tree: the oldest ancestor still stored. */
  rootId: string;
  /** Plans in the tree (as far as it was walked). */
  plans: number;
  /** The tree was cut at LINEAGE_MAX_DEPTH levels or LINEAGE_MAX_PLANS plans. */
  truncated: boolean;
  root: LineageNode;
}

/**
 * The fork tree a plan belongs to: up `parent_plan_id` to the oldest ancestor still stored (a
 * cycle of parents ends the walk where it closes), then down level by level, each level one
 * `parent_plan_id IN (...)` per batch of ids through IX_execution_plans_parent. Soft-deleted
 * (retired) plans of the tree are shown with their `retiredAt`, so the tree keeps its shape; the
 * plan asked for must be live, as for every read (NotFoundError otherwise). Only the columns of a
 * node are read (NODE_COLUMNS), so an answer's memory is bounded by LINEAGE_MAX_PLANS small rows.
 */
export async function getPlanLineage(ds: DataSource, planId: string): Promise<PlanLineage> {
  const repo = ds.getRepository<ExecutionPlanRow>(ENTITY.plan);
  const one = (id: string): Promise<NodeRow | null> =>
    repo.createQueryBuilder('p').withDeleted().select(NODE_SELECT).where('p.id = :id', { id }).getOne();
  const asked = await one(planId);
  if (!asked) throw new NotFoundError('plan', planId);
  if (asked.deletedAt) throw new NotFoundError('plan', planId, ': it was soft-deleted (plans restore brings it back)');

  let truncated = false;
  let root = asked;
  const above = new Set([asked.id]);
  for (let depth = 0; root.parentPlanId !== null && root.parentPlanId !== undefined; depth++) {
    if (above.has(root.parentPlanId)) break; // a cycle: the plan where it closes is the top
    if (depth >= LINEAGE_MAX_DEPTH) {
      truncated = true;
      break;
    }
    const parent = await one(root.parentPlanId);
    if (!parent) break; // purged, erased, or its plan.created not stored yet
    above.add(parent.id);
    root = parent;
  }

  const top = toNode(root, planId);
  const nodes = new Map([[root.id, top]]);
  const perStatement = sqlDialectOf(ds).maxIdsPerStatement;
  let level = [root.id];
  for (let depth = 0; level.length > 0; depth++) {
    if (depth >= LINEAGE_MAX_DEPTH) {
      truncated = true;
      break;
    }
    const next: string[] = [];
    for (let i = 0; i < level.length && !truncated; i += perStatement) {
      const rows = await repo
        .createQueryBuilder('p')
        .withDeleted()
        .select(NODE_SELECT)
        .where(...idsIn(sqlDialectOf(ds), 'p.parentPlanId', level.slice(i, i + perStatement)))
        .getMany();
      for (const row of rows) {
        if (nodes.has(row.id)) continue; // a cycle back into the tree
        if (nodes.size >= LINEAGE_MAX_PLANS) {
          truncated = true;
          break;
        }
        const node = toNode(row, planId);
        nodes.set(row.id, node);
        nodes.get(row.parentPlanId!)!.children.push(node);
        next.push(row.id);
      }
    }
    if (truncated) break;
    level = next;
  }
  for (const node of nodes.values())
    node.children.sort((a, b) => compareText(a.createdAt, b.createdAt) || compareText(a.planId, b.planId));
  return { planId, rootId: root.id, plans: nodes.size, truncated, root: top };
}

function toNode(row: NodeRow, askedId: string): LineageNode {
  return {
    planId: row.id,
    sessionId: row.sessionId,
    parentPlanId: row.parentPlanId ?? null,
    kind: row.forkKind ?? null,
    forkLayer: row.forkLayer === null || row.forkLayer === undefined ? null : toNum(row.forkLayer),
    forkCheckpoint: row.forkCheckpoint ?? null,
    status: row.status,
    createdAt: toIso(row.createdAt)!,
    completedAt: toIso(row.completedAt),
    retiredAt: toIso(row.deletedAt),
    totalSteps: toNum(row.totalSteps),
    completedSteps: toNum(row.completedSteps),
    failedSteps: toNum(row.failedSteps),
    inputTokens: toNum(row.totalInputTokens),
    outputTokens: toNum(row.totalOutputTokens),
    cost: displayMoney(moneyFromColumn(row.totalCost) ?? 0n),
    current: row.id === askedId,
    children: [],
  };
}

/**
 * The tree as indented lines, two spaces a level, each plan as
 * `plan_x  fork from layer 3 (cp_2)  completed  12/20 steps  1,234 tokens  $0.0123`, with its session
 * where it differs from the parent's, and the plan asked for marked `<- this plan`.
 */
export function formatPlanLineage(lineage: PlanLineage): string[] {
  const lines: string[] = [];
  const walk = (node: LineageNode, depth: number, parentSession: string | null) => {
    const parts = [node.planId];
    if (node.kind !== null) {
      const layer = node.forkLayer === null ? '' : ` from layer ${node.forkLayer}`;
      parts.push(`${node.kind}${layer}${node.forkCheckpoint === null ? '' : ` (${node.forkCheckpoint})`}`);
    }
    if (depth === 0 && node.parentPlanId !== null) parts.push(`parent ${node.parentPlanId} not stored`);
    if (parentSession !== null && node.sessionId !== parentSession) parts.push(`session ${node.sessionId}`);
    parts.push(node.retiredAt === null ? node.status : `${node.status} (retired ${node.retiredAt})`);
    parts.push(
      `${node.completedSteps}/${node.totalSteps} steps${node.failedSteps > 0 ? ` (${node.failedSteps} failed)` : ''}`,
    );
    parts.push(`${formatInt(node.inputTokens + node.outputTokens)} tokens`, `$${node.cost}`);
    if (node.current) parts.push('<- this plan');
    lines.push(`${'  '.repeat(depth)}${parts.join('  ')}`);
    for (const child of node.children) walk(child, depth + 1, node.sessionId);
  };
  walk(lineage.root, 0, null);
  if (lineage.truncated)
    lines.push(
      `(tree cut at ${LINEAGE_MAX_DEPTH} levels or ${formatInt(LINEAGE_MAX_PLANS)} plans: ${lineage.plans} shown)`,
    );
  return lines;
}
