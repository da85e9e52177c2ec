import { EntityManager, UpdateQueryBuilder } from 'typeorm';
import { inIds } from '../sql/id-lists';
import type { SqlDialect } from '../sql/sql-dialect';
import { ENTITY } from '../entities';

/**
 * Statements of the event store beyond plain row writes (row-statements.ts), as QueryBuilders or
 * SQL: the store executes them; the SQL Server test renders them on a DataSource that never
 * connects.
 */

/**
 * Takes the plans' `plan_heads` row locks, the lock every writer of a plan takes first, so a
 * concurrent worker or retention run waits (rows locked in key order by every engine's IN-list
 * seek). Bumps the heads' version: whoever takes this lock may change the plan's rows, and a
 * worker's cached copy of them (plan-row-cache.ts) must no longer match. On SQLite it takes the
 * database write lock up front.
 */
export function lockHeadsStatement(
  m: EntityManager,
  dialect: SqlDialect,
  planIds: string[],
): UpdateQueryBuilder<object> {
  return m
    .createQueryBuilder()
    .update(ENTITY.head)
    .set({ version: () => 'version + 1' })
    .where({ planId: inIds(dialect, planIds) })
    .callListeners(false);
}

/** Where a page of a plan's log starts: after this (seq, eventId), or from the start. */
export interface LogCursor {
  seq: number;
  eventId: string;
}

/**
 * One page of a plan's stored events in canonical order (seq, then event id: see event-order.ts),
 * from `after` (exclusive) or from the seqs above `aboveSeq`, soft-deleted ones included.
 */
export function logPageStatement(
  m: EntityManager,
  planId: string,
  from: { after?: LogCursor; aboveSeq?: number },
  limit: number,
) {
  const qb = m
    .createQueryBuilder()
    .select('e')
    .from(ENTITY.event, 'e')
    .withDeleted()
    .where('e.planId = :planId', { planId });
  // `seq >= :seq` first: an index seek on (plan_id, seq) can start there (the OR alone bounds nothing)
  if (from.after)
    qb.andWhere('e.seq >= :seq AND (e.seq > :seq OR (e.seq = :seq AND e.eventId > :eventId))', from.after);
  else if (from.aboveSeq !== undefined) qb.andWhere('e.seq > :aboveSeq', { aboveSeq: from.aboveSeq });
  return qb.orderBy('e.seq', 'ASC').addOrderBy('e.eventId', 'ASC').limit(limit);
}

/** The plan.created that defines a plan, as stored: the first in canonical order. */
export function definingCreatedStatement(m: EntityManager, planId: string) {
  return m
    .createQueryBuilder()
    .select('e')
    .from(ENTITY.event, 'e')
    .withDeleted()
    .where('e.planId = :planId AND e.type = :type', { planId, type: 'plan.created' })
    .orderBy('e.seq', 'ASC')
    .addOrderBy('e.eventId', 'ASC')
    .limit(1);
}

/** Plans that have waited on a gap since `cutoff` or longer (docs/store.md#a-gap-that-never-fills). */
export function overdueGapsStatement(m: EntityManager, cutoff: unknown, limit: number) {
  return m
    .createQueryBuilder()
    .select('h.planId', 'planId')
    .from(ENTITY.head, 'h')
    .withDeleted()
    .where('h.gapSince <= :cutoff', { cutoff })
    .orderBy('h.gapSince', 'ASC')
    .limit(limit);
}

/** How many plans wait on a gap now. */
export function waitingPlansStatement(m: EntityManager) {
  return m
    .createQueryBuilder()
    .select('COUNT(*)', 'n')
    .from(ENTITY.head, 'h')
    .withDeleted()
    .where('h.gapSince IS NOT NULL');
}
