import type { EntityManager } from 'typeorm';
import type { PlanEvent } from '../../contracts';
import { isDuplicateKeyError } from '../db-errors';
import type { EventRowInput, LockedHead, SqlDialect } from '../sql/sql-dialect';
import { assertSameEvent, storedEventRows } from './event-conflict';

/** What appending a batch found: the events it stored, and the plan of each id that was stored already. */
export interface Appended {
  fresh: PlanEvent[];
  existing: Map<string, string>;
}

/**
 * The append-only event log (`plan_events`) of one transaction, whose plans' heads it holds:
 * idempotent by eventId, the primary key.
 */
export class EventLog {
  constructor(
    private readonly m: EntityManager,
    private readonly dialect: SqlDialect,
  ) {}

  /**
   * Append the events not stored yet; returns them, and the plan each other one is stored for.
   * Where inserts can skip stored ids (PostgreSQL), it inserts all and skips the stored ones: one
   * statement, and the rare duplicates looked up after. Elsewhere the ids of plans seen before are
   * looked up first (a new head means no stored event), then the rest inserted; no skipping is
   * needed there: an event is only stored under its plan's head lock, and an id another plan
   * already has fails on the primary key, which the worker splits until that event is dead-lettered.
   */
  async append(unique: PlanEvent[], heads: ReadonlyMap<string, LockedHead>): Promise<Appended> {
    if (this.dialect.skipsStoredEvents) {
      const inserted = await this.insert(unique, heads, true);
      const fresh = inserted.size === unique.length ? unique : unique.filter((e) => inserted.has(e.eventId));
      const existing =
        fresh === unique
          ? new Map<string, string>()
          : await this.storedPlans(unique.filter((e) => !inserted.has(e.eventId)).map((e) => e.eventId));
      return { fresh, existing };
    }
    const existing = await this.storedPlans(unique.filter((e) => !heads.get(e.planId)!.isNew).map((e) => e.eventId));
    const fresh = existing.size === 0 ? unique : unique.filter((e) => !existing.has(e.eventId));
    if (fresh.length > 0) await this.insertNew(fresh, heads);
    return { fresh, existing };
  }

  /** The plan each of these event ids is stored for (ids not stored are absent). */
  async storedPlans(ids: string[]): Promise<Map<string, string>> {
    if (ids.length === 0) return new Map();
    return this.dialect.eventPlans(this.m, ids);
  }

  /**
   * Events whose id is stored already must be that stored event (a redelivery, a replay): another
   * plan, type, seq, time or payload under the id is a conflict, thrown (the transaction rolls back).
   * Reads the stored rows of those ids only, so the common batch pays nothing.
   */
  assertRedeliveries(stored: PlanEvent[]): Promise<void> {
    return assertRedeliveries(this.m, this.dialect, stored);
  }

  /**
   * An insert refused on the primary key (a plan seen for the first time, whose ids were not looked
   * up): the stored event under a reused id makes it a conflict naming both; else (a concurrent
   * writer stored the same events) the error itself, which the store's write retries.
   */
  private async insertNew(fresh: PlanEvent[], heads: ReadonlyMap<string, LockedHead>): Promise<void> {
    try {
      await this.insert(fresh, heads, false);
    } catch (err) {
      if (!isDuplicateKeyError(err)) throw err;
      // the row that refused the insert is committed (an uncommitted one would have made the insert
      // wait), so where the error ended this transaction it is read outside it
      const m = this.dialect.errorsEndTransaction ? this.m.connection.manager : this.m;
      await assertRedeliveries(m, this.dialect, fresh);
      throw err;
    }
  }

  /** Events of a plan retention already soft-deleted are stored soft-deleted too. */
  private insert(
    events: PlanEvent[],
    heads: ReadonlyMap<string, LockedHead>,
    skipStored: boolean,
  ): Promise<Set<string>> {
    const recordedAt = new Date();
    return this.dialect.appendEvents(
      this.m,
      events.map((e) => toEventRow(e, recordedAt, heads.get(e.planId)!.deletedAt)),
      skipStored,
    );
  }
}

function toEventRow(e: PlanEvent, recordedAt: Date, deletedAt: Date | null): EventRowInput {
  return {
    eventId: e.eventId,
    planId: e.planId,
    sessionId: e.sessionId,
    type: e.type,
    seq: e.seq,
    specVersion: e.specVersion,
    occurredAt: new Date(e.occurredAt),
    recordedAt,
    payload: e.payload,
    deletedAt,
  };
}

async function assertRedeliveries(m: EntityManager, dialect: SqlDialect, stored: PlanEvent[]): Promise<void> {
  const rows = await storedEventRows(
    m,
    dialect,
    stored.map((e) => e.eventId),
  );
  for (const e of stored) {
    const row = rows.get(e.eventId.toLowerCase());
    if (row) assertSameEvent(e, row);
  }
}
