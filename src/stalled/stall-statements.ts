import type { EntityManager } from 'typeorm';
import { ENTITY } from '../store/entities';
import { inIds } from '../store/sql/id-lists';
import { sqlDialectOf } from '../store/sql/dialects';

/**
 * Every statement of the stall check and of the stalled-plan reads, built with TypeORM's
 * QueryBuilder (quoting, parameter style and pagination are the driver's), as plain functions of
 * an EntityManager so the SQL Server text can be recorded and checked without a server.
 */

/** Running plans past their stall deadline not marked yet, earliest due first: one range of IX_plan_heads_stall_due. */
export function dueStallsStatement(m: EntityManager, now: unknown, limit: number) {
  return m
    .createQueryBuilder()
    .select('h.planId', 'planId')
    .from(ENTITY.head, 'h')
    .withDeleted()
    .where('h.stallDueAt <= :now', { now })
    .andWhere('h.stalledAt IS NULL')
    .andWhere('h.deletedAt IS NULL')
    .orderBy('h.stallDueAt', 'ASC')
    .limit(limit);
}

/** Mark these plans (their heads locked by the caller's transaction) stalled since `now`. */
export function markStalledStatement(m: EntityManager, planIds: readonly string[], now: Date) {
  return m
    .createQueryBuilder()
    .update(ENTITY.head)
    .set({ stalledAt: now })
    .where({ planId: inIds(sqlDialectOf(m), planIds) })
    .callListeners(false);
}

/** How many live plans are stalled now (the `plan_ledger_plans_stalled` gauge): one range of IX_plan_heads_stalled. */
export function stalledCountStatement(m: EntityManager) {
  return m
    .createQueryBuilder()
    .select('COUNT(*)', 'n')
    .from(ENTITY.head, 'h')
    .withDeleted()
    .where('h.stalledAt IS NOT NULL')
    .andWhere('h.deletedAt IS NULL');
}
