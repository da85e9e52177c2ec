import { EntityManager, In } from 'typeorm';
import { chunk, valuesPerInList } from './batch-limits';
import type { Dialect } from './dialect';
import { ENTITY, PlanHeadRow } from './entities';
import { pgArrayLiteral } from './postgres-array';
import { lockHeadsStatement } from './plan-event-statements';
import { RowWriter } from './row-writer';
import { SqliteRows } from './sqlite-rows';

/** A plan head under this transaction's lock; `version` is already the one this transaction writes. */
export interface LockedHead extends PlanHeadRow {
  /** This transaction created the head: none of the plan's events was stored before. */
  isNew: boolean;
}

/** The head of a plan seen for the first time. */
export function newHead(planId: string, sessionId: string, now: Date): PlanHeadRow {
  return { planId, sessionId, version: 0, eventCount: 0, lastSeq: 0, appliedSeq: null, pendingEvents: 0, gapSince: null, updatedAt: now, restoredAt: null, deletedAt: null };
}

/**
 * Create the missing heads and lock every one, in key order, then read them. Every lock is
 * exclusive from the start (no shared-to-exclusive upgrade to deadlock on), and every writer takes
 * them before reading anything of the plans, so what it reads next is what earlier writers committed.
 */
export async function lockHeads(m: EntityManager, dialect: Dialect, rows: PlanHeadRow[]): Promise<Map<string, LockedHead>> {
  const sorted = [...rows].sort((a, b) => (a.planId < b.planId ? -1 : a.planId > b.planId ? 1 : 0));
  const ids = sorted.map((r) => r.planId);
  const heads = new Map<string, LockedHead>();
  if (dialect === 'postgres') {
    // ON CONFLICT DO UPDATE ... WHERE false locks the stored rows without writing them (a write
    // here would only be overwritten by writeHeads); RETURNING names the rows it inserted. A new
    // head takes its other columns' defaults.
    const inserted: { plan_id: string }[] = await m.query(
      'INSERT INTO plan_heads (plan_id, session_id, version) SELECT p, s, 1 FROM unnest($1::varchar[], $2::varchar[]) AS u(p, s) ON CONFLICT (plan_id) DO UPDATE SET version = plan_heads.version WHERE false RETURNING plan_id',
      [pgArrayLiteral(ids), pgArrayLiteral(sorted.map((r) => r.sessionId))],
    );
    const created = new Set(inserted.map((r) => r.plan_id));
    for (const r of await m.query(`SELECT * FROM plan_heads WHERE plan_id = ANY($1::varchar[])`, [pgArrayLiteral(ids)])) {
      // the version this transaction writes (writeHeads), as the bump gives it elsewhere
      heads.set(r.plan_id, lockedFromRaw(r, created.has(r.plan_id)));
    }
    return heads;
  }
  if (dialect === 'sqlite') return sqliteHeads(m, sorted);
  const writer = new RowWriter(m, dialect);
  await writer.upsert(ENTITY.head, sorted, { key: 'planId', update: [] });
  for (const part of chunk(ids, valuesPerInList(dialect))) {
    // the bump makes version 1 mean "created by this transaction"
    await m.createQueryBuilder().update(ENTITY.head).set({ version: () => 'version + 1' }).where({ planId: In(part) }).callListeners(false).execute();
  }
  for (const r of await writer.findIn<PlanHeadRow>(ENTITY.head, 'planId', ids)) heads.set(r.planId, { ...r, isNew: r.version === 1 });
  return heads;
}

/**
 * SQLite: one writer at a time (in process, the store's queue; across processes, the database
 * lock, taken at the first write: a reader whose snapshot another process outdated meanwhile
 * fails that write with SQLITE_BUSY_SNAPSHOT, which the worker retries). So read the heads, and
 * insert the missing ones.
 */
function sqliteHeads(m: EntityManager, sorted: PlanHeadRow[]): Map<string, LockedHead> {
  const rows = new SqliteRows(m);
  const heads = new Map<string, LockedHead>();
  for (const r of rows.findIn<PlanHeadRow>(ENTITY.head, 'planId', sorted.map((h) => h.planId))) heads.set(r.planId, { ...r, version: r.version + 1, isNew: false });
  const missing = sorted.filter((h) => !heads.has(h.planId)).map((h) => ({ ...h, version: 1 }));
  rows.insert(ENTITY.head, missing);
  for (const h of missing) heads.set(h.planId, { ...h, isNew: true });
  return heads;
}

/** Lock and read the heads of stored plans (absent ones are missing from the map); the lock bumped their version already. */
export async function lockStoredHeads(m: EntityManager, dialect: Dialect, planIds: string[]): Promise<Map<string, LockedHead>> {
  const heads = new Map<string, LockedHead>();
  const ids = [...planIds].sort();
  for (const part of chunk(ids, valuesPerInList(dialect))) {
    await lockHeadsStatement(m, part).execute();
    for (const r of await m.getRepository<PlanHeadRow>(ENTITY.head).find({ where: { planId: In(part) }, withDeleted: true })) heads.set(r.planId, { ...r, isNew: false });
  }
  return heads;
}

/** Write the heads' new state (they are locked by this transaction). */
export async function writeHeads(m: EntityManager, dialect: Dialect, heads: PlanHeadRow[]): Promise<void> {
  const update = ['version', 'eventCount', 'lastSeq', 'appliedSeq', 'pendingEvents', 'gapSince', 'updatedAt'] as const;
  await new RowWriter(m, dialect).update(ENTITY.head, heads, 'planId', update);
}

function lockedFromRaw(r: Record<string, unknown>, isNew: boolean): LockedHead {
  return {
    planId: r.plan_id as string,
    sessionId: r.session_id as string,
    version: isNew ? 1 : (r.version as number) + 1,
    eventCount: r.event_count as number,
    lastSeq: r.last_seq as number,
    appliedSeq: r.applied_seq as number | null,
    pendingEvents: r.pending_events as number,
    gapSince: r.gap_since as Date | null,
    updatedAt: r.updated_at as Date,
    restoredAt: (r.restored_at ?? null) as Date | null,
    deletedAt: r.deleted_at as Date | null,
    isNew,
  };
}
