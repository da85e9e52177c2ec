/**
 * Collects the events of many jobs into one write. Each job's processor calls `submit()` and
 * awaits its own promise, which settles after the writes holding its events have committed (or
 * failed): that is how one transaction acknowledges many jobs, each only after its commit.
 *
 * Writes run in lanes, one write at a time per lane, lanes in parallel. Each event goes to the
 * lane `laneOf` names (the worker hashes the session id: one session, one lane), so a session's
 * events in flight never queue several transactions on its locks while unrelated sessions proceed
 * in the other lanes. A job whose events span lanes settles once every part has.
 *
 * A lane flushes when its pending events reach `maxEvents`, when every job the worker may hold is
 * already waiting here (no more can arrive: waiting longer would only add latency), or
 * `maxWaitMs` after its oldest pending entry arrived. Entries arriving while a lane writes form
 * its next batch, so batches grow with the load.
 */

export interface BatchEntry<E> {
  /** The job id, for logs. */
  key: string;
  events: E[];
}

export type EntryResult<R> = { ok: true; value: R } | { ok: false; error: unknown };

export interface MicroBatcherOptions<E, R> {
  /** Flush a lane when this many events are pending in it. */
  maxEvents: number;
  /** Flush a lane this long after its oldest pending entry arrived. */
  maxWaitMs: number;
  /** Flush when this many jobs are pending or being written (the worker's current concurrency). */
  maxEntries: number | (() => number);
  /** Writes in flight at once, one per lane (1 on SQLite: the store serialises anyway). */
  lanes: number;
  /** The lane of an event, any integer (taken modulo `lanes`). @defaultValue every event in lane 0 */
  laneOf?(event: E): number;
  /** One job's result from the results of its parts in several lanes. Required with more than one lane. */
  merge?(parts: R[]): R;
  /** Writes a batch and returns one result per entry, in order. Must not reject. */
  write(entries: BatchEntry<E>[]): Promise<EntryResult<R>[]>;
}

interface Pending<E, R> extends BatchEntry<E> {
  at: number;
  settle(result: EntryResult<R>): void;
}

interface Lane<E, R> {
  pending: Pending<E, R>[];
  pendingEvents: number;
  writing: boolean;
}

export class MicroBatcher<E, R> {
  private readonly lanes: Lane<E, R>[];
  private timer: NodeJS.Timeout | undefined;
  /** Jobs submitted whose promise has not settled yet. */
  private jobs = 0;
  private idleWaiters: (() => void)[] = [];

  constructor(private readonly options: MicroBatcherOptions<E, R>) {
    if (options.lanes > 1 && !options.merge) throw new Error('MicroBatcher: more than one lane needs merge()');
    this.lanes = Array.from({ length: Math.max(1, options.lanes) }, () => ({
      pending: [],
      pendingEvents: 0,
      writing: false,
    }));
  }

  submit(key: string, events: E[]): Promise<R> {
    this.jobs++;
    const parts = this.split(events);
    const settled = parts.map(
      ([lane, part]) =>
        new Promise<EntryResult<R>>((settle) => {
          lane.pending.push({ key, events: part, at: Date.now(), settle });
          lane.pendingEvents += part.length;
        }),
    );
    this.schedule();
    // every part settles before the job does: a retry never overlaps a part still being written
    return Promise.all(settled).then((results) => {
      this.jobs--;
      this.schedule();
      const failed = results.find((r) => !r.ok);
      if (failed && !failed.ok) throw failed.error;
      const values = results.map((r) => (r as { value: R }).value);
      return values.length === 1 ? values[0] : this.options.merge!(values);
    });
  }

  /** Jobs waiting for a flush or being written. */
  get size(): number {
    return this.jobs;
  }

  /** Flush whatever is pending now (shutdown) and resolve once nothing is pending or in flight. */
  async drain(): Promise<void> {
    this.schedule(true);
    if (this.jobs === 0) return;
    await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
  }

  /** Each lane's share of a job's events, in their order ([lane 0, all] with one lane). */
  private split(events: E[]): Array<[Lane<E, R>, E[]]> {
    const { laneOf } = this.options;
    const n = this.lanes.length;
    if (n === 1 || !laneOf) return [[this.lanes[0], events]];
    const parts = new Map<number, E[]>();
    for (const e of events) {
      const i = ((laneOf(e) % n) + n) % n;
      const part = parts.get(i);
      if (part) part.push(e);
      else parts.set(i, [e]);
    }
    if (parts.size === 0) return [[this.lanes[0], events]];
    return [...parts].map(([i, part]) => [this.lanes[i], part]);
  }

  private maxEntries(): number {
    const m = this.options.maxEntries;
    return typeof m === 'number' ? m : m();
  }

  private schedule(force = false): void {
    const everyJobWaits = this.jobs >= this.maxEntries();
    const now = Date.now();
    for (const lane of this.lanes) {
      if (lane.writing || lane.pending.length === 0) continue;
      if (
        force ||
        everyJobWaits ||
        lane.pendingEvents >= this.options.maxEvents ||
        now - lane.pending[0].at >= this.options.maxWaitMs
      )
        this.flush(lane);
    }
    this.armTimer(now);
    if (this.jobs === 0) for (const wake of this.idleWaiters.splice(0)) wake();
  }

  /** One timer for the lane whose oldest entry is due first. */
  private armTimer(now: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    let due = Infinity;
    for (const lane of this.lanes)
      if (!lane.writing && lane.pending.length > 0) due = Math.min(due, lane.pending[0].at + this.options.maxWaitMs);
    if (due === Infinity) return;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        this.schedule();
      },
      Math.max(0, due - now),
    );
  }

  /** Takes entries up to `maxEvents` (at least one, however large) and writes them. */
  private flush(lane: Lane<E, R>): void {
    let events = 0;
    let take = 0;
    while (
      take < lane.pending.length &&
      (take === 0 || events + lane.pending[take].events.length <= this.options.maxEvents)
    ) {
      events += lane.pending[take].events.length;
      take++;
    }
    const batch = lane.pending.splice(0, take);
    lane.pendingEvents -= events;
    lane.writing = true;
    void this.options
      .write(batch)
      .then(
        (results) =>
          batch.forEach((entry, i) =>
            entry.settle(results[i] ?? { ok: false, error: new Error('batch writer returned no result for this job') }),
          ),
        (error) => batch.forEach((entry) => entry.settle({ ok: false, error })),
      )
      .finally(() => {
        lane.writing = false;
        this.schedule();
      });
  }
}
