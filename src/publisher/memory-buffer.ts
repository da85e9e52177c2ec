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
}

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
  private events: string[] = [];
  private head = 0;
  private readonly retry: Batch[] = [];
  private nextOrder = 0;
  /** Events held: queued, waiting for retry, or in flight. */
  count = 0;
  size = 0;

  constructor(
    private readonly maxEvents: number,
    private readonly maxSize: number,
  ) {}

  fits(size: number): boolean {
    return this.count < this.maxEvents && this.size + size <= this.maxSize;
  }

  push(json: string): void {
    this.events.push(json);
    this.count++;
    this.size += json.length;
  }

  /** Nothing waits to be sent (batches in flight may remain). */
  get idle(): boolean {
    return this.retry.length === 0 && this.head === this.events.length;
  }

  /**
   * Up to `maxJobs` batches: failed ones first, then new ones of up to `eventsPerJob` events; a last
   * partial batch only if `partial` (the pump allows it when nothing is in flight).
   */
  take(maxJobs: number, eventsPerJob: number, partial = true): Batch[] {
    const batches = this.retry.splice(0, maxJobs);
    while (batches.length < maxJobs && this.head < this.events.length) {
      if (!partial && this.events.length - this.head < eventsPerJob) break;
      const end = Math.min(this.head + eventsPerJob, this.events.length);
      const events = this.events.slice(this.head, end);
      let size = 0;
      for (const e of events) size += e.length;
      batches.push({ id: newBatchId(), events, size, order: this.nextOrder++ });
      this.head = end;
    }
    this.compact();
    return batches;
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
  takeAll(eventsPerJob: number): Batch[] {
    const batches = this.take(Number.MAX_SAFE_INTEGER, eventsPerJob);
    this.release(batches);
    return batches;
  }

  private compact(): void {
    if (this.head === this.events.length) {
      this.events = [];
      this.head = 0;
    } else if (this.head > 4096 && this.head * 2 > this.events.length) {
      this.events = this.events.slice(this.head);
      this.head = 0;
    }
  }
}
