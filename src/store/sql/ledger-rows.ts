import { EntityManager, In } from 'typeorm';
import { lockHeadsStatement } from '../ledger/log-statements';
import { ENTITY, PlanEventRow, PlanHeadRow } from '../entities';
import { chunk, valuesPerInList } from './batch-limits';
import type { EventRowInput, LockedHead, SqlDialect } from './sql-dialect';

/**
 * The ledger's reads and writes as the databases without a faster way of their own do them
 * (MySQL/MariaDB and SQL Server; SQLite and PostgreSQL each have theirs in their dialect file).
 */

/**
 * Create the missing heads and lock every one, in key order, then read them: an upsert that
 * updates nothing (it takes each row's exclusive lock at once: no shared-to-exclusive upgrade to
 * deadlock on), then a version bump, which makes version 1 mean "created by this transaction".
 */
export async function lockHeadsByUpsert(
  m: EntityManager,
  dialect: SqlDialect,
  sorted: PlanHeadRow[],
): Promise<Map<string, LockedHead>> {
  const ids = sorted.map((r) => r.planId);
  const rows = dialect.rows(m);
  await rows.upsert(ENTITY.head, sorted, { key: 'planId', update: [], concurrentInserts: true });
  await bumpHeadsByUpdate(m, dialect, ids);
  const heads = new Map<string, LockedHead>();
  for (const r of await rows.findIn<PlanHeadRow>(ENTITY.head, 'planId', ids))
    heads.set(r.planId, { ...r, isNew: r.version === 1 });
  return heads;
}

/** Lock stored heads by bumping their version, in IN-list chunks (the statement is lockHeadsStatement's). */
export async function bumpHeadsByUpdate(m: EntityManager, dialect: SqlDialect, ids: string[]): Promise<void> {
  for (const part of chunk(ids, valuesPerInList(dialect))) await lockHeadsStatement(m, dialect, part).execute();
}

/** The plan of each stored event id, read in IN-list chunks. */
export async function eventPlansByFind(
  m: EntityManager,
  dialect: SqlDialect,
  ids: string[],
): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  for (const part of chunk(ids, valuesPerInList(dialect))) {
    const rows = await m
      .getRepository<PlanEventRow>(ENTITY.event)
      .find({ select: { eventId: true, planId: true }, where: { eventId: In(part) }, withDeleted: true });
    for (const r of rows) found.set(r.eventId.toLowerCase(), r.planId);
  }
  return found;
}

/**
 * Events appended as rows with their payload as JSON text; every row is inserted (no skipping).
 * The rows are the caller's to give away: each payload is replaced by its JSON text in place.
 */
export async function appendEventRows(
  m: EntityManager,
  dialect: SqlDialect,
  rows: EventRowInput[],
): Promise<Set<string>> {
  for (const r of rows) r.payload = JSON.stringify(r.payload);
  await dialect.rows(m).insert(ENTITY.event, rows);
  return new Set(rows.map((r) => r.eventId));
}
