import type { EntityManager } from 'typeorm';
import { ENTITY } from '../store/entities';
import { instant } from './retention-sql';

/** The sessions these plans belong to (from their plan row or, for orphans, their head). */
export async function sessionsOfPlans(m: EntityManager, planIds: string[]): Promise<string[]> {
  if (planIds.length === 0) return [];
  const fromPlans: Array<{ id: string }> = await m
    .createQueryBuilder()
    .select('p.sessionId', 'id')
    .from(ENTITY.plan, 'p')
    .withDeleted()
    .where('p.id IN (:...ids)', { ids: planIds })
    .groupBy('p.sessionId')
    .getRawMany();
  const fromHeads: Array<{ id: string }> = await m
    .createQueryBuilder()
    .select('h.sessionId', 'id')
    .from(ENTITY.head, 'h')
    .withDeleted()
    .where('h.planId IN (:...ids)', { ids: planIds })
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
    .where('s.id IN (:...sids)', { sids: sessionIds });
  const plans = qb.subQuery().select('1').from(ENTITY.plan, 'ep').withDeleted().where('ep.sessionId = s.id');
  if (survivingAfter) plans.andWhere('(ep.deletedAt IS NULL OR ep.deletedAt > :survivingAfter)');
  qb.andWhere(`NOT EXISTS ${plans.getQuery()}`);
  if (survivingAfter) qb.setParameter('survivingAfter', instant(m, survivingAfter));
  const rows: Array<{ id: string }> = await qb.getRawMany();
  return rows.map((r) => r.id).sort();
}

/** Deletes these session rows; the number deleted. */
export async function deleteSessions(m: EntityManager, sessionIds: string[]): Promise<number> {
  if (sessionIds.length === 0) return 0;
  const result = await m
    .createQueryBuilder()
    .delete()
    .from(ENTITY.session)
    .where('id IN (:...sids)', { sids: sessionIds })
    .callListeners(false)
    .execute();
  return result.affected ?? 0;
}
