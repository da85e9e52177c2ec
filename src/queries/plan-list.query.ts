import type { DataSource, SelectQueryBuilder } from 'typeorm';
import { ENTITY, ExecutionPlanRow, PlanStatus } from '../store/entities';
import { PlanSummary, toPlanSummary } from './plan-rows';

export interface PlanListFilter {
  /** Only this session's plans. @defaultValue every session */
  sessionId?: string;
  /** Only plans in these statuses. @defaultValue every status */
  statuses?: readonly PlanStatus[];
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
  if (filter.statuses && filter.statuses.length > 0) qb.andWhere('p.status IN (:...statuses)', { statuses: [...filter.statuses] });
  return qb
    .orderBy('p.createdAt', 'DESC')
    .addOrderBy('p.id', 'DESC')
    .offset(filter.offset ?? 0)
    .limit(filter.limit);
}

export async function listPlans(ds: DataSource, filter: PlanListFilter): Promise<PlanPage> {
  const qb = buildPlanListQuery(ds, filter);
  const [rows, total] = await Promise.all([qb.getMany(), qb.clone().offset(undefined).limit(undefined).orderBy().getCount()]);
  return { total, limit: filter.limit, offset: filter.offset ?? 0, plans: rows.map(toPlanSummary) };
}
