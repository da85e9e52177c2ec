import { randomUUID } from 'node:crypto';
import { pushAll } from '../shared/arrays';

/**
 * Events of one BullMQ job. `id` is the job id (`b-<uuid>`: never all digits, no ':'), fixed when the
 * batch is formed and kept through retries and spills, so a batch Redis did store before its reply
 * was lost is ignored as a duplicate when it is sent again (while the first job still exists).
 */
export interface Batch {
  id: string;
  /** Event JSON texts, in publish order. */
  events: string[];
  /** Length of the events' JSON texts (see MemoryBuffer). */
  size: number;
  /** Position in publish order, so failed batches are retried in order whatever order they failed in. */
  order: number;
  /** The queue shard of its events (all of one shard: QUEUE_SHARDS routes by plan id). */
  shard: number;
  /** The durability ticket of its first event: the lowest of its events' (see `PlanEventPublisher.whenDurable`). */
  firstTicket: number;
}

/** The events of one shard waiting to form batches, oldest first from `head`. */
interface Lane {
  events: string[];
  /** Each event's durability ticket, increasing (they are handed out in publish order). */
  tickets: number[];
  head: number;
}

/** `{"v":1,"events":[` and `]}`, with room to spare. */
const JOB_ENVELOPE_BYTES = 32;

export function newBatchId(): string {
  return `b-${randomUUID()}`;
}

/**
 * The in-memory part of the publisher's FIFO: events accepted while the journal is empty, waiting
 * for Redis. Counts and sizes include batches in flight, which stay here until `addBulk` resolves,
 * so the bound holds whatever Redis does. Batches that failed are retried first, unchanged.
 *
 * Sizes are JSON text lengths: what a flat string costs the heap (one byte per character for
 * ASCII), and its UTF-8 bytes for ASCII text, at no cost; exact UTF-8 bytes would need a scan of
 * every string on the caller's path. The journal, which writes bytes, counts them exactly.
 */
export class MemoryBuffer {
  private readonly lanes: Lane[];
  /** The lane take() starts from, rotated so that no shard waits behind the others. */
  private cursor = 0;
  /** Events queued in lanes (not yet in a batch). */
  private queued = 0;
  private readonly retry: Batch[] = [];
  private nextOrder = 0;
  /** Events held: queued, waiting for retry, or in flight. */
  count = 0;
  size = 0;

  constructor(
    private readonly maxEvents: number,
    private readonly maxSize: number,
    shards = 1,
  ) {
    this.lanes = Array.from({ length: shards }, () => ({ events: [], tickets: [], head: 0 }));
  }

  fits(size: number): boolean {
    return this.count < this.maxEvents && this.size + size <= this.maxSize;
  }

  push(json: string, shard = 0, ticket = 0): void {
    const lane = this.lanes[shard];
    lane.events.push(json);
    lane.tickets.push(ticket);
    this.queued++;
    this.count++;
    this.size += json.length;
  }

  /** Nothing waits to be sent (batches in flight may remain). */
  get idle(): boolean {
    return this.retry.length === 0 && this.queued === 0;
  }

  /**
   * Up to `maxJobs` batches: failed ones first, then new ones of up to `eventsPerJob` events; a last
   * partial batch only if `partial` (the pump allows it when nothing is in flight).
   */
  take(maxJobs: number, eventsPerJob: number, partial = true, maxJobBytes = Number.MAX_SAFE_INTEGER): Batch[] {
    const batches = this.retry.splice(0, maxJobs);
    const lanes = this.lanes.length;
    // one batch per shard in turn, so a busy shard does not hold the others' events back
    for (let idle = 0; batches.length < maxJobs && this.queued > 0 && idle < lanes;) {
      const shard = this.cursor;
      this.cursor = (this.cursor + 1) % lanes;
      const lane = this.lanes[shard];
      const waiting = lane.events.length - lane.head;
      if (waiting === 0 || (!partial && waiting < eventsPerJob)) {
        idle++;
        continue;
      }
      idle = 0;
      batches.push(this.takeBatch(lane, this.batchEnd(lane, eventsPerJob, maxJobBytes), shard));
      this.compact(lane);
    }
    return batches;
  }

  /**
   * What the pump sends: with one shard, `take` (a partial batch only when `idle`, i.e. nothing is
   * in flight). With several, one shard per call, so that a bulk is one `addBulk` on one shard:
   * retried batches first, else full batches of the fullest shard; when `idle` and no shard has a
   * full batch, every shard's events if all of them together fill less than a job (a quiet
   * publisher: no wait), else the fullest shard's. A busy publisher thus sends full jobs, a shard
   * per round trip, instead of N small ones each time nothing is in flight (smaller jobs and more
   * round trips cost Redis, the workers and the publisher more per event), and an `idle` call always
   * sends something.
   */
  takeForSend(maxJobs: number, eventsPerJob: number, idle: boolean, maxJobBytes = Number.MAX_SAFE_INTEGER): Batch[] {
    if (this.lanes.length === 1) return this.take(maxJobs, eventsPerJob, idle, maxJobBytes);
    if (this.retry.length > 0) return this.retry.splice(0, maxJobs);
    if (this.queued === 0) return [];
    let fullest = 0;
    for (let i = 1; i < this.lanes.length; i++) if (this.waiting(i) > this.waiting(fullest)) fullest = i;
    if (this.waiting(fullest) >= eventsPerJob || !idle)
      return this.takeLane(fullest, maxJobs, eventsPerJob, false, maxJobBytes);
    if (this.queued < eventsPerJob) return this.take(maxJobs, eventsPerJob, true, maxJobBytes);
    return this.takeLane(fullest, 1, eventsPerJob, true, maxJobBytes);
  }

  /** Up to `maxJobs` batches of one shard's events (a partial one only if `partial`). */
  private takeLane(
    shard: number,
    maxJobs: number,
    eventsPerJob: number,
    partial: boolean,
    maxJobBytes: number,
  ): Batch[] {
    const lane = this.lanes[shard];
    const batches: Batch[] = [];
    while (batches.length < maxJobs) {
      const waiting = lane.events.length - lane.head;
      if (waiting === 0 || (!partial && waiting < eventsPerJob)) break;
      batches.push(this.takeBatch(lane, this.batchEnd(lane, eventsPerJob, maxJobBytes), shard));
    }
    this.compact(lane);
    return batches;
  }

  private waiting(shard: number): number {
    const lane = this.lanes[shard];
    return lane.events.length - lane.head;
  }

  /**
   * End of the next batch: `eventsPerJob` events, fewer when their job data would pass
   * `maxJobBytes` (ContractLimits; at least one event, each within `maxEventBytes`). Counted in
   * characters, exact UTF-8 bytes only once the characters could pass the limit (3 bytes each).
   */
  /** The lane's events from its head up to `end` as one batch; they leave the buffer's count. */
  private takeBatch(lane: Lane, end: number, shard: number): Batch {
    const events = lane.events.slice(lane.head, end);
    let size = 0;
    for (const e of events) size += e.length;
    const firstTicket = lane.tickets[lane.head];
    this.queued -= end - lane.head;
    lane.head = end;
    return { id: newBatchId(), events, size, order: this.nextOrder++, shard, firstTicket };
  }

  private batchEnd(lane: Lane, eventsPerJob: number, maxJobBytes: number): number {
    const { events, head } = lane;
    const last = Math.min(head + eventsPerJob, events.length);
    let chars = JOB_ENVELOPE_BYTES;
    for (let i = head; i < last; i++) chars += events[i].length + 1;
    if (chars * 3 <= maxJobBytes) return last; // the common case: cannot reach the limit
    let bytes = JOB_ENVELOPE_BYTES;
    for (let i = head; i < last; i++) {
      bytes += Buffer.byteLength(events[i], 'utf8') + 1;
      if (bytes > maxJobBytes) return Math.max(i, head + 1);
    }
    return last;
  }

  /**
   * The lowest durability ticket of an event still queued or waiting for a retry (batches in flight
   * are the pump's to tell); `Infinity` when there is none.
   */
  lowestTicket(): number {
    let lowest = Infinity;
    for (const lane of this.lanes)
      if (lane.head < lane.events.length) lowest = Math.min(lowest, lane.tickets[lane.head]);
    for (const batch of this.retry) lowest = Math.min(lowest, batch.firstTicket);
    return lowest;
  }

  /** Redis stored them: they leave memory. */
  release(batches: readonly Batch[]): void {
    for (const batch of batches) {
      this.count -= batch.events.length;
      this.size -= batch.size;
    }
  }

  /** Sending failed: retried first, in their original order and with their ids. */
  restore(batches: readonly Batch[]): void {
    pushAll(this.retry, batches);
    this.retry.sort((a, b) => a.order - b.order);
  }

  /** Everything not in flight, as batches (for a spill at close); memory keeps only what is in flight. */
  takeAll(eventsPerJob: number, maxJobBytes?: number): Batch[] {
    const batches = this.take(Number.MAX_SAFE_INTEGER, eventsPerJob, true, maxJobBytes);
    this.release(batches);
    return batches;
  }

  /**
   * Hands every batch not in flight to `keep` (the journal), oldest first; those it takes leave
   * memory, the first it refuses and the rest stay, for the next try.
   */
  spill(eventsPerJob: number, maxJobBytes: number, keep: (batch: Batch) => boolean): number {
    const batches = this.take(Number.MAX_SAFE_INTEGER, eventsPerJob, true, maxJobBytes);
    let spilled = 0;
    for (let i = 0; i < batches.length; i++) {
      if (!keep(batches[i])) {
        this.restore(batches.slice(i));
        break;
      }
      this.release([batches[i]]);
      spilled += batches[i].events.length;
    }
    return spilled;
  }

  private compact(lane: Lane): void {
    if (lane.head === lane.events.length) {
      lane.events = [];
      lane.tickets = [];
      lane.head = 0;
    } else if (lane.head > 4096 && lane.head * 2 > lane.events.length) {
      lane.events = lane.events.slice(lane.head);
      lane.tickets = lane.tickets.slice(lane.head);
      lane.head = 0;
    }
  }
}
