import type { PlanEvent } from '../../contracts';
import type { CreatedEvent } from './plan-projection';

/**
 * The canonical order a plan's events apply in: by seq, and two different events with one seq
 * (an executor that restarted its seq) by eventId, so the order is total and the same on every
 * worker and database. SQL reads of the log order by (seq, event_id), which gives the same order:
 * event ids are lower-case UUIDs.
 */
export function canonicalOrder(a: PlanEvent, b: PlanEvent): number {
  return a.seq - b.seq || (a.eventId < b.eventId ? -1 : a.eventId > b.eventId ? 1 : 0);
}

/** The plan.created that defines a plan: the first in canonical order; the others change nothing. */
export function definingCreated(events: Iterable<PlanEvent>): CreatedEvent | undefined {
  let first: CreatedEvent | undefined;
  for (const e of events) if (e.type === 'plan.created' && (!first || canonicalOrder(e, first) < 0)) first = e;
  return first;
}

/**
 * The watermark rule: which events, seen in canonical order, join the applied part of a plan's
 * log. Everything at or below the watermark does; then seq watermark+1, +2, ... while no seq is
 * missing. The first missing seq is a gap: events past it wait (docs/store.md#incremental-behind-a-watermark). With
 * `skipGaps` (a gap that waited too long) every event joins.
 */
export class SeqRun {
  private seq: number;

  constructor(
    watermark: number,
    private readonly skipGaps = false,
  ) {
    this.seq = watermark;
  }

  /** Whether `seq` joins; call in canonical order. */
  admits(seq: number): boolean {
    if (seq <= this.seq) return true;
    if (seq !== this.seq + 1 && !this.skipGaps) return false;
    this.seq = seq;
    return true;
  }

  /** The watermark after the events admitted so far. */
  get watermark(): number {
    return this.seq;
  }
}
