import type { EntityManager } from 'typeorm';
import { ENTITY, PlanHeadRow } from '../entities';
import type { LockedHead, SqlDialect } from '../sql/sql-dialect';

export type { LockedHead } from '../sql/sql-dialect';

/**
 * A plan's head is its row in `plan_heads`: created by the plan's first event, locked by every
 * writer of the plan before it reads anything of it, and holding the plan's watermark.
 */

/** The head of a plan seen for the first time. */
export function newHead(planId: string, sessionId: string, now: Date): PlanHeadRow {
  return {
    planId,
    sessionId,
    version: 0,
    eventCount: 0,
    lastSeq: 0,
    appliedSeq: null,
    pendingEvents: 0,
    gapSince: null,
    updatedAt: now,
    restoredAt: null,
    deadlineMs: null,
    stallDueAt: null,
    stallCheckAt: null,
    stalledAt: null,
    deletedAt: null,
  };
}

/**
 * Create the missing heads and lock every one, in key order, then read them. Every lock is
 * exclusive from the start (no shared-to-exclusive upgrade to deadlock on), and every writer takes
 * them before reading anything of the plans, so what it reads next is what earlier writers committed.
 */
export async function lockHeads(
  m: EntityManager,
  dialect: SqlDialect,
  rows: PlanHeadRow[],
): Promise<Map<string, LockedHead>> {
  const sorted = [...rows].sort((a, b) => (a.planId < b.planId ? -1 : a.planId > b.planId ? 1 : 0));
  return dialect.lockHeads(m, sorted);
}

/**
 * Lock and read the heads of stored plans (absent ones are missing from the map); the lock bumped their version
 * already.
 */
export async function lockStoredHeads(
  m: EntityManager,
  dialect: SqlDialect,
  planIds: string[],
): Promise<Map<string, LockedHead>> {
  const ids = [...planIds].sort();
  await dialect.bumpHeads(m, ids);
  const heads = new Map<string, LockedHead>();
  for (const r of await dialect.rows(m).findIn<PlanHeadRow>(ENTITY.head, 'planId', ids))
    heads.set(r.planId, { ...r, isNew: false });
  return heads;
}

/** Write the heads' new state (they are locked by this transaction). */
export async function writeHeads(m: EntityManager, dialect: SqlDialect, heads: PlanHeadRow[]): Promise<void> {
  const update = [
    'version',
    'eventCount',
    'lastSeq',
    'appliedSeq',
    'pendingEvents',
    'gapSince',
    'updatedAt',
    'deadlineMs',
    'stallDueAt',
    'stallCheckAt',
    'stalledAt',
  ] as const;
  await dialect.rows(m).update(ENTITY.head, heads, 'planId', update);
}
