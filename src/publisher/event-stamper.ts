import { SPEC_VERSION } from '../contracts/event-types';
import { eventIdV7 } from './event-id';

/** Read once: the stamp runs per event, and a module binding can cost a getter call per read under tsx. */
const VERSION = SPEC_VERSION;

/** The wire envelope in the contract's field order, built from the caller's input plus stamps. */
export interface StampedEvent {
  specVersion: unknown;
  eventId: unknown;
  type: unknown;
  planId: unknown;
  sessionId: unknown;
  seq: unknown;
  occurredAt: unknown;
  payload: unknown;
}

/**
 * Stamps what the caller left out: `specVersion`, `eventId` (a version 7 UUID: time-ordered, see event-id.ts), the
 * per-plan `seq` (0, 1,
 * 2, ... in publish order) and `occurredAt` (now, ISO-8601 UTC).
 *
 * The next seq of each plan lives in memory: it restarts at 0 in a new process, and for a plan
 * forgotten after `plan.finalized` or past `maxTrackedPlans` (least recently used first). An
 * executor that resumes a plan across restarts should pass `seq` itself; a caller-supplied seq also
 * moves the plan's counter past it.
 */
export class EventStamper {
  private readonly nextSeq = new Map<unknown, number>();
  private lastPlanId: unknown;
  private lastMs = -1;
  private lastIso = '';

  constructor(private readonly maxTrackedPlans: number) {}

  stamp(input: Record<string, unknown>): StampedEvent {
    return {
      specVersion: input.specVersion === undefined ? VERSION : input.specVersion,
      eventId: input.eventId === undefined ? eventIdV7() : input.eventId,
      type: input.type,
      planId: input.planId,
      sessionId: input.sessionId,
      seq: input.seq === undefined ? (this.nextSeq.get(input.planId) ?? 0) : input.seq,
      occurredAt: input.occurredAt === undefined ? this.now() : input.occurredAt,
      payload: input.payload,
    };
  }

  /** The event was accepted: its seq is taken (a rejected event takes none, so seqs have no gaps). */
  commit(event: StampedEvent): void {
    const planId = event.planId;
    const next = Math.max(this.nextSeq.get(planId) ?? 0, (event.seq as number) + 1);
    if (event.type === 'plan.finalized') {
      this.nextSeq.delete(planId);
      this.lastPlanId = undefined;
    } else if (planId === this.lastPlanId) {
      this.nextSeq.set(planId, next); // already the most recently used: no reordering needed
    } else {
      this.nextSeq.delete(planId); // re-insert: Map order is the LRU order
      this.nextSeq.set(planId, next);
      this.lastPlanId = planId;
      if (this.nextSeq.size > this.maxTrackedPlans) this.nextSeq.delete(this.nextSeq.keys().next().value);
    }
  }

  /**
   * The plan continues from `nextSeq` (a resume point's `nextSeq`): events stamped from now on get
   * `nextSeq`, `nextSeq + 1`, ... A counter already past it is kept, so a seq is never reused.
   */
  continueFrom(planId: string, nextSeq: number): void {
    const next = Math.max(this.nextSeq.get(planId) ?? 0, nextSeq);
    this.nextSeq.delete(planId);
    this.nextSeq.set(planId, next);
    this.lastPlanId = planId;
    if (this.nextSeq.size > this.maxTrackedPlans) this.nextSeq.delete(this.nextSeq.keys().next().value);
  }

  /** toISOString costs more than a Date.now(): reuse the text within one millisecond. */
  private now(): string {
    const ms = Date.now();
    if (ms !== this.lastMs) {
      this.lastMs = ms;
      this.lastIso = new Date(ms).toISOString();
    }
    return this.lastIso;
  }
}
