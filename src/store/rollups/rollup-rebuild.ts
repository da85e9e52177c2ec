import type { EntityManager, SelectQueryBuilder } from 'typeorm';
import { ENTITY, type ExecutionPlanRow, ROLLUP_KINDS, type RollupKind } from '../entities';
import { sqlDialectOf } from '../sql/dialects';
import { measurePlans } from './rollup-measure';
import { RollupDelta } from './rollup-rows';

/** Plans read per page of a rebuild. */
const REBUILD_PAGE = 500;

/** What a rebuild covers; absent fields: everything. */
export interface RollupRebuild {
  /**
   * Whole UTC days `[from, to)` (`YYYY-MM-DD`) of the plans' creation: their rows are rebuilt, no
   * others (with either bound, the `session-total` rows, of all days, are left as they are).
   */
  from?: string;
  to?: string;
  /** Only the rows of these kinds (a migration that adds a kind fills it alone). */
  kinds?: readonly RollupKind[];
  /** Called after each page with the plans read so far. */
  onProgress?: (plans: number) => void;
}

/**
 * The rollups again from the stored plans and steps: the rows of the days and kinds asked for
 * deleted, then the sums of the live plans created on those days added a page of plans at a time
 * (keyset on the plan id), all in the transaction of `m` (the head locks are not taken: run it
 * with the worker stopped, or after `migrate`, which runs it for existing databases). Memory is
 * that of one page. Returns the number of plans read.
 */
export async function rebuildRollups(m: EntityManager, o: RollupRebuild = {}): Promise<{ plans: number }> {
  const rows = sqlDialectOf(m.connection).rows(m);
  const q = (name: string) => m.connection.driver.escape(name);
  const kinds = o.from || o.to ? (o.kinds ?? ROLLUP_KINDS).filter((k) => k !== 'session-total') : o.kinds;
  if (kinds?.length === 0) return { plans: 0 };
  const del = m.createQueryBuilder().delete().from(ENTITY.rollup).where('1 = 1');
  if (o.from) del.andWhere(`${q('day')} >= :fromDay`, { fromDay: o.from });
  if (o.to) del.andWhere(`${q('day')} < :toDay`, { toDay: o.to });
  if (kinds) del.andWhere(`${q('kind')} IN (:...kinds)`, { kinds: [...kinds] });
  await del.execute();
  const delta = new RollupDelta(kinds);
  let after: string | null = null;
  let plans = 0;
  for (;;) {
    const ids = await planPage(m, o, after);
    if (ids.length === 0) break;
    plans += ids.length;
    after = ids[ids.length - 1];
    await measurePlans(m, ids, delta, 1);
    // written a page at a time (the upsert adds): memory stays that of one page's keys
    await delta.write(rows);
    o.onProgress?.(plans);
    if (ids.length < REBUILD_PAGE) break;
  }
  return { plans };
}

/** Live plans a rebuild of these days reads (for its progress). */
export async function countRebuildPlans(m: EntityManager, o: Pick<RollupRebuild, 'from' | 'to'>): Promise<number> {
  const qb = m.getRepository<ExecutionPlanRow>(ENTITY.plan).createQueryBuilder('p').where('1 = 1');
  return inDays(m, qb, o).getCount();
}

/** The next page of live plans' ids after `after`, created in the days of `o`. */
async function planPage(m: EntityManager, o: RollupRebuild, after: string | null): Promise<string[]> {
  const qb = m
    .getRepository<ExecutionPlanRow>(ENTITY.plan)
    .createQueryBuilder('p')
    .select('p.id', 'id')
    .where('1 = 1')
    .orderBy('p.id', 'ASC')
    .limit(REBUILD_PAGE);
  if (after !== null) qb.andWhere('p.id > :after', { after });
  return (await inDays(m, qb, o).getRawMany<{ id: string }>()).map((r) => String(r.id));
}

function inDays<T extends SelectQueryBuilder<ExecutionPlanRow>>(m: EntityManager, qb: T, o: RollupRebuild): T {
  const d = sqlDialectOf(m.connection);
  const midnight = (day: string) => d.instant(new Date(`${day}T00:00:00.000Z`));
  if (o.from) qb.andWhere('p.createdAt >= :fromAt', { fromAt: midnight(o.from) });
  if (o.to) qb.andWhere('p.createdAt < :toAt', { toAt: midnight(o.to) });
  return qb;
}
