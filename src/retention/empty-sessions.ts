import type { EntityManager } from 'typeorm';
import { idsIn } from '../store/sql/id-lists';
import { ENTITY } from '../store/entities';
import { sqlDialectOf } from '../store/sql/dialects';
import { instant } from './retention-sql';

/** The sessions these plans belong to (from their plan row or, for orphans, their head). */
export async function sessionsOfPlans(m: EntityManager, planIds: string[]): Promise<string[]> {
  if (planIds.length === 0) return [];
  const fromPlans: Array<{ id: string }> = await m
    .createQueryBuilder()
    .select('p.sessionId', 'id')
    .from(ENTITY.plan, 'p')
    .withDeleted()
    .where(...idsIn(sqlDialectOf(m), 'p.id', planIds))
    .groupBy('p.sessionId')
    .getRawMany();
  const fromHeads: Array<{ id: string }> = await m
    .createQueryBuilder()
    .select('h.sessionId', 'id')
    .from(ENTITY.head, 'h')
    .withDeleted()
    .where(...idsIn(sqlDialectOf(m), 'h.planId', planIds))
    .groupBy('h.sessionId')
    .getRawMany();
  return [...new Set([...fromPlans, ...fromHeads].map((r) => r.id))].sort();
}

/**
 * Of these sessions (rows that exist), the ones with no execution_plans row left (soft-deleted
 * included): a session row is written with its plans' rows only, so an orphan's head does not keep
 * it. One NOT EXISTS per session through IX_execution_plans_session, stopping at the first plan.
 * With `survivingAfter` (a dry run, which deletes nothing), plans soft-deleted at or before that
 * instant count as gone, as the run would purge them.
 */
export async function emptySessions(m: EntityManager, sessionIds: string[], survivingAfter?: Date): Promise<string[]> {
  if (sessionIds.length === 0) return [];
  const qb = m
    .createQueryBuilder()
    .select('s.id', 'id')
    .from(ENTITY.session, 's')
    .where(...idsIn(sqlDialectOf(m), 's.id', sessionIds));
  const plans = qb.subQuery().select('1').from(ENTITY.plan, 'ep').withDeleted().where('ep.sessionId = s.id');
  if (survivingAfter) plans.andWhere('(ep.deletedAt IS NULL OR ep.deletedAt > :survivingAfter)');
  qb.andWhere(`NOT EXISTS ${plans.getQuery()}`);
  if (survivingAfter) qb.setParameter('survivingAfter', instant(m, survivingAfter));
  const rows: Array<{ id: string }> = await qb.getRawMany();
  return rows.map((r) => r.id).sort();
}

/**
 * Locks these session rows (the ones that exist) for the rest of the transaction, in key order,
 * and returns their ids. A worker that writes a plan of a session upserts the session row first,
 * then inserts the plan row, in one transaction (PlanWrites.write): once this lock is granted, such
 * a worker has committed, or it waits for this transaction to end before it writes the plan. Under
 * READ COMMITTED (SQL Server's snapshot flavour included) a statement that starts after the grant
 * sees what the worker committed, so `emptySessions` run next cannot miss its plan. A plain read
 * would not wait: a snapshot shows no uncommitted plan, and the DELETE that then waits for the
 * worker's lock on the session row deletes it anyway, the new plan with it (ON DELETE CASCADE).
 * `FOR UPDATE` on PostgreSQL and MySQL, `WITH (UPDLOCK, ROWLOCK)` on SQL Server; SQLite runs one
 * writer at a time, so no worker is half-way there.
 */
export async function lockSessions(m: EntityManager, sessionIds: string[]): Promise<string[]> {
  if (sessionIds.length === 0) return [];
  if (sqlDialectOf(m).serializesWrites) return [...sessionIds].sort();
  const rows: Array<{ id: string }> = await m
    .createQueryBuilder()
    .select('s.id', 'id')
    .from(ENTITY.session, 's')
    .where(...idsIn(sqlDialectOf(m), 's.id', sessionIds))
    .orderBy('s.id', 'ASC')
    .setLock('pessimistic_write')
    .getRawMany();
  return rows.map((r) => r.id);
}

/**
 * Deletes the sessions among these that have no plan row left, and returns how many: they are
 * locked first, then checked in a statement of their own, then deleted (see lockSessions).
 */
export async function deleteEmptySessions(m: EntityManager, sessionIds: string[]): Promise<number> {
  const locked = await lockSessions(m, sessionIds);
  return deleteSessions(m, await emptySessions(m, locked));
}

/** Deletes these session rows; the number deleted. Lock and check them first (deleteEmptySessions). */
export async function deleteSessions(m: EntityManager, sessionIds: string[]): Promise<number> {
  if (sessionIds.length === 0) return 0;
  const result = await m
    .createQueryBuilder()
    .delete()
    .from(ENTITY.session)
    .where(...idsIn(sqlDialectOf(m), m.connection.driver.escape('id'), sessionIds))
    .callListeners(false)
    .execute();
  return result.affected ?? 0;
}
