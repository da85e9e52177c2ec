import type { DataSource, EntityManager } from 'typeorm';
import { idsIn } from '../store/sql/id-lists';
import type { Logger } from '../shared/logger';
import { dbErrorCode, isTooManyLocksError } from '../store/db-errors';
import { sqlDialectOf } from '../store/sql/dialects';
import { lockOrder, RunContext, shouldStop, TableCountMap, underHeadLocks } from './retention-batch';
import { deleteEmptySessions, sessionsOfPlans } from './empty-sessions';
import { affected, deleteRows, PlanTableSpec, stampRows } from './retention-sql';

/**
 * Transactions bounded by rows, not only by plans: a page of plans is counted per table and cut
 * into transactions whose rows add up to `maxRows` at most, and a plan with more rows than that
 * is changed alone, in chunks of `maxRows` rows, one transaction each. Every transaction takes its
 * plans' head locks first (underHeadLocks) and re-checks what still qualifies under them.
 */

/** How many rows of its tables a plan has. */
export interface PlanSize {
  id: string;
  rows: number;
}

/** What the runs share: retention's RunContext, or erasure's. */
export interface BatchContext {
  ds: DataSource;
  /** Count, change nothing, lock nothing. */
  dryRun: boolean;
  /** Rows one transaction changes at most. */
  maxRows: number;
  /** Plans one transaction changes at most. */
  batchSize: number;
  logger?: Logger;
  /** False: stop before the next transaction (the caller records why). */
  proceed(): boolean;
  /** One transaction ran (dry run: would run). */
  counted(): void;
  /** Called after each transaction (dry run: each batch read): the run's rest before the next, if any. */
  rest(): Promise<void>;
}

/** A retention run's BatchContext: it stops as the run says (shouldStop), and counts its transactions in the report. */
export function batchContext(ctx: RunContext): BatchContext {
  return {
    ds: ctx.ds,
    dryRun: ctx.dryRun,
    maxRows: ctx.maxRows,
    batchSize: ctx.batchSize,
    logger: ctx.logger,
    proceed: () => !shouldStop(ctx),
    counted: () => void ctx.report.batches++,
    rest: () => ctx.pacer.rest(),
  };
}

/** Changes a plan's rows in `tables` for good (delete) or softly (stamp), whole or in chunks. */
export interface PlanChange {
  /** Children first; the last `tail` of them hold one row per plan and change with its last chunk. */
  tables: readonly PlanTableSpec[];
  tail: number;
  /** Soft delete: stamp `deleted_at` with this instant on live rows. Absent: DELETE. */
  stamp?: Date;
  /**
   * Whole plans in one transaction, under their head locks, re-checking which still qualify (dry
   * run: counts only, outside any transaction). May run more than once (retried).
   */
  whole(m: EntityManager, ids: string[]): Promise<TableCountMap>;
  /** Under the plan's head lock, before each chunk: whether it still qualifies. */
  stillDue(m: EntityManager, planId: string): Promise<boolean>;
  /** The plan's last chunk also deletes the sessions it leaves with no plan (deleteEmptySessions). */
  dropsEmptySessions: boolean;
  /** What one transaction changed (or would change), for the caller's report. */
  add(counts: TableCountMap): void;
}

/** A chunk never shrinks below this many rows after the database refuses one for its locks. */
const MIN_CHUNK_ROWS = 10;

/**
 * Rows of each plan in `tables` (soft-deleted ones too, or only live ones), in lock order: one
 * grouped COUNT per table; a table keyed by the plan id (plan row, head, DAG) counts 1 unread.
 */
export async function planSizes(
  m: EntityManager,
  tables: readonly PlanTableSpec[],
  ids: string[],
  which: 'all' | 'live',
): Promise<PlanSize[]> {
  if (ids.length === 0) return [];
  const rows = new Map<string, number>(ids.map((id) => [id, 0]));
  for (const spec of tables) {
    if (keyedByPlan(m, spec)) {
      for (const id of ids) rows.set(id, rows.get(id)! + 1);
      continue;
    }
    const qb = m
      .createQueryBuilder()
      .select(`t.${spec.planKey}`, 'id')
      .addSelect('COUNT(*)', 'n')
      .from(spec.entity, 't')
      .withDeleted()
      .where(...idsIn(sqlDialectOf(m), `t.${spec.planKey}`, ids));
    if (which === 'live') qb.andWhere('t.deletedAt IS NULL');
    const counted: Array<{ id: string; n: unknown }> = await qb.groupBy(`t.${spec.planKey}`).getRawMany();
    for (const r of counted) rows.set(r.id, (rows.get(r.id) ?? 0) + Number(r.n));
  }
  return lockOrder(ids).map((id) => ({ id, rows: rows.get(id) ?? 0 }));
}

/** A table whose primary key is the plan id: at most one row per plan. */
function keyedByPlan(m: EntityManager, spec: PlanTableSpec): boolean {
  const primary = m.connection.getMetadata(spec.entity).primaryColumns;
  return primary.length === 1 && primary[0].propertyName === spec.planKey;
}

/** One transaction's plans, or one plan too large for a transaction. */
export type Unit = { batch: string[] } | { large: PlanSize };

/**
 * Cuts plans (in lock order) into transactions of at most `maxRows` rows and `maxPlans` plans,
 * keeping their order; a plan over `maxRows` on its own is a unit of its own.
 */
export function packByRows(sizes: PlanSize[], maxRows: number, maxPlans: number): Unit[] {
  const units: Unit[] = [];
  let batch: string[] = [];
  let rows = 0;
  const cut = () => {
    if (batch.length > 0) units.push({ batch });
    batch = [];
    rows = 0;
  };
  for (const p of sizes) {
    if (p.rows > maxRows) {
      cut();
      units.push({ large: p });
      continue;
    }
    if (rows + p.rows > maxRows || batch.length >= maxPlans) cut();
    batch.push(p.id);
    rows += p.rows;
  }
  cut();
  return units;
}

/**
 * Transactions a plan takes in chunks of `maxRows` rows (see changeChunk): its child rows (all but
 * the tail's), `maxRows` less the tail's rows per transaction, the tail with the last of them.
 */
export function chunksFor(change: Pick<PlanChange, 'tail'>, childRows: number, maxRows: number): number {
  return Math.max(1, Math.ceil(childRows / (maxRows - change.tail)));
}

/**
 * Changes these plans (sizes from planSizes) transaction by transaction, in their order. False when
 * stopped before the end (what is done stays done; the next run finds the rest).
 */
export async function changePlans(bc: BatchContext, change: PlanChange, sizes: PlanSize[]): Promise<boolean> {
  for (const unit of packByRows(sizes, bc.maxRows, bc.batchSize)) {
    if (!bc.proceed()) return false;
    if ('batch' in unit) await runBatch(bc, unit.batch, (m, ids) => change.whole(m, ids), change.add, largeOne(change));
    else if (!(await inChunks(bc, change, unit.large, bc.maxRows))) return false;
  }
  return true;
}

/** A plan alone in a transaction the database refused for its locks: in chunks of half its rows. */
function largeOne(change: PlanChange): (bc: BatchContext, id: string) => Promise<void> {
  return async (bc, id) => {
    const [size] = await planSizes(bc.ds.manager, change.tables, [id], change.stamp ? 'live' : 'all');
    await inChunks(bc, change, size, Math.max(MIN_CHUNK_ROWS + change.tail, Math.floor(size.rows / 2)));
  };
}

/**
 * `work` on these plans in one transaction under their head locks (dry run: outside any), its
 * result handed to `done`. A transaction the database refuses for holding too many locks runs again
 * as two halves, and a single plan through `single` (or fails where there is none).
 */
export async function runBatch<T>(
  bc: BatchContext,
  ids: string[],
  work: (m: EntityManager, ids: string[]) => Promise<T>,
  done: (result: T) => void,
  single?: (bc: BatchContext, id: string) => Promise<void>,
): Promise<void> {
  let result: T;
  try {
    result = bc.dryRun
      ? await work(bc.ds.manager, ids)
      : await underHeadLocks(bc.ds, ids, (m) => work(m, ids), bc.logger);
  } catch (err) {
    if (bc.dryRun || !isTooManyLocksError(err) || (ids.length === 1 && !single)) throw err;
    bc.logger?.warn(
      { plans: ids.length, code: dbErrorCode(err) },
      'the database refused a transaction for its locks; running it again over fewer rows',
    );
    if (ids.length === 1) return single!(bc, ids[0]);
    const half = Math.ceil(ids.length / 2);
    await runBatch(bc, ids.slice(0, half), work, done, single);
    return runBatch(bc, ids.slice(half), work, done, single);
  }
  bc.counted();
  done(result);
  await bc.rest();
}

/**
 * One plan in chunks of at most `maxRows` rows, one transaction each (changeChunk). A chunk the
 * database refuses for its locks runs again at half the rows. False when stopped between chunks:
 * the plan row and head change with the last chunk only, so the plan still qualifies and the next
 * run finishes it. A dry run counts the plan whole, and the chunks it would take.
 */
async function inChunks(bc: BatchContext, change: PlanChange, plan: PlanSize, maxRows: number): Promise<boolean> {
  if (bc.dryRun) {
    const counts = await change.whole(bc.ds.manager, [plan.id]);
    const children = change.tables.slice(0, change.tables.length - change.tail);
    const rows = children.reduce((n, t) => n + (counts[t.table] ?? 0), 0);
    for (let i = chunksFor(change, rows, maxRows); i > 0; i--) bc.counted();
    change.add(counts);
    await bc.rest();
    return true;
  }
  let limit = maxRows;
  for (let first = true; ; first = false) {
    if (!first && !bc.proceed()) return false;
    let chunk: { counts: TableCountMap; done: boolean };
    try {
      chunk = await underHeadLocks(bc.ds, [plan.id], (m) => changeChunk(m, change, plan.id, limit), bc.logger);
    } catch (err) {
      if (!isTooManyLocksError(err) || limit <= MIN_CHUNK_ROWS + change.tail) throw err;
      limit = Math.max(MIN_CHUNK_ROWS + change.tail, Math.floor(limit / 2));
      bc.logger?.warn(
        { planId: plan.id, rows: limit, code: dbErrorCode(err) },
        'the database refused a chunk for its locks; running it again over fewer rows',
      );
      continue;
    }
    bc.counted();
    change.add(chunk.counts);
    await bc.rest();
    if (chunk.done) return true;
  }
}

/**
 * One chunk of one plan, under its head lock: if the plan still qualifies, change at most
 * `maxRows` of its rows, children first (a table is left only once none of its rows is left); once
 * no child row is left, the tail too (plan row, head) and, where asked, the sessions left empty.
 * `done` once the tail is changed or the plan no longer qualifies.
 */
export async function changeChunk(
  m: EntityManager,
  change: PlanChange,
  planId: string,
  maxRows: number,
): Promise<{ counts: TableCountMap; done: boolean }> {
  const counts: TableCountMap = {};
  if (!(await change.stillDue(m, planId))) return { counts, done: true };
  const dialect = sqlDialectOf(m);
  const children = change.tables.slice(0, change.tables.length - change.tail);
  const tail = change.tables.slice(children.length);
  let left = maxRows - tail.length;
  let at = 0;
  for (; at < children.length && left > 0; at++) {
    const spec = children[at];
    const n = await dialect.changeSome(m, {
      entity: spec.entity,
      planKey: spec.planKey,
      planId,
      limit: left,
      ...(change.stamp ? { stamp: change.stamp } : {}),
    });
    counts[spec.table] = n;
    left -= n;
  }
  // the budget ran out: done only if the table it ran out in, and those after it, have nothing left
  if (left === 0 && (await anyLeft(m, children.slice(Math.max(0, at - 1)), planId, change.stamp !== undefined)))
    return { counts, done: false };
  const sessions = change.dropsEmptySessions ? await sessionsOfPlans(m, [planId]) : [];
  for (const spec of tail) {
    const statement = change.stamp ? stampRows(m, spec, [planId], change.stamp) : deleteRows(m, spec, [planId]);
    counts[spec.table] = affected(await statement.execute());
  }
  if (change.dropsEmptySessions) counts.sessions = await deleteEmptySessions(m, sessions);
  return { counts, done: true };
}

/** Whether any row of the plan (live only, for a soft delete) is left in these tables. */
async function anyLeft(
  m: EntityManager,
  tables: readonly PlanTableSpec[],
  planId: string,
  liveOnly: boolean,
): Promise<boolean> {
  for (const spec of tables) {
    const qb = m
      .createQueryBuilder()
      .select('1', 'one')
      .from(spec.entity, 't')
      .withDeleted()
      .where(`t.${spec.planKey} = :planId`, { planId });
    if (liveOnly) qb.andWhere('t.deletedAt IS NULL');
    if (await qb.limit(1).getRawOne()) return true;
  }
  return false;
}
