/**
 * Keeps about `maxEvents` events in flight whatever the job size: BullMQ's concurrency counts
 * jobs, and jobs range from 1 event (a trickle) to 500+ (the publisher under load). The job
 * concurrency follows a moving average of events per job, between 1 and `maxJobs`.
 */
export class AdaptiveConcurrency {
  private avgEventsPerJob: number | undefined;
  private current: number;
  private readonly listeners: Array<(concurrency: number) => void> = [];

  /**
   * Starts as if jobs held `assumedEventsPerJob` events (the publisher's default job size): a
   * backlog of big jobs must not be fetched `maxJobs` at a time before the first one is seen.
   */
  constructor(
    private readonly maxJobs: number,
    private readonly maxEvents: number,
    apply?: (concurrency: number) => void,
    assumedEventsPerJob = 500,
  ) {
    this.current = this.targetFor(assumedEventsPerJob);
    if (apply) this.listeners.push(apply);
  }

  /** Also tell `listener` each new concurrency. */
  onChange(listener: (concurrency: number) => void): void {
    this.listeners.push(listener);
  }

  private targetFor(eventsPerJob: number): number {
    return Math.max(1, Math.min(this.maxJobs, Math.floor(this.maxEvents / eventsPerJob)));
  }

  /** Jobs BullMQ may run at once now. */
  get concurrency(): number {
    return this.current;
  }

  /** Called with each job's event count as it starts. */
  observe(events: number): void {
    const n = Math.max(1, events);
    // 0.1: a burst of big jobs lowers concurrency within a few jobs; a single odd job barely moves it
    this.avgEventsPerJob =
      this.avgEventsPerJob === undefined ? n : this.avgEventsPerJob + 0.1 * (n - this.avgEventsPerJob);
    const target = this.targetFor(this.avgEventsPerJob);
    // Only meaningful changes: the setter is cheap, but a jittering value helps nobody reading logs.
    if (target !== this.current && Math.abs(target - this.current) / this.current >= 0.1) {
      this.current = target;
      for (const listener of this.listeners) listener(target);
    }
  }
}
