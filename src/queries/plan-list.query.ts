import type { DataSource, SelectQueryBuilder } from 'typeorm';
import { ENTITY, ExecutionPlanRow, PlanStatus } from '../store/entities';
import { whereCreatedIn } from './query-clauses';
import { sqlDialectOf } from '../store/sql/dialects';
import { PlanSummary, toPlanSummary } from './plan-rows';
import { QueryArgumentError } from './query-errors';
import { PLAN_LIST_STATUS_VALUES, PLAN_STATUS_VALUES, type DateRange } from './query-args';
import { toIso } from './row-normalize';

export interface PlanListFilter {
  /** Only this session's plans. @defaultValue every session */
  sessionId?: string;
  /** Only plans in these statuses. @defaultValue every status */
  statuses?: readonly PlanStatus[];
  /**
   * Only stalled plans (running, no event within their deadline: docs/store.md#stalled-plans); see
   * planStatusFilter. @defaultValue false
   */
  stalled?: boolean;
  /** Only plans created in this range (from inclusive, to exclusive). @defaultValue any time */
  created?: DateRange;
  /** Only plans with a step assigned to this agent. @defaultValue any agent */
  agentId?: string;
  /** Page size (validate with `parseLimit`). */
  limit: number;
  /** Plans skipped before the page. @defaultValue 0 */
  offset?: number;
  /** The page after this plan (a `nextCursor`, see parsePlanCursor) instead of `offset`. @defaultValue none */
  cursor?: PlanCursor;
}

/** Where a page ends: the last plan's creation time and id, the list's order. */
export interface PlanCursor {
  createdAt: Date;
  planId: string;
}

/** Plans counted at most for `total`: past it a page says "1,000+" (`totalExact` false). */
export const PLAN_COUNT_CAP = 1000;

export interface PlanPage {
  /**
   * Plans matching the filter, all pages together, counted up to 1,000 (or up to the end of an
   * offset page further down): when there are more, `total` is that count and `totalExact` is false.
   */
  total: number;
  totalExact: boolean;
  limit: number;
  offset: number;
  /** More plans follow this page. */
  hasMore: boolean;
  /** The `cursor` of the next page (`--cursor`), null on the last page. */
  nextCursor: string | null;
  plans: PlanSummary[];
}

/**
 * Newest first; the id breaks ties so pages never overlap. One index range serves each filter
 * (IX_execution_plans_created_id, _status_created, _session; an agent's plans through
 * `plan_agents`), so a page costs its rows, not the table. Pagination is TypeORM's per dialect:
 * LIMIT/OFFSET, or OFFSET ... FETCH NEXT on SQL Server (which needs the ORDER BY it gets here).
 */
export function buildPlanListQuery(ds: DataSource, filter: PlanListFilter): SelectQueryBuilder<ExecutionPlanRow> {
  const qb = filteredPlans(ds, filter);
  // an agent's plans come in plan_agents' order (the same instants and ids as the plans')
  const [at, id] = filter.agentId !== undefined ? ['a.createdAt', 'a.planId'] : ['p.createdAt', 'p.id'];
  if (filter.cursor) {
    const params = { cursorAt: sqlDialectOf(ds).instant(filter.cursor.createdAt), cursorId: filter.cursor.planId };
    // the redundant `<=` keeps the index range bounded
    qb.andWhere(`${at} <= :cursorAt AND (${at} < :cursorAt OR ${id} < :cursorId)`, params);
  }
  return qb
    .orderBy(at, 'DESC')
    .addOrderBy(id, 'DESC')
    .offset(filter.offset ?? 0)
    .limit(filter.limit);
}

/** The plans the filter keeps, unordered. */
function filteredPlans(ds: DataSource, filter: PlanListFilter): SelectQueryBuilder<ExecutionPlanRow> {
  const qb = ds.getRepository<ExecutionPlanRow>(ENTITY.plan).createQueryBuilder('p');
  const d = sqlDialectOf(ds);
  if (filter.agentId !== undefined) {
    // one row per plan and agent of its steps, kept exact by the writer (plan-writes.ts)
    qb.innerJoin(ENTITY.planAgent, 'a', `a.planId = p.id AND ${d.sameText('a.agentId', ':agentId')}`, {
      agentId: filter.agentId,
    });
  }
  if (filter.sessionId !== undefined) qb.andWhere('p.sessionId = :sessionId', { sessionId: filter.sessionId });
  if (filter.statuses && filter.statuses.length > 0)
    qb.andWhere('p.status IN (:...statuses)', { statuses: paddedStatuses(filter.statuses) });
  if (filter.stalled) {
    const stalled = qb
      .subQuery()
      .select('1')
      .from(ENTITY.head, 'h')
      .where('h.planId = p.id')
      .andWhere('h.stalledAt IS NOT NULL');
    qb.andWhere(`EXISTS ${stalled.getQuery()}`);
  }
  if (filter.created) whereCreatedIn(ds, qb, filter.created);
  return qb;
}

/** `--status` of a plan list: a stored status, or `stalled`; else a QueryArgumentError naming every value. */
export function planStatusFilter(raw: string, argument = '--status'): Pick<PlanListFilter, 'statuses' | 'stalled'> {
  const value = raw.trim().toLowerCase();
  if (value === 'stalled') return { statuses: ['executing'], stalled: true };
  if (!(PLAN_STATUS_VALUES as readonly string[]).includes(value))
    throw new QueryArgumentError(argument, `"${raw}" is not one of ${PLAN_LIST_STATUS_VALUES.join(', ')}`);
  return { statuses: [value as PlanStatus] };
}

/**
 * Plans matching the filter, counted up to `cap` + 1: a COUNT over at most that many index
 * entries, whatever the table holds.
 */
async function countUpTo(ds: DataSource, filter: PlanListFilter, cap: number): Promise<number> {
  const inner = filteredPlans(ds, filter).select('1', 'one');
  const d = sqlDialectOf(ds);
  const [sql, params] = inner.getQueryAndParameters();
  const bounded = d.name === 'mssql' ? sql.replace(/^SELECT /, `SELECT TOP ${cap + 1} `) : `${sql} LIMIT ${cap + 1}`;
  const rows: Array<{ n: unknown }> = await ds.query(`SELECT COUNT(*) AS n FROM (${bounded}) counted`, params);
  return Number(rows[0]?.n ?? 0);
}

export async function listPlans(ds: DataSource, filter: PlanListFilter): Promise<PlanPage> {
  const offset = filter.offset ?? 0;
  const cap = Math.max(PLAN_COUNT_CAP, offset + filter.limit);
  const [rows, counted] = await Promise.all([
    buildPlanListQuery(ds, { ...filter, limit: filter.limit + 1 }).getMany(),
    countUpTo(ds, filter, cap),
  ]);
  const hasMore = rows.length > filter.limit;
  const page = hasMore ? rows.slice(0, filter.limit) : rows;
  const last = page[page.length - 1];
  return {
    total: Math.min(counted, cap),
    totalExact: counted <= cap,
    limit: filter.limit,
    offset,
    hasMore,
    nextCursor: hasMore && last ? formatPlanCursor({ createdAt: last.createdAt, planId: last.id }) : null,
    plans: page.map(toPlanSummary),
  };
}

/** A cursor as pages hand it out: the instant and the id, base64url (opaque to callers). */
export function formatPlanCursor(cursor: PlanCursor): string {
  return Buffer.from(`${toIso(cursor.createdAt)} ${cursor.planId}`, 'utf8').toString('base64url');
}

/** `--cursor` / `cursor`: a `nextCursor` of an earlier page, else a QueryArgumentError. */
export function parsePlanCursor(raw: string, argument = '--cursor'): PlanCursor {
  const text = /^[A-Za-z0-9_-]{1,200}$/.test(raw) ? Buffer.from(raw, 'base64url').toString('utf8') : '';
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z) (.{1,64})$/s.exec(text);
  const createdAt = m ? new Date(m[1]) : undefined;
  if (!m || !createdAt || Number.isNaN(createdAt.getTime()))
    throw new QueryArgumentError(argument, `"${raw.slice(0, 80)}" is not a cursor of plans list (pass its nextCursor)`);
  return { createdAt, planId: m[2] };
}

/**
 * The statuses repeated up to as many values as there are statuses, so that the statement's text is the same for
 * any number of them (SQL Server caches one plan per text); a repeat changes no result.
 */
function paddedStatuses(statuses: readonly PlanStatus[]): PlanStatus[] {
  return Array.from(
    { length: Math.max(PLAN_STATUS_VALUES.length, statuses.length) },
    (_, i) => statuses[i % statuses.length]!,
  );
}
