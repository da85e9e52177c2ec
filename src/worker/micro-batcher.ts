/**
 * Collects the events of many jobs into one write. Each job's processor calls `submit()` and
 * awaits its own promise, which settles after the write holding its events has committed (or
 * failed): that is how one transaction acknowledges many jobs, each only after its commit.
 *
 * A flush starts when the pending events reach `maxEvents`, when every job the worker may hold
 * is already waiting here (no more can arrive: waiting longer would only add latency), or
 * `maxWaitMs` after the oldest pending entry arrived. At most `maxConcurrentFlushes` writes run
 * at once; entries arriving meanwhile form the next batch, so batches grow with the load.
 */

export interface BatchEntry<E> {
  /** The job id, for logs. */
  key: string;
  events: E[];
}

export type EntryResult<R> = { ok: true; value: R } | { ok: false; error: unknown };

export interface MicroBatcherOptions<E, R> {
  /** Flush when this many events are pending. */
  maxEvents: number;
  /** Flush this long after the oldest pending entry arrived. */
  maxWaitMs: number;
  /** Flush when this many entries are pending or being written (the worker's current concurrency). */
  maxEntries: number | (() => number);
  /** Writes in flight at once (1 on SQLite: the store serialises anyway). */
  maxConcurrentFlushes: number;
  /** Writes a batch and returns one result per entry, in order. Must not reject. */
  write(entries: BatchEntry<E>[]): Promise<EntryResult<R>[]>;
}

interface Pending<E, R> extends BatchEntry<E> {
  at: number;
  resolve(value: R): void;
  reject(error: unknown): void;
}

export class MicroBatcher<E, R> {
  private pending: Pending<E, R>[] = [];
  private pendingEvents = 0;
  private timer: NodeJS.Timeout | undefined;
  private flushing = 0;
  private entriesInFlight = 0;
  private idleWaiters: (() => void)[] = [];

  constructor(private readonly options: MicroBatcherOptions<E, R>) {}

  submit(key: string, events: E[]): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.pending.push({ key, events, at: Date.now(), resolve, reject });
      this.pendingEvents += events.length;
      this.schedule();
    });
  }

  private maxEntries(): number {
    const m = this.options.maxEntries;
    return typeof m === 'number' ? m : m();
  }

  /** Entries waiting for a flush plus entries being written. */
  get size(): number {
    return this.pending.length + this.entriesInFlight;
  }

  /** Flush whatever is pending now (shutdown) and resolve once nothing is pending or in flight. */
  async drain(): Promise<void> {
    this.schedule(true);
    if (this.size === 0) return;
    await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
  }

  private schedule(force = false): void {
    while (this.pending.length > 0 && this.flushing < this.options.maxConcurrentFlushes) {
      const due =
        force ||
        this.pendingEvents >= this.options.maxEvents ||
        this.pending.length + this.entriesInFlight >= this.maxEntries() ||
        Date.now() - this.pending[0].at >= this.options.maxWaitMs;
      if (!due) break;
      this.startFlush();
    }
    this.armTimer();
    if (this.size === 0) for (const wake of this.idleWaiters.splice(0)) wake();
  }

  private armTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.pending.length === 0 || this.flushing >= this.options.maxConcurrentFlushes) return;
    const wait = Math.max(0, this.pending[0].at + this.options.maxWaitMs - Date.now());
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.schedule();
    }, wait);
  }

  /** Takes entries up to `maxEvents` (at least one, however large) and writes them. */
  private startFlush(): void {
    let events = 0;
    let take = 0;
    while (take < this.pending.length && (take === 0 || events + this.pending[take].events.length <= this.options.maxEvents)) {
      events += this.pending[take].events.length;
      take++;
    }
    const batch = this.pending.splice(0, take);
    this.pendingEvents -= events;
    this.flushing++;
    this.entriesInFlight += batch.length;
    void this.options
      .write(batch)
      .then(
        (results) => batch.forEach((entry, i) => settle(entry, results[i])),
        (error) => batch.forEach((entry) => entry.reject(error)),
      )
      .finally(() => {
        this.flushing--;
        this.entriesInFlight -= batch.length;
        this.schedule();
      });
  }
}

function settle<E, R>(entry: Pending<E, R>, result: EntryResult<R> | undefined): void {
  if (result === undefined) entry.reject(new Error('batch writer returned no result for this job'));
  else if (result.ok) entry.resolve(result.value);
  else entry.reject(result.error);
}
