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
}

/** The events of one shard waiting to form batches, oldest first from `head`. */
interface Lane {
  events: string[];
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
    this.lanes = Array.from({ length: shards }, () => ({ events: [], head: 0 }));
  }

  fits(size: number): boolean {
    return this.count < this.maxEvents && this.size + size <= this.maxSize;
  }

  push(json: string, shard = 0): void {
    this.lanes[shard].events.push(json);
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
      const end = this.batchEnd(lane, eventsPerJob, maxJobBytes);
      const events = lane.events.slice(lane.head, end);
      let size = 0;
      for (const e of events) size += e.length;
      batches.push({ id: newBatchId(), events, size, order: this.nextOrder++, shard });
      this.queued -= end - lane.head;
      lane.head = end;
      this.compact(lane);
    }
    return batches;
  }

  /**
   * End of the next batch: `eventsPerJob` events, fewer when their job data would pass
   * `maxJobBytes` (ContractLimits; at least one event, each within `maxEventBytes`). Counted in
   * characters, exact UTF-8 bytes only once the characters could pass the limit (3 bytes each).
   */
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
      lane.head = 0;
    } else if (lane.head > 4096 && lane.head * 2 > lane.events.length) {
      lane.events = lane.events.slice(lane.head);
      lane.head = 0;
    }
  }
}
