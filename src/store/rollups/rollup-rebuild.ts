import type { EntityManager } from 'typeorm';
import { ENTITY, type ExecutionPlanRow } from '../entities';
import { sqlDialectOf } from '../sql/dialects';
import { measurePlans } from './rollup-measure';
import { RollupDelta } from './rollup-rows';

/** Plans read per page of a rebuild. */
const REBUILD_PAGE = 500;

/**
 * The rollups again from the stored plans and steps: every row deleted, then the sums of the live
 * plans added a page of plans at a time (keyset on the plan id), all in the transaction of `m`
 * (the head locks are not taken: run it with the worker stopped, or after `migrate`, which runs
 * it for existing databases). Returns the number of plans read.
 */
export async function rebuildRollups(m: EntityManager): Promise<{ plans: number }> {
  const rows = sqlDialectOf(m.connection).rows(m);
  await m.createQueryBuilder().delete().from(ENTITY.rollup).execute();
  const delta = new RollupDelta();
  let after: string | null = null;
  let plans = 0;
  for (;;) {
    const qb = m
      .getRepository<ExecutionPlanRow>(ENTITY.plan)
      .createQueryBuilder('p')
      .select('p.id', 'id')
      .orderBy('p.id', 'ASC')
      .limit(REBUILD_PAGE);
    if (after !== null) qb.where('p.id > :after', { after });
    const ids = (await qb.getRawMany<{ id: string }>()).map((r) => String(r.id));
    if (ids.length === 0) break;
    plans += ids.length;
    after = ids[ids.length - 1];
    await measurePlans(m, ids, delta, 1);
    // written a page at a time (the upsert adds): memory stays that of one page's keys
    await delta.write(rows);
    if (ids.length < REBUILD_PAGE) break;
  }
  return { plans };
}
