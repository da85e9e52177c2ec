import type { EntityManager } from 'typeorm';
import { ENTITY } from '../store/entities';

/** The sessions these plans belong to (from their plan row or, for orphans, their head). */
export async function sessionsOfPlans(m: EntityManager, planIds: string[]): Promise<string[]> {
  if (planIds.length === 0) return [];
  const fromPlans: Array<{ id: string }> = await m.createQueryBuilder().select('p.sessionId', 'id').from(ENTITY.plan, 'p').withDeleted().where('p.id IN (:...ids)', { ids: planIds }).groupBy('p.sessionId').getRawMany();
  const fromHeads: Array<{ id: string }> = await m.createQueryBuilder().select('h.sessionId', 'id').from(ENTITY.head, 'h').withDeleted().where('h.planId IN (:...ids)', { ids: planIds }).groupBy('h.sessionId').getRawMany();
  return [...new Set([...fromPlans, ...fromHeads].map((r) => r.id))].sort();
}

/**
 * Of these sessions (rows that exist), the ones with no execution_plans row (soft-deleted
 * included) outside `leaving`: those a purge of `leaving` leaves empty. A session row is written
 * with its plans' rows only, so an orphan's head does not keep it (and plan_heads has no index on
 * session_id). Run after the purge, `leaving` only matters to a dry run, which deletes nothing.
 * Reads the sessions' plan ids through IX_execution_plans_session, not a NOT IN list, so a dry
 * run's whole set of would-be-purged plans never becomes statement parameters.
 */
export async function emptySessions(m: EntityManager, sessionIds: string[], leaving: ReadonlySet<string>): Promise<string[]> {
  if (sessionIds.length === 0) return [];
  const existing: Array<{ id: string }> = await m.createQueryBuilder().select('s.id', 'id').from(ENTITY.session, 's').where('s.id IN (:...sids)', { sids: sessionIds }).getRawMany();
  const owned = async (entity: string, key: string) =>
    (await m.createQueryBuilder().select(`t.sessionId`, 'sessionId').addSelect(`t.${key}`, 'planId').from(entity, 't').withDeleted().where('t.sessionId IN (:...sids)', { sids: sessionIds }).getRawMany()) as Array<{ sessionId: string; planId: string }>;
  const busy = new Set<string>();
  for (const r of await owned(ENTITY.plan, 'id')) if (!leaving.has(r.planId)) busy.add(r.sessionId);
  return existing.map((r) => r.id).filter((id) => !busy.has(id)).sort();
}

/** Deletes these session rows; the number deleted. */
export async function deleteSessions(m: EntityManager, sessionIds: string[]): Promise<number> {
  if (sessionIds.length === 0) return 0;
  const result = await m.createQueryBuilder().delete().from(ENTITY.session).where('id IN (:...sids)', { sids: sessionIds }).callListeners(false).execute();
  return result.affected ?? 0;
}
