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
import { bumpHeadsStatement, deleteWhereInStatement, insertStatement, refreshSessionsStatement, softDeleteEventsStatement, upsertStatement } from './plan-event-statements';

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
    return this.existingEventIds(this.ds.manager, [...new Set(eventIds.map((id) => id.toLowerCase()))]);
  }

  private transaction<T>(work: (m: EntityManager) => Promise<T>): Promise<T> {
    // READ COMMITTED everywhere: after a plan_heads lock is granted, the next statement must see
    // what the previous holder committed (MySQL's default REPEATABLE READ would not).
    if (this.dialect === 'sqlite') return this.ds.transaction(work);
    return this.ds.transaction('READ COMMITTED', work);
  }

  private async persistIn(m: EntityManager, events: PlanEvent[]): Promise<PersistOutcome> {
    const unique = [...new Map(events.map((e) => [e.eventId, e])).values()];
    const existing = await this.existingEventIds(m, unique.map((e) => e.eventId));
    const fresh = unique.filter((e) => !existing.has(e.eventId));
    const duplicateIds = events.length === unique.length ? [...existing] : duplicatesOf(events, existing);
    const outcome = { inserted: fresh.length, duplicates: events.length - fresh.length, duplicateIds, plans: 0 };
    if (fresh.length === 0) return outcome;

    // Lock order is always heads (sorted) then sessions (sorted), and every lock is exclusive
    // from the start (upserts): no shared-to-exclusive upgrade for two writers to deadlock on.
    const planIds = [...new Set(fresh.map((e) => e.planId))].sort();
    await this.upsertHeads(m, fresh);
    await this.upsertSessions(m, fresh);
    // skip, don't fail, on an event a concurrent writer (a redelivered job) stored meanwhile
    await this.insertRows(m, ENTITY.event, fresh.map((e) => toEventRow(e)), 'event_id');
    const heads = await this.bumpHeads(m, planIds);
    await this.softDeleteLateEvents(m, heads);

    const logs = await this.planLogs(m, planIds, heads, fresh);
    const known = planIds.filter((id) => heads.get(id)!.version > 1);
    for (const t of PROJECTION_TABLES) await this.deleteWhereIn(m, t.entity, t.planKey, known);
    const rebuilt: PlanRows[] = [];
    for (const planId of planIds) {
      const rows = foldPlan(logs.get(planId) ?? []);
      if (rows) rebuilt.push(stampDeleted(rows, heads.get(planId)?.deletedAt ?? null));
    }
    await this.insertProjection(m, rebuilt);
    await this.refreshSessions(m, [...new Set(fresh.map((e) => e.sessionId))].sort());
    return { ...outcome, plans: rebuilt.length };
  }

  private async existingEventIds(m: EntityManager, ids: string[]): Promise<Set<string>> {
    const found = new Set<string>();
    for (const part of chunk(ids, valuesPerInList(this.dialect))) {
      const rows = await m.getRepository<PlanEventRow>(ENTITY.event).find({ select: { eventId: true }, where: { eventId: In(part) }, withDeleted: true });
      for (const r of rows) found.add(r.eventId.toLowerCase());
    }
    return found;
  }

  /** Create the plans' head rows, or lock them if they exist (an upsert locks exclusively at once). */
  private async upsertHeads(m: EntityManager, fresh: PlanEvent[]): Promise<void> {
    const rows = new Map<string, PlanHeadRow>();
    const now = new Date();
    for (const e of fresh) {
      if (!rows.has(e.planId)) rows.set(e.planId, { planId: e.planId, sessionId: e.sessionId, version: 0, eventCount: 0, lastSeq: 0, updatedAt: now, deletedAt: null });
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
   * Bump each head's version and counters under its lock, then read the heads back. Any writer
   * that touched these plans before has committed by now, so `version === 1` means this
   * transaction holds the plan's only events: its log is the batch itself.
   */
  private async bumpHeads(m: EntityManager, planIds: string[]): Promise<Map<string, PlanHeadRow>> {
    const heads = new Map<string, PlanHeadRow>();
    for (const part of chunk(planIds, valuesPerInList(this.dialect))) {
      await bumpHeadsStatement(m, part, new Date()).execute();
      const rows = await m.getRepository<PlanHeadRow>(ENTITY.head).find({ where: { planId: In(part) }, withDeleted: true });
      for (const r of rows) heads.set(r.planId, r);
    }
    return heads;
  }

  /** Events arriving for a plan retention already soft-deleted are stored soft-deleted too. */
  private async softDeleteLateEvents(m: EntityManager, heads: Map<string, PlanHeadRow>): Promise<void> {
    for (const head of heads.values()) {
      if (!head.deletedAt) continue;
      await softDeleteEventsStatement(m, head.planId, head.deletedAt).execute();
    }
  }

  /** Each plan's whole log: from the database for plans seen before, from this batch for new ones. */
  private async planLogs(m: EntityManager, planIds: string[], heads: Map<string, PlanHeadRow>, fresh: PlanEvent[]): Promise<Map<string, PlanEvent[]>> {
    const logs = new Map<string, PlanEvent[]>(planIds.map((id) => [id, []]));
    const isNew = (id: string) => heads.get(id)!.version === 1;
    const known = planIds.filter((id) => !isNew(id));
    for (const e of fresh) if (isNew(e.planId)) logs.get(e.planId)!.push(e);
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

  private async insertRows(m: EntityManager, entity: string, rows: object[], skipExistingKey?: string): Promise<void> {
    if (rows.length === 0) return;
    const columns = m.connection.getMetadata(entity).columns.length;
    for (const part of chunk(rows, rowsPerStatement(this.dialect, columns))) {
      const { sql, params } = insertStatement(m, entity, part, { skipExistingKey });
      await m.query(sql, params);
    }
  }

  /** Insert rows or lock the existing ones (see upsertStatement). */
  private async upsertRows(m: EntityManager, entity: string, key: string, rows: object[]): Promise<void> {
    if (rows.length === 0) return;
    const columns = m.connection.getMetadata(entity).columns.length;
    for (const part of chunk(rows, rowsPerStatement(this.dialect, columns))) {
      await upsertStatement(m, entity, key, part).execute();
    }
  }
}

function duplicatesOf(events: PlanEvent[], existing: Set<string>): string[] {
  const seen = new Set<string>();
  const dups: string[] = [];
  for (const e of events) {
    if (existing.has(e.eventId) || seen.has(e.eventId)) dups.push(e.eventId);
    seen.add(e.eventId);
  }
  return dups;
}

function toEventRow(e: PlanEvent): PlanEventRow {
  return {
    eventId: e.eventId,
    planId: e.planId,
    sessionId: e.sessionId,
    type: e.type,
    seq: e.seq,
    specVersion: e.specVersion,
    occurredAt: new Date(e.occurredAt),
    recordedAt: new Date(),
    payload: JSON.stringify(e.payload),
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
