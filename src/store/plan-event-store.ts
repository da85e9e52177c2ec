import { DataSource, EntityManager, In, MssqlParameter } from 'typeorm';
import type { PlanEvent } from '../contracts';
import type { Logger } from '../shared/logger';
import { chunk, valuesPerInList } from './batch-limits';
import { isDuplicateKeyError } from './db-errors';
import type { Dialect } from './dialect';
import { dialectOf } from './dialect-of';
import { ENTITY, PlanEventRow, PlanHeadRow } from './entities';
import { ApplyStats, PlanApplier } from './plan-apply';
import { overdueGapsStatement, waitingPlansStatement } from './plan-event-statements';
import { LockedHead, lockHeads, lockStoredHeads, newHead } from './plan-heads';
import { pgArrayLiteral } from './postgres-array';
import { CacheStage, DEFAULT_ROW_CACHE_BYTES, PlanRowCache } from './plan-row-cache';
import { RowWriter } from './row-writer';
import { SqliteRows } from './sqlite-rows';
import { unnestInsertStatement } from './row-statements';
import { runSerialized } from './serial-queue';
import { isVoidedSeq } from './projection/voided-seq';
import { assertSameEvent, firstCopies, storedEventRows } from './event-conflict';

export { EventConflictError, EventIdConflictError } from './event-conflict';

export interface PersistOutcome extends ApplyStats {
  /** Events newly stored (voided seqs not counted: see `voided`). */
  inserted: number;
  /** Voided seqs newly recorded (voided-seq.ts): refusals, not events. */
  voided: number;
  /** Events already stored before (redelivered or replayed), or repeated in the batch: no-ops. */
  duplicates: number;
  /** Event ids that were duplicates, for metrics and replay summaries. */
  duplicateIds: string[];
  /** Plans whose rows were written. */
  plans: number;
}

/** What `applyOverdueGaps` did. */
export interface GapSweep {
  /** Plans whose waiting events were applied past their gap. */
  plans: number;
  /** Events those plans applied. */
  events: number;
}

export interface PlanEventStoreOptions {
  /**
   * Estimated bytes of plan rows kept in memory between transactions (see plan-row-cache.ts), so
   * the next events of a plan this store wrote last apply without reading its rows back. 0: off.
   * @defaultValue 64 MiB
   */
  rowCacheBytes?: number;
}

/**
 * A duplicate key on a row another transaction created concurrently (on SQL Server, where inserts
 * cannot skip existing keys): re-run, the transaction then sees that row.
 */
const DUPLICATE_KEY_RETRIES = 5;

/**
 * Writes validated events: appends them to `plan_events` (idempotent by eventId) and applies
 * them to the rows of their plans, in one transaction (README, "Store"). A plan's events apply in
 * seq order up to the first missing seq, each to the rows it touches; events past a gap wait in
 * the log until it fills. The rows always equal the whole-log fold (foldPlan) of the plan's events
 * up to its watermark, whatever order they arrived in. Writers of one plan serialise on its
 * `plan_heads` row, locked before anything of the plan is read. Throws driver errors as they
 * come; classify them with `isRetryableDbError` (src/store/db-errors.ts).
 */
export class PlanEventStore {
  private readonly dialect: Dialect;
  /** Rows of the plans this store wrote last (README, "Store"). */
  readonly rowCache: PlanRowCache;

  constructor(
    private readonly ds: DataSource,
    private readonly logger?: Logger,
    options: PlanEventStoreOptions = {},
  ) {
    this.dialect = dialectOf(ds);
    this.rowCache = new PlanRowCache(options.rowCacheBytes ?? DEFAULT_ROW_CACHE_BYTES);
  }

  async persist(events: PlanEvent[]): Promise<PersistOutcome> {
    return this.write((m, stage) => this.persistIn(m, stage, events), events.length);
  }

  /** Event ids among `eventIds` already stored (replay summaries: "already stored"). */
  async storedEventIds(eventIds: string[]): Promise<Set<string>> {
    return new Set((await this.storedEventPlans(this.ds.manager, [...new Set(eventIds.map((id) => id.toLowerCase()))])).keys());
  }

  /**
   * Rebuild these plans' rows from their whole logs (the reference semantics), as a late event
   * would: for an operator who doubts a plan's rows, and for the tests. Returns the plans rebuilt
   * (a plan without plan.created has no rows to rebuild).
   */
  async rebuildPlans(planIds: string[]): Promise<number> {
    let rebuilt = 0;
    for (const part of chunk([...new Set(planIds)].sort(), 100)) {
      rebuilt += await this.write(async (m, stage) => {
        const heads = await lockStoredHeads(m, this.dialect, part);
        const applier = new PlanApplier(m, this.dialect, heads, new Date(), { rows: this.rowCache, stage });
        for (const head of heads.values()) if (head.appliedSeq !== null) await applier.rebuild(head);
        await applier.finish();
        return applier.stats.rebuilt;
      }, part.length);
    }
    return rebuilt;
  }

  /**
   * Plans that have waited on a missing seq since `cutoff` or longer (the event was lost, or
   * dead-lettered, or the executor skipped a seq) apply their waiting events as if none were
   * missing. Should the missing event come later after all, the plan is rebuilt from its log.
   * At most `limit` plans per call, one transaction each.
   */
  async applyOverdueGaps(cutoff: Date, limit = 100): Promise<GapSweep> {
    const rows: { planId: string }[] = await overdueGapsStatement(this.ds.manager, instant(this.dialect, cutoff), limit).getRawMany();
    const sweep: GapSweep = { plans: 0, events: 0 };
    for (const { planId } of rows) {
      const done = await this.write(async (m, stage) => {
        const head = (await lockStoredHeads(m, this.dialect, [planId])).get(planId);
        // re-checked under the lock: another worker may have applied or skipped it meanwhile
        if (!head || head.appliedSeq === null || !head.gapSince || new Date(head.gapSince) > cutoff) return undefined;
        const applier = new PlanApplier(m, this.dialect, new Map([[planId, head]]), new Date(), { rows: this.rowCache, stage });
        await applier.skipGap(head);
        await applier.finish();
        return applier.stats;
      }, 1);
      if (done?.gapsSkipped) {
        sweep.plans++;
        sweep.events += done.applied;
        this.logger?.warn({ planId, events: done.applied }, 'plan waited too long on a missing seq: its waiting events were applied past the gap');
      }
    }
    return sweep;
  }

  /** Plans waiting on a missing seq now. */
  async waitingPlans(): Promise<number> {
    const row = await waitingPlansStatement(this.ds.manager).getRawOne<{ n: unknown }>();
    return Number(row?.n ?? 0);
  }

  /**
   * One transaction (serialised on SQLite), re-run when a concurrent writer created the same rows.
   * What it staged for the row cache is kept only once it has committed.
   */
  private async write<T>(work: (m: EntityManager, stage: CacheStage) => Promise<T>, events: number): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const stage = this.rowCache.stage();
      try {
        const out = await runSerialized(this.ds, () => this.transaction((m) => work(m, stage)));
        stage.commit();
        return out;
      } catch (err) {
        if (!isDuplicateKeyError(err) || attempt >= DUPLICATE_KEY_RETRIES) throw err;
        this.logger?.debug({ attempt, events }, 'concurrent writer created the same rows; retrying');
      }
    }
  }

  private transaction<T>(work: (m: EntityManager) => Promise<T>): Promise<T> {
    // READ COMMITTED everywhere: after a plan_heads lock is granted, the next statement must see
    // what the previous holder committed (MySQL's default REPEATABLE READ would not).
    if (this.dialect === 'sqlite') return this.ds.transaction(work);
    return this.ds.transaction('READ COMMITTED', work);
  }

  private async persistIn(m: EntityManager, stage: CacheStage, events: PlanEvent[]): Promise<PersistOutcome> {
    // one copy per id; copies that differ are a conflict (EventConflictError), never a silent pick
    const unique = firstCopies(events);
    const now = new Date();
    // Heads are locked before anything is read, so every read below sees what earlier writers of
    // these plans committed. Lock order is always heads (sorted) then sessions (sorted).
    const heads = await lockHeads(m, this.dialect, headsOf(unique, now));
    const { fresh, existing } = await this.storeEvents(m, unique, heads);
    if (existing.size > 0) await this.assertRedeliveries(m, unique.filter((e) => existing.has(e.eventId)));
    const duplicateIds = events.length === unique.length ? [...existing.keys()] : duplicatesOf(events, existing);
    const voided = countVoided(fresh);
    const outcome: PersistOutcome = { inserted: fresh.length - voided, voided, duplicates: events.length - fresh.length, duplicateIds, plans: 0, applied: 0, rebuilt: 0, gapWaits: 0, gapsSkipped: 0, cacheHits: 0 };
    if (fresh.length === 0) return outcome;
    const applier = new PlanApplier(m, this.dialect, heads, now, { rows: this.rowCache, stage });
    await applier.applyNew(fresh);
    await applier.finish();
    return { ...outcome, ...applier.stats, plans: applier.plans };
  }

  /**
   * Append the events not stored yet; returns them, and the plan each other one is stored for.
   * An id stored with other content (another plan...) is a conflict the caller refuses (the transaction rolls back).
   * PostgreSQL inserts all and skips the stored ones (ON CONFLICT DO NOTHING): one statement, and
   * the rare duplicates looked up after. Elsewhere the ids of plans seen before are looked up
   * first (a new head means no stored event), then the rest inserted; no ON CONFLICT is needed
   * there: an event is only stored under its plan's head lock, and an id another plan already has
   * fails on the primary key, which the worker splits until that event is dead-lettered.
   */
  private async storeEvents(m: EntityManager, unique: PlanEvent[], heads: ReadonlyMap<string, LockedHead>): Promise<{ fresh: PlanEvent[]; existing: Map<string, string> }> {
    if (this.dialect === 'postgres') {
      const inserted = await this.insertEvents(m, unique, heads, true);
      const fresh = inserted.size === unique.length ? unique : unique.filter((e) => inserted.has(e.eventId));
      const existing = fresh === unique ? new Map<string, string>() : await this.storedEventPlans(m, unique.filter((e) => !inserted.has(e.eventId)).map((e) => e.eventId));
      return { fresh, existing };
    }
    const existing = await this.storedEventPlans(m, unique.filter((e) => !heads.get(e.planId)!.isNew).map((e) => e.eventId));
    const fresh = existing.size === 0 ? unique : unique.filter((e) => !existing.has(e.eventId));
    if (fresh.length > 0) await this.insertNew(m, fresh, heads);
    return { fresh, existing };
  }

  /**
   * Events whose id is stored already must be that stored event (a redelivery, a replay): another
   * plan, type, seq, time or payload under the id is a conflict, thrown (the transaction rolls back).
   * Reads the stored rows of those ids only, so the common batch pays nothing.
   */
  private async assertRedeliveries(m: EntityManager, stored: PlanEvent[]): Promise<void> {
    const rows = await storedEventRows(m, this.dialect, stored.map((e) => e.eventId));
    for (const e of stored) {
      const row = rows.get(e.eventId.toLowerCase());
      if (row) assertSameEvent(e, row);
    }
  }

  /**
   * An insert refused on the primary key (a plan seen for the first time, whose ids were not looked
   * up): the stored event under a reused id makes it a conflict naming both; else (a concurrent
   * writer stored the same events) the error itself, which write() retries.
   */
  private async insertNew(m: EntityManager, fresh: PlanEvent[], heads: ReadonlyMap<string, LockedHead>): Promise<void> {
    try {
      await this.insertEvents(m, fresh, heads, false);
    } catch (err) {
      if (!isDuplicateKeyError(err)) throw err;
      await this.assertRedeliveries(m, fresh);
      throw err;
    }
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
    if (this.dialect === 'sqlite') {
      for (const [id, planId] of new SqliteRows(m).pluck(ENTITY.event, 'eventId', 'planId', ids)) found.set(id.toLowerCase(), planId as string);
      return found;
    }
    for (const part of chunk(ids, valuesPerInList(this.dialect))) {
      const rows = await m.getRepository<PlanEventRow>(ENTITY.event).find({ select: { eventId: true, planId: true }, where: { eventId: In(part) }, withDeleted: true });
      for (const r of rows) found.set(r.eventId.toLowerCase(), r.planId);
    }
    return found;
  }

  /**
   * Events of a plan retention already soft-deleted are stored soft-deleted too. With
   * `skipStored` (PostgreSQL), stored ids are skipped and the inserted ones returned.
   */
  private async insertEvents(m: EntityManager, events: PlanEvent[], heads: ReadonlyMap<string, LockedHead>, skipStored: boolean): Promise<Set<string>> {
    const recordedAt = new Date();
    const deleted = (e: PlanEvent) => heads.get(e.planId)!.deletedAt;
    if (this.dialect !== 'postgres') {
      await new RowWriter(m, this.dialect).insert(ENTITY.event, events.map((e) => toEventRow(e, recordedAt, JSON.stringify(e.payload), deleted(e))));
      return new Set(events.map((e) => e.eventId));
    }
    // payloads as one JSON array (see unnestInsertStatement's jsonText)
    const inserted = new Set<string>();
    for (const part of chunk(events, 5_000)) {
      const { sql, params } = unnestInsertStatement(m, ENTITY.event, part.map((e) => toEventRow(e, recordedAt, e.payload, deleted(e))), { jsonText: ['payload'] });
      const rows: { event_id: string }[] = await m.query(skipStored ? `${sql} ON CONFLICT (event_id) DO NOTHING RETURNING event_id` : sql, params);
      if (skipStored) for (const r of rows) inserted.add(r.event_id);
      else for (const e of part) inserted.add(e.eventId);
    }
    return inserted;
  }
}

/** One head per plan, for the plans seen for the first time (lockHeads keeps the stored ones). */
function headsOf(events: PlanEvent[], now: Date): PlanHeadRow[] {
  const heads = new Map<string, PlanHeadRow>();
  for (const e of events) if (!heads.has(e.planId)) heads.set(e.planId, newHead(e.planId, e.sessionId, now));
  return [...heads.values()];
}

function countVoided(events: PlanEvent[]): number {
  let n = 0;
  for (const e of events) if (isVoidedSeq(e)) n++;
  return n;
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
function toEventRow(e: PlanEvent, recordedAt: Date, payload: string | object, deletedAt: Date | null): PlanEventRow {
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
    deletedAt,
  };
}

/** A timestamp parameter: SQL Server would type a bare Date as legacy `datetime`. */
function instant(dialect: Dialect, value: Date): unknown {
  return dialect === 'mssql' ? new MssqlParameter(value, 'datetime2', 3) : value;
}
