import type { DataSource } from 'typeorm';
import { ENTITY, PlanEventRow } from '../store/entities';
import { toNum } from './row-normalize';

/**
 * The `seq` an executor should publish next for a plan: one past the highest `seq` stored in its
 * event log (0 when nothing is stored). Soft-deleted events count too: a seq once used is never
 * handed out again, so a restarted executor never makes the worker rebuild the plan (see
 * docs/store.md#late-events-rebuild). Events still in the queue are not counted: an executor that
 * restarts while its own events are in flight should wait for them (or add its own margin).
 */
export async function getNextSeq(ds: DataSource, planId: string): Promise<number> {
  const row = await ds
    .getRepository<PlanEventRow>(ENTITY.event)
    .createQueryBuilder('e')
    .withDeleted()
    .select('MAX(e.seq)', 'maxSeq')
    .where('e.planId = :planId', { planId })
    .getRawOne<{ maxSeq: unknown }>();
  const max = row?.maxSeq;
  return max === null || max === undefined ? 0 : toNum(max) + 1;
}
