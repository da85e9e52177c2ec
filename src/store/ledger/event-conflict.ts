import type { EntityManager } from 'typeorm';
import type { PlanEvent } from '../../contracts';
import type { SqlDialect } from '../sql/sql-dialect';
import { ENTITY, PlanEventRow } from '../entities';
import { isVoidedSeq } from '../projection/voided-seq';
import { PlanLedgerError } from '../../shared/errors';

/** What names an event in a conflict: enough for an operator to find both. */
export interface EventRef {
  eventId: string;
  planId: string;
  type: string;
  seq: number;
}

const describe = (e: EventRef) => `${e.type} seq ${e.seq} of plan ${e.planId}`;

/**
 * An event id that names another event: the stored one (or an earlier copy in the same batch)
 * differs in plan, type, seq, time or payload. A redelivery or a replay repeats an event exactly;
 * different content under one id is a producer bug, and the later event would otherwise vanish.
 * Permanent: the worker dead-letters the event as `conflict`, naming the stored event.
 */
export class EventConflictError extends PlanLedgerError {
  readonly code = 'EVENT_ID_CONFLICT';
  readonly kind = 'conflict';
  constructor(
    readonly event: EventRef,
    readonly stored: EventRef,
    message = `event ${event.eventId} (${describe(event)}) differs from the event stored under the same id (${describe(stored)}); a redelivery repeats an event exactly, so this is another event reusing its id`,
  ) {
    super(message);
    this.name = 'EventConflictError';
  }
}

/** The conflict of an id stored for another plan: names both plans (the message the CLI and dead letters show). */
export class EventIdConflictError extends EventConflictError {
  constructor(event: EventRef, stored: EventRef) {
    super(
      event,
      stored,
      `event ${event.eventId} of plan ${event.planId}: its id is already stored for an event of plan ${stored.planId} (${describe(stored)}); event ids must be unique`,
    );
    this.name = 'EventIdConflictError';
  }
}

/** Throws the conflict of `event` with `stored` (an earlier copy or the stored row) unless they are the same event. */
export function assertSameEvent(event: PlanEvent, stored: PlanEvent | PlanEventRow): void {
  if (stored.planId !== event.planId) throw new EventIdConflictError(event, stored);
  if (!sameContent(event, stored)) throw new EventConflictError(event, stored);
}

function sameContent(event: PlanEvent, other: PlanEvent | PlanEventRow): boolean {
  // one refused event voids its seq once: a later record of the same refusal is the same fact
  if (isVoidedSeq(event) && isVoidedSeq(other)) return Number(other.seq) === event.seq;
  if (
    other.type !== event.type ||
    Number(other.seq) !== event.seq ||
    other.sessionId !== event.sessionId ||
    Number(other.specVersion) !== event.specVersion
  )
    return false;
  if (new Date(other.occurredAt).getTime() !== Date.parse(event.occurredAt)) return false;
  const payload = typeof other.payload === 'string' ? JSON.parse(other.payload) : other.payload;
  return canonicalJson(payload) === canonicalJson(event.payload);
}

/** JSON with object keys sorted: PostgreSQL's jsonb does not keep the order the event had. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const record = value as Record<string, unknown>;
    const keys = Object.keys(record)
      .filter((k) => record[k] !== undefined)
      .sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(record[k])}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/**
 * The first copy of each event id, in batch order; a later copy with other content is a conflict
 * (thrown: the worker then writes the batch's jobs apart, and the later copy meets the stored one).
 */
export function firstCopies(events: PlanEvent[]): PlanEvent[] {
  const first = new Map<string, PlanEvent>();
  for (const e of events) {
    const seen = first.get(e.eventId);
    if (seen === undefined) first.set(e.eventId, e);
    else assertSameEvent(e, seen);
  }
  return first.size === events.length ? events : [...first.values()];
}

/** The stored rows of these event ids (read only for ids already stored: redeliveries, replays, conflicts). */
export async function storedEventRows(
  m: EntityManager,
  dialect: SqlDialect,
  ids: string[],
): Promise<Map<string, PlanEventRow>> {
  const found = new Map<string, PlanEventRow>();
  for (const r of await dialect.rows(m).findIn<PlanEventRow>(ENTITY.event, 'eventId', ids))
    found.set(r.eventId.toLowerCase(), r);
  return found;
}
