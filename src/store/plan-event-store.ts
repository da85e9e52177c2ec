import { DataSource, EntityManager, In } from 'typeorm';
import type { PlanEvent } from '../contracts';
import type { Logger } from '../shared/logger';
import { dialectOf } from './dialect-of';
import type { Dialect } from './dialect';
import { ENTITY, PlanEventRow, PlanHeadRow, SessionRow } from './entities';
import { foldPlan, PlanRows } from './projection/fold-plan';
import { chunk, rowsPerStatement, valuesPerInList } from './batch-limits';
import { isDuplicateKeyError } from './db-errors';
import { runSerialized } from './serial-queue';
import { PROJECTION_TABLES } from './plan-tables';
import {
  BUMP_HEADS_RETURNING_SQL,
  bumpHeadsStatement,
  deleteWhereInStatement,
  insertStatement,
  recountHeadsStatement,
  refreshSessionsStatement,
  softDeleteEventsStatement,
  unnestInsertStatement,
  upsertStatement,
} from './plan-event-statements';
import { pgArrayLiteral } from './postgres-array';

/** What the store needs of a locked plan head. */
interface HeadState {
  version: number;
  deletedAt: Date | null;
}

/**
 * An event whose id is already stored for another plan: not a redelivery (those repeat the plan
 * too) but a producer reusing an id. Permanent: the worker dead-letters the event as unprocessable.
 */
export class EventIdConflictError extends Error {
  constructor(
    readonly eventId: string,
    readonly planId: string,
    readonly storedPlanId: string,
  ) {
    super(`event ${eventId} of plan ${planId}: its id is already stored for an event of plan ${storedPlanId}; event ids must be unique`);
    this.name = 'EventIdConflictError';
  }
}

export interface PersistOutcome {
  /** Events newly stored. */
  inserted: number;
  /** Events already stored before (redelivered or replayed), or repeated in the batch: no-ops. */
  duplicates: number;
  /** Event ids that were duplicates, for metrics and replay summaries. */
  duplicateIds: string[];
  /** Plans whose rows were rebuilt. */
  plans: number;
}


/**
 * A duplicate key on a row another transaction created concurrently (on SQL Server, where inserts
 * cannot skip existing keys): re-run, the transaction then sees that row.
 */
const DUPLICATE_KEY_RETRIES = 5;

/** Rows per unnest INSERT on PostgreSQL: no parameter cap applies; this bounds one statement's size. */
const UNNEST_ROWS = 5_000;

/**
 * Writes validated events: appends them to `plan_events` (idempotent by eventId) and rebuilds
 * the rows of every plan they touch from that plan's full event log (see foldPlan), in one
 * transaction. Hence idempotent and order-independent. Concurrent writers on one plan are
 * serialised by locking its `plan_heads` row before its log is read. Throws driver errors as they
 * come; classify them with `isRetryableDbError` (src/store/db-errors.ts).
 */
export class PlanEventStore {
  private readonly dialect: Dialect;

  constructor(
    private readonly ds: DataSource,
    private readonly logger?: Logger,
  ) {
    this.dialect = dialectOf(ds);
  }

  async persist(events: PlanEvent[]): Promise<PersistOutcome> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await runSerialized(this.ds, () => this.transaction((m) => this.persistIn(m, events)));
      } catch (err) {
        if (!isDuplicateKeyError(err) || attempt >= DUPLICATE_KEY_RETRIES) throw err;
        this.logger?.debug({ attempt, events: events.length }, 'concurrent writer created the same rows; retrying');
      }
    }
  }

  /** Event ids among `eventIds` already stored (replay summaries: "already stored"). */
  async storedEventIds(eventIds: string[]): Promise<Set<string>> {
    return new Set((await this.storedEventPlans(this.ds.manager, [...new Set(eventIds.map((id) => id.toLowerCase()))])).keys());
  }

  private transaction<T>(work: (m: EntityManager) => Promise<T>): Promise<T> {
    // READ COMMITTED everywhere: after a plan_heads lock is granted, the next statement must see
    // what the previous holder committed (MySQL's default REPEATABLE READ would not).
    if (this.dialect === 'sqlite') return this.ds.transaction(work);
    return this.ds.transaction('READ COMMITTED', work);
  }

  private async persistIn(m: EntityManager, events: PlanEvent[]): Promise<PersistOutcome> {
    const unique = [...new Map(events.map((e) => [e.eventId, e])).values()];
    const planIds = [...new Set(unique.map((e) => e.planId))].sort();

    // Heads are locked before anything is read, so every read below sees what earlier writers of
    // these plans committed. Lock order is always heads (sorted) then sessions (sorted), and every
    // lock is exclusive from the start (upserts): no shared-to-exclusive upgrade to deadlock on.
    await this.upsertHeads(m, unique);
    const heads = await this.bumpHeads(m, planIds);
    // version 1: this transaction created the plan's head, so none of its events is stored yet
    const isNew = (planId: string) => heads.get(planId)!.version === 1;
    const existing = await this.storedEventPlans(m, unique.filter((e) => !isNew(e.planId)).map((e) => e.eventId));
    for (const e of unique) {
      const storedFor = existing.get(e.eventId);
      if (storedFor !== undefined && storedFor !== e.planId) throw new EventIdConflictError(e.eventId, e.planId, storedFor);
    }
    const fresh = existing.size === 0 ? unique : unique.filter((e) => !existing.has(e.eventId));
    const duplicateIds = events.length === unique.length ? [...existing.keys()] : duplicatesOf(events, existing);
    const outcome = { inserted: fresh.length, duplicates: events.length - fresh.length, duplicateIds, plans: 0 };
    if (fresh.length === 0) return outcome;

    const touched = fresh === unique ? planIds : [...new Set(fresh.map((e) => e.planId))].sort();
    const known = touched.filter((id) => !isNew(id));
    await this.upsertSessions(m, fresh);
    // No ON CONFLICT needed: an event is only ever stored under its plan's head lock, and its id
    // was looked up under that lock. An id another plan's event already has fails the batch (a
    // duplicate key here, EventIdConflictError above for a known plan), which the worker splits
    // until that event is dead-lettered as unprocessable.
    await this.insertEvents(m, fresh);
    await this.recountHeads(m, known);
    await this.softDeleteLateEvents(m, touched.map((planId) => ({ planId, deletedAt: heads.get(planId)!.deletedAt })));

    const logs = await this.planLogs(m, touched, known, fresh);
    for (const t of PROJECTION_TABLES) await this.deleteWhereIn(m, t.entity, t.planKey, known);
    const rebuilt: PlanRows[] = [];
    for (const planId of touched) {
      const rows = foldPlan(logs.get(planId) ?? []);
      if (rows) rebuilt.push(stampDeleted(rows, heads.get(planId)?.deletedAt ?? null));
    }
    await this.insertProjection(m, rebuilt);
    await this.refreshSessions(m, [...new Set(fresh.map((e) => e.sessionId))].sort());
    return { ...outcome, plans: rebuilt.length };
  }

  /** The plan each of these event ids is stored for (ids not stored are absent). */
  private async storedEventPlans(m: EntityManager, ids: string[]): Promise<Map<string, string>> {
    const found = new Map<string, string>();
    if (ids.length === 0) return found;
    if (this.dialect === 'postgres') {
      // one array parameter: the same short statement whatever the batch size
      const rows: { event_id: string; plan_id: string }[] = await m.query('SELECT event_id, plan_id FROM plan_events WHERE event_id = ANY($1::uuid[])', [pgArrayLiteral(ids)]);
      for (const r of rows) found.set(r.event_id.toLowerCase(), r.plan_id);
      return found;
    }
    for (const part of chunk(ids, valuesPerInList(this.dialect))) {
      const rows = await m.getRepository<PlanEventRow>(ENTITY.event).find({ select: { eventId: true, planId: true }, where: { eventId: In(part) }, withDeleted: true });
      for (const r of rows) found.set(r.eventId.toLowerCase(), r.planId);
    }
    return found;
  }

  /**
   * Create the plans' head rows, or lock them if they exist (an upsert locks exclusively at once).
   * A new head is created with its counters from the batch: a plan seen for the first time has
   * all of its events there. Known plans are recounted once their events are in (recountHeads).
   */
  private async upsertHeads(m: EntityManager, events: PlanEvent[]): Promise<void> {
    const rows = new Map<string, PlanHeadRow>();
    const now = new Date();
    for (const e of events) {
      const head = rows.get(e.planId);
      if (!head) rows.set(e.planId, { planId: e.planId, sessionId: e.sessionId, version: 0, eventCount: 1, lastSeq: e.seq, updatedAt: now, deletedAt: null });
      else {
        head.eventCount++;
        if (e.seq > head.lastSeq) head.lastSeq = e.seq;
      }
    }
    await this.upsertRows(m, ENTITY.head, 'plan_id', [...rows.values()].sort((a, b) => (a.planId < b.planId ? -1 : 1)));
  }

  private async upsertSessions(m: EntityManager, fresh: PlanEvent[]): Promise<void> {
    const sessions = new Map<string, SessionRow>();
    for (const e of fresh) {
      const at = new Date(e.occurredAt);
      const s = sessions.get(e.sessionId);
      if (!s) sessions.set(e.sessionId, { id: e.sessionId, createdAt: at, updatedAt: at });
      else if (at < s.createdAt) s.createdAt = at;
      else if (at > s.updatedAt) s.updatedAt = at;
    }
    await this.upsertRows(m, ENTITY.session, 'id', [...sessions.values()].sort((a, b) => (a.id < b.id ? -1 : 1)));
  }

  /**
   * Bump each head's version under its lock, then read the heads back. Any writer that touched
   * these plans before has committed by now, so `version === 1` means this transaction created
   * the head: the plan's whole log is in the batch.
   */
  private async bumpHeads(m: EntityManager, planIds: string[]): Promise<Map<string, HeadState>> {
    const heads = new Map<string, HeadState>();
    if (this.dialect === 'postgres') {
      // structured: TypeORM returns an UPDATE's raw result as [rows, count] otherwise
      const result = await m.queryRunner!.query(BUMP_HEADS_RETURNING_SQL, [new Date(), pgArrayLiteral(planIds)], true);
      for (const r of result.records as { plan_id: string; version: number; deleted_at: Date | null }[]) heads.set(r.plan_id, { version: r.version, deletedAt: r.deleted_at });
      return heads;
    }
    for (const part of chunk(planIds, valuesPerInList(this.dialect))) {
      await bumpHeadsStatement(m, part, new Date()).execute();
      const rows = await m.getRepository<PlanHeadRow>(ENTITY.head).find({ where: { planId: In(part) }, withDeleted: true });
      for (const r of rows) heads.set(r.planId, { version: r.version, deletedAt: r.deletedAt });
    }
    return heads;
  }

  /** Event count and last seq of plans seen before, from their stored log (this batch included). */
  private async recountHeads(m: EntityManager, planIds: string[]): Promise<void> {
    for (const part of chunk(planIds, valuesPerInList(this.dialect))) await recountHeadsStatement(m, part).execute();
  }

  /** Events arriving for a plan retention already soft-deleted are stored soft-deleted too. */
  private async softDeleteLateEvents(m: EntityManager, heads: { planId: string; deletedAt: Date | null }[]): Promise<void> {
    for (const head of heads) {
      if (!head.deletedAt) continue;
      await softDeleteEventsStatement(m, head.planId, head.deletedAt).execute();
    }
  }

  /** Each plan's whole log: from the database for plans seen before, from this batch for new ones. */
  private async planLogs(m: EntityManager, planIds: string[], known: string[], fresh: PlanEvent[]): Promise<Map<string, PlanEvent[]>> {
    const logs = new Map<string, PlanEvent[]>(planIds.map((id) => [id, []]));
    const stored = new Set(known);
    for (const e of fresh) if (!stored.has(e.planId)) logs.get(e.planId)!.push(e);
    for (const part of chunk(known, valuesPerInList(this.dialect))) {
      const rows = await m.getRepository<PlanEventRow>(ENTITY.event).find({ where: { planId: In(part) }, withDeleted: true });
      for (const r of rows) logs.get(r.planId)!.push(fromEventRow(r));
    }
    return logs;
  }

  private async deleteWhereIn(m: EntityManager, entity: string, property: string, ids: string[]): Promise<void> {
    for (const part of chunk(ids, valuesPerInList(this.dialect))) {
      await deleteWhereInStatement(m, entity, property, part).execute();
    }
  }

  private async insertProjection(m: EntityManager, plans: PlanRows[]): Promise<void> {
    await this.insertRows(m, ENTITY.plan, plans.map((p) => p.plan));
    await this.insertRows(m, ENTITY.step, plans.flatMap((p) => p.steps));
    await this.insertRows(m, ENTITY.handoff, plans.flatMap((p) => p.handoffs));
    await this.insertRows(m, ENTITY.decision, plans.flatMap((p) => p.decisions));
    await this.insertRows(m, ENTITY.dag, plans.map((p) => p.dag));
    await this.insertRows(m, ENTITY.checkpoint, plans.flatMap((p) => p.checkpoints));
  }

  private async refreshSessions(m: EntityManager, sessionIds: string[]): Promise<void> {
    for (const part of chunk(sessionIds, valuesPerInList(this.dialect))) {
      await refreshSessionsStatement(m, part).execute();
    }
  }

  private async insertEvents(m: EntityManager, events: PlanEvent[]): Promise<void> {
    const recordedAt = new Date();
    if (this.dialect !== 'postgres') return this.insertRows(m, ENTITY.event, events.map((e) => toEventRow(e, recordedAt, JSON.stringify(e.payload))));
    // payloads as one JSON array (see unnestInsertStatement's jsonText)
    return this.unnestRows(m, ENTITY.event, events.map((e) => toEventRow(e, recordedAt, e.payload)), { jsonText: ['payload'] });
  }

  private async insertRows(m: EntityManager, entity: string, rows: object[]): Promise<void> {
    if (rows.length === 0) return;
    if (this.dialect === 'postgres') return this.unnestRows(m, entity, rows);
    const columns = m.connection.getMetadata(entity).columns.length;
    for (const part of chunk(rows, rowsPerStatement(this.dialect, columns))) {
      const { sql, params } = insertStatement(m, entity, part);
      await m.query(sql, params);
    }
  }

  /** PostgreSQL: insert (or upsert) through unnest statements (see unnestInsertStatement). */
  private async unnestRows(m: EntityManager, entity: string, rows: object[], options?: Parameters<typeof unnestInsertStatement>[3]): Promise<void> {
    for (const part of chunk(rows, UNNEST_ROWS)) {
      const { sql, params } = unnestInsertStatement(m, entity, part, options);
      await m.query(sql, params);
    }
  }

  /** Insert rows or lock the existing ones (see upsertStatement). */
  private async upsertRows(m: EntityManager, entity: string, key: string, rows: object[]): Promise<void> {
    if (rows.length === 0) return;
    if (this.dialect === 'postgres') return this.unnestRows(m, entity, rows, { upsertKey: key });
    const columns = m.connection.getMetadata(entity).columns.length;
    for (const part of chunk(rows, rowsPerStatement(this.dialect, columns))) {
      await upsertStatement(m, entity, key, part).execute();
    }
  }
}

function duplicatesOf(events: PlanEvent[], existing: ReadonlyMap<string, string>): string[] {
  const seen = new Set<string>();
  const dups: string[] = [];
  for (const e of events) {
    if (existing.has(e.eventId) || seen.has(e.eventId)) dups.push(e.eventId);
    seen.add(e.eventId);
  }
  return dups;
}

/** `payload`: its JSON text, or (PostgreSQL's insert, see insertEvents) the object itself. */
function toEventRow(e: PlanEvent, recordedAt: Date, payload: string | object): PlanEventRow {
  return {
    eventId: e.eventId,
    planId: e.planId,
    sessionId: e.sessionId,
    type: e.type,
    seq: e.seq,
    specVersion: e.specVersion,
    occurredAt: new Date(e.occurredAt),
    recordedAt,
    payload: payload as string,
    deletedAt: null,
  };
}

function fromEventRow(r: PlanEventRow): PlanEvent {
  return {
    specVersion: r.specVersion,
    eventId: r.eventId.toLowerCase(),
    type: r.type,
    planId: r.planId,
    sessionId: r.sessionId,
    seq: r.seq,
    occurredAt: new Date(r.occurredAt).toISOString(),
    payload: JSON.parse(r.payload),
  } as PlanEvent;
}

/** Rows rebuilt for a soft-deleted plan stay soft-deleted: a late event does not resurrect it. */
function stampDeleted(rows: PlanRows, deletedAt: Date | null): PlanRows {
  if (!deletedAt) return rows;
  const stamp = <T extends { deletedAt: Date | null }>(r: T): T => ({ ...r, deletedAt });
  return {
    plan: stamp(rows.plan),
    steps: rows.steps.map(stamp),
    handoffs: rows.handoffs.map(stamp),
    decisions: rows.decisions.map(stamp),
    dag: stamp(rows.dag),
    checkpoints: rows.checkpoints.map(stamp),
  };
}
