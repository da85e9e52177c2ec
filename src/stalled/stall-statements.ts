import type { EntityManager } from 'typeorm';
import { ENTITY } from '../store/entities';
import { inIds } from '../store/sql/id-lists';
import { sqlDialectOf } from '../store/sql/dialects';

/**
 * Every statement of the stall check and of the stalled-plan reads, built with TypeORM's
 * QueryBuilder (quoting, parameter style and pagination are the driver's), as plain functions of
 * an EntityManager so the SQL Server text can be recorded and checked without a server.
 */

/**
 * Running plans not marked yet whose check time has come, earliest first: one range of
 * IX_plan_heads_stall_check. Each is past its deadline (`stall_due_at`), or its events pushed the
 * deadline on since the check time was set.
 */
export function dueStallsStatement(m: EntityManager, now: unknown, limit: number) {
  return m
    .createQueryBuilder()
    .select('h.planId', 'planId')
    .from(ENTITY.head, 'h')
    .withDeleted()
    .where('h.stallCheckAt <= :now', { now })
    .andWhere('h.stalledAt IS NULL')
    .andWhere('h.deletedAt IS NULL')
    .orderBy('h.stallCheckAt', 'ASC')
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

/**
 * Running plans the stall check does not watch yet: `executing`, no `stall_due_at` (plans running
 * when the StalledPlans migration ran, before their next event). One range of
 * IX_execution_plans_status_created joined to the heads by key.
 */
export function unwatchedRunningStatement(m: EntityManager, limit: number) {
  return m
    .createQueryBuilder()
    .select('h.planId', 'planId')
    .from(ENTITY.head, 'h')
    .withDeleted()
    .innerJoin(ENTITY.plan, 'p', 'p.id = h.planId')
    .where('p.status = :status', { status: 'executing' })
    .andWhere('h.stallDueAt IS NULL')
    .andWhere('h.stalledAt IS NULL')
    .andWhere('h.deletedAt IS NULL')
    .orderBy('h.planId', 'ASC')
    .limit(limit);
}

/** Approvals past their expiry, undecided, unconsumed and not found expired yet, earliest first: IX_approvals_expiry. */
export function dueExpiriesStatement(m: EntityManager, now: unknown, limit: number) {
  return m
    .createQueryBuilder()
    .select('a.approvalId', 'approvalId')
    .addSelect('a.planId', 'planId')
    .from(ENTITY.approval, 'a')
    .where('a.expiredAt IS NULL')
    .andWhere('a.expiresAt <= :now', { now })
    .andWhere('a.decision IS NULL')
    .andWhere('a.consumedAt IS NULL')
    .orderBy('a.expiresAt', 'ASC')
    .addOrderBy('a.approvalId', 'ASC')
    .limit(limit);
}

/** Mark these approvals (their plans' heads locked by the caller's transaction) expired at `now`. */
export function markExpiredStatement(m: EntityManager, approvalIds: readonly string[], now: Date) {
  return m
    .createQueryBuilder()
    .update(ENTITY.approval)
    .set({ expiredAt: now })
    .where({ approvalId: inIds(sqlDialectOf(m), approvalIds) })
    .callListeners(false);
}
