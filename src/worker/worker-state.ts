/** Running totals of one worker, for `handle.stats()` and the readiness "progress" check. */
export interface WorkerStats {
  /** Transactions committed. */
  batches: number;
  /** Events newly stored. */
  inserted: number;
  /** Events found already stored (redeliveries, replays). */
  duplicates: number;
  deadLettered: number;
  /** Epoch ms of the last commit, or null. */
  lastCommitAt: number | null;
  /** False while the worker is paused because the database is unreachable. */
  databaseUp: boolean;
  /** Why a standing database fault paused the worker (see DatabaseGate.fault), or null. */
  databaseFault: string | null;
  /** Jobs whose events wait for, or are in, a transaction. */
  jobsInBatcher: number;
}

export class WorkerState {
  private batches = 0;
  private inserted = 0;
  private duplicates = 0;
  private dead = 0;
  private lastCommitAt: number | null = null;
  private lastIdleAt = Date.now();
  private lastLargeCommitAt = -Infinity;

  /** `largeBatch`: a commit of at least this many events is one of a burst (see recentLargeCommit). */
  constructor(private readonly largeBatch = Infinity) {}

  committed(info: { events: number; inserted: number; duplicates: number }): void {
    this.batches++;
    this.inserted += info.inserted;
    this.duplicates += info.duplicates;
    this.lastCommitAt = Date.now();
    if (info.events >= this.largeBatch) this.lastLargeCommitAt = this.lastCommitAt;
  }

  /**
   * Whether a transaction of at least `largeBatch` events committed within `withinMs`: events
   * arrive faster than the worker commits them one small batch after another (a burst, a backlog).
   */
  recentLargeCommit(withinMs: number): boolean {
    return Date.now() - this.lastLargeCommitAt < withinMs;
  }

  deadLettered(): void {
    this.dead++;
  }

  /** The queue had nothing left to fetch: no backlog is being neglected. */
  drained(): void {
    this.lastIdleAt = Date.now();
  }

  /** Last commit, last empty queue, or the start: a backlog older than this is not being worked. */
  get lastProgressAt(): number {
    return Math.max(this.lastCommitAt ?? 0, this.lastIdleAt);
  }

  snapshot(databaseUp: boolean, jobsInBatcher: number, databaseFault: string | null = null): WorkerStats {
    return {
      batches: this.batches,
      inserted: this.inserted,
      duplicates: this.duplicates,
      deadLettered: this.dead,
      lastCommitAt: this.lastCommitAt,
      databaseUp,
      databaseFault,
      jobsInBatcher,
    };
  }
}
