import type { DataSource, SelectQueryBuilder } from 'typeorm';
import { ENTITY, ExecutionPlanRow, PlanStatus } from '../store/entities';
import { whereCreatedIn } from './analytics.query';
import { sqlDialectOf } from '../store/sql/dialects';
import { PlanSummary, toPlanSummary } from './plan-rows';
import type { DateRange } from './query-args';

export interface PlanListFilter {
  /** Only this session's plans. @defaultValue every session */
  sessionId?: string;
  /** Only plans in these statuses. @defaultValue every status */
  statuses?: readonly PlanStatus[];
  /** Only plans created in this range (from inclusive, to exclusive). @defaultValue any time */
  created?: DateRange;
  /** Only plans with a step assigned to this agent. @defaultValue any agent */
  agentId?: string;
  /** Page size (validate with `parseLimit`). */
  limit: number;
  /** Plans skipped before the page. @defaultValue 0 */
  offset?: number;
}

export interface PlanPage {
  /** Plans matching the filter, all pages together. */
  total: number;
  limit: number;
  offset: number;
  plans: PlanSummary[];
}

/**
 * Newest first; the id breaks ties so pages never overlap. Pagination is TypeORM's per dialect:
 * LIMIT/OFFSET, or OFFSET ... FETCH NEXT on SQL Server (which needs the ORDER BY it gets here).
 */
export function buildPlanListQuery(ds: DataSource, filter: PlanListFilter): SelectQueryBuilder<ExecutionPlanRow> {
  const qb = ds.getRepository<ExecutionPlanRow>(ENTITY.plan).createQueryBuilder('p');
  if (filter.sessionId !== undefined) qb.andWhere('p.sessionId = :sessionId', { sessionId: filter.sessionId });
  if (filter.statuses && filter.statuses.length > 0)
    qb.andWhere('p.status IN (:...statuses)', { statuses: [...filter.statuses] });
  if (filter.created) whereCreatedIn(ds, qb, filter.created);
  if (filter.agentId !== undefined) {
    const steps = qb
      .subQuery()
      .select('1')
      .from(ENTITY.step, 's')
      .where('s.planId = p.id')
      .andWhere(sqlDialectOf(ds).sameText('s.agentId', ':agentId'));
    qb.andWhere(`EXISTS ${steps.getQuery()}`, { agentId: filter.agentId });
  }
  return qb
    .orderBy('p.createdAt', 'DESC')
    .addOrderBy('p.id', 'DESC')
    .offset(filter.offset ?? 0)
    .limit(filter.limit);
}

export async function listPlans(ds: DataSource, filter: PlanListFilter): Promise<PlanPage> {
  const qb = buildPlanListQuery(ds, filter);
  const [rows, total] = await Promise.all([
    qb.getMany(),
    qb.clone().offset(undefined).limit(undefined).orderBy().getCount(),
  ]);
  return { total, limit: filter.limit, offset: filter.offset ?? 0, plans: rows.map(toPlanSummary) };
}
