import { IsNull, type EntityManager, type SelectQueryBuilder } from 'typeorm';
import { idsIn, inIds } from '../store/sql/id-lists';
import { sqlDialectOf } from '../store/sql/dialects';
import { ENTITY } from '../store/entities';
import { lockOrder, RunContext, shouldStop, TableCountMap } from './retention-batch';
import { batchContext, packByRows, planSizes, runBatch } from './row-batches';
import { addTableCounts } from './retention-report';
import { affected, countRows, DAG_TABLES, deleteRows, instant, stampRows, toDate } from './retention-sql';
import { purgeCutoff } from './plan-purge';

const MINUTE_MS = 60_000;

/** Workflows whose DAG may expire before their plan: they cannot be resumed any more. */
const EXPIRING_STATUSES = ['completed', 'cancelled'];

export function dagCutoff(ctx: Pick<RunContext, 'now' | 'policy'>): Date | null {
  return ctx.policy.dagTtlMinutes > 0 ? new Date(ctx.now.getTime() - ctx.policy.dagTtlMinutes * MINUTE_MS) : null;
}

interface DagRow {
  id: string;
  dagDeletedAt: unknown;
  expiresAt: unknown;
  status: string;
  completedAt: unknown;
  planDeletedAt: unknown;
}

/**
 * Expires the DAG and checkpoints of finished workflows of live plans (soft delete), and purges
 * the ones expired longer ago than the grace period. Their plan keeps its events (plan.created,
 * checkpoint.saved), so nothing of the audit trail goes. Walks workflow_dags in key order, one page
 * per statement (no index says "expirable"), and acts on the rows that qualify. A workflow with a
 * live fork is not expired (`keptForForks`): it expires at a later run, once none lives.
 */
export async function expireDags(ctx: RunContext): Promise<void> {
  const bc = batchContext(ctx);
  const add = ({ soft, hard, stamped }: { soft: TableCountMap; hard: TableCountMap; stamped: number }) => {
    ctx.report.dags.stamped += stamped;
    addTableCounts(ctx.report, 'softDeleted', soft);
    addTableCounts(ctx.report, 'purged', hard);
    ctx.report.dags.expired += soft.workflow_dags ?? 0;
    ctx.report.dags.purged += hard.workflow_dags ?? 0;
  };
  let after: string | null = null;
  while (!shouldStop(ctx)) {
    const q = dagQuery(ctx.ds.manager, after);
    if (after !== null) q.where('d.workflowId > :after', { after });
    const page: DagRow[] = await q.orderBy('d.workflowId', 'ASC').limit(ctx.batchSize).getRawMany();
    if (page.length === 0) return;
    after = page[page.length - 1].id;
    const kept = await keptForForks(ctx, ctx.ds.manager, page);
    const ids = lockOrder(
      page
        .filter((r) => (expirable(ctx, r) && !kept.has(r.id)) || stampable(ctx, r) || purgeable(ctx, r))
        .map((r) => r.id),
    );
    // transactions of at most maxRows rows; a workflow with more checkpoints than that goes alone, whole
    const sizes = await planSizes(ctx.ds.manager, DAG_TABLES, ids, 'all');
    for (const unit of packByRows(sizes, ctx.maxRows, ctx.batchSize)) {
      if (!bc.proceed()) return;
      const batch = 'batch' in unit ? unit.batch : [unit.large.id];
      await runBatch(bc, batch, (m, part) => dagBatch(ctx, m, part), add);
    }
    if (page.length < ctx.batchSize) return;
  }
}

/** When this workflow's DAG expires: its stamped `expires_at`, else end + TTL; null = never. */
export function dagExpiry(
  ctx: Pick<RunContext, 'policy'>,
  r: Pick<DagRow, 'expiresAt' | 'status' | 'completedAt'>,
): Date | null {
  if (ctx.policy.dagTtlMinutes <= 0 || !EXPIRING_STATUSES.includes(r.status)) return null;
  const stamped = toDate(r.expiresAt);
  if (stamped) return stamped;
  const ended = toDate(r.completedAt);
  return ended ? new Date(ended.getTime() + ctx.policy.dagTtlMinutes * MINUTE_MS) : null;
}

function live(ctx: RunContext, r: DagRow): boolean {
  return r.planDeletedAt === null && !ctx.wouldRetire.has(r.id) && r.dagDeletedAt === null;
}

/** Counted from the workflow's end (completed_at), not from its last event. */
function expirable(ctx: RunContext, r: DagRow): boolean {
  const at = live(ctx, r) ? dagExpiry(ctx, r) : null;
  return at !== null && at <= ctx.now;
}

/** An ended workflow's DAG with no `expires_at` yet: stamped with end + TTL, for resume-point to show. */
function stampable(ctx: RunContext, r: DagRow): boolean {
  return live(ctx, r) && r.expiresAt === null && dagExpiry(ctx, r) !== null;
}

function purgeable(ctx: RunContext, r: DagRow): boolean {
  const deleted = toDate(r.dagDeletedAt);
  // a soft-deleted plan's DAG goes with its plan (purgePlans)
  return r.planDeletedAt === null && deleted !== null && deleted <= purgeCutoff(ctx);
}

/**
 * Of the rows due to expire, those of plans with a live fork (an execution_plans row whose
 * parent_plan_id names the plan, not soft-deleted): the fork's resume point reads the plan's
 * checkpoint it starts from, and forking the plan again reads its DAG. A fork this run retired
 * (soft-deleted at `ctx.now`) still counts, so the plan expires at a later run and a dry run,
 * which retires nothing, finds the same DAGs. One statement for the page, through
 * IX_execution_plans_parent, and none when nothing is due.
 */
async function keptForForks(ctx: RunContext, m: EntityManager, rows: DagRow[]): Promise<Set<string>> {
  const due = rows.filter((r) => expirable(ctx, r)).map((r) => r.id);
  if (due.length === 0) return new Set();
  const parents: Array<{ id: string }> = await m
    .createQueryBuilder()
    .select('f.parentPlanId', 'id')
    .distinct(true)
    .from(ENTITY.plan, 'f')
    .withDeleted()
    .where(...idsIn(sqlDialectOf(m), 'f.parentPlanId', due))
    .andWhere('(f.deletedAt IS NULL OR f.deletedAt >= :runAt)', { runAt: instant(m, ctx.now) })
    .getRawMany();
  return new Set(parents.map((p) => p.id));
}

/**
 * The DAG walk's page. The keyset bound is repeated on the joined keys: without it PostgreSQL
 * merge-joins from the first plan for every page (quadratic over a walk).
 */
function dagQuery(m: EntityManager, after: string | null = null): SelectQueryBuilder<object> {
  const bound = (alias: string) => (after === null ? '' : ` AND ${alias} > :after`);
  return m
    .createQueryBuilder()
    .select('d.workflowId', 'id')
    .addSelect('d.deletedAt', 'dagDeletedAt')
    .addSelect('d.expiresAt', 'expiresAt')
    .addSelect('p.status', 'status')
    .addSelect('p.completedAt', 'completedAt')
    .addSelect('p.deletedAt', 'planDeletedAt')
    .from(ENTITY.dag, 'd')
    .withDeleted()
    .innerJoin(ENTITY.plan, 'p', `p.id = d.workflowId${bound('p.id')}`, after === null ? {} : { after });
}

/** Under the head locks, re-read the candidates and act on those that still qualify. */
async function dagBatch(
  ctx: RunContext,
  m: EntityManager,
  ids: string[],
): Promise<{ soft: TableCountMap; hard: TableCountMap; stamped: number }> {
  const rows: DagRow[] = await dagQuery(m)
    .where(...idsIn(sqlDialectOf(m), 'd.workflowId', ids))
    .getRawMany();
  const stamped = await stampExpiry(
    ctx,
    m,
    rows.filter((r) => stampable(ctx, r)),
  );
  const kept = await keptForForks(ctx, m, rows);
  const expire = lockOrder(rows.filter((r) => expirable(ctx, r) && !kept.has(r.id)).map((r) => r.id));
  const purge = lockOrder(rows.filter((r) => purgeable(ctx, r)).map((r) => r.id));
  const before = purgeCutoff(ctx);
  const soft: TableCountMap = {};
  const hard: TableCountMap = {};
  for (const spec of DAG_TABLES) {
    if (expire.length > 0)
      soft[spec.table] = ctx.dryRun
        ? await countRows(m, spec, expire, 'live')
        : affected(await stampRows(m, spec, expire, ctx.now).execute());
    // only rows expired past the grace period: a checkpoint saved since then is kept
    if (purge.length > 0)
      hard[spec.table] = ctx.dryRun
        ? await countRows(m, spec, purge, { deletedBefore: before })
        : affected(await deleteRows(m, spec, purge, before).execute());
  }
  return { soft, hard, stamped };
}

/**
 * Fills `expires_at` (end + TTL) of ended workflows' DAGs, one UPDATE per distinct instant (a
 * batch's workflows often ended at distinct times; the statement is keyed, so each is cheap). A
 * DAG expiring in this same run is stamped too, so the value it expired at stays readable.
 */
async function stampExpiry(ctx: RunContext, m: EntityManager, rows: DagRow[]): Promise<number> {
  if (ctx.dryRun) return rows.length;
  const byInstant = new Map<number, string[]>();
  for (const r of rows) {
    const at = dagExpiry(ctx, r)!.getTime();
    byInstant.set(at, [...(byInstant.get(at) ?? []), r.id]);
  }
  let stamped = 0;
  for (const [at, wfIds] of byInstant) {
    const result = await m
      .createQueryBuilder()
      .update(ENTITY.dag)
      .set({ expiresAt: new Date(at) })
      .where({ workflowId: inIds(sqlDialectOf(m), wfIds), expiresAt: IsNull() })
      .callListeners(false)
      .execute();
    stamped += affected(result);
  }
  return stamped;
}
