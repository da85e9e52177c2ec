import type { Job, JobType, Queue } from 'bullmq';
import { DEAD_LETTER_KINDS, DeadLetter, DeadLetterKind } from './dead-letter';

/**
 * Dead letters are jobs on DEAD_LETTER_QUEUE that no worker ever consumes, so they sit in BullMQ's
 * waiting list (where BullMQ 6 also keeps the jobs of a paused queue) until `dlq replay` or
 * `dlq purge` removes them. Delayed and prioritized are read too, in case a writer ever sets those
 * job options. The queue is the only store: nothing here caches.
 */
export const DEAD_LETTER_STATES: readonly JobType[] = ['waiting', 'delayed', 'prioritized'];

/** Jobs read per Redis round trip while scanning. @defaultValue 500 */
export const SCAN_PAGE_SIZE = 500;

export class DeadLetterRepository {
  constructor(private readonly queue: Queue, private readonly pageSize = SCAN_PAGE_SIZE) {}

  /**
   * Every dead letter, oldest first (queue order), one page at a time so a queue of 100k entries is
   * never held in memory at once. Entries removed concurrently may be skipped; none is seen twice.
   */
  async *scan(): AsyncGenerator<DeadLetter[]> {
    const seen = new Set<string>();
    for (const state of DEAD_LETTER_STATES) {
      for (let start = 0; ; start += this.pageSize) {
        const jobs = await this.queue.getJobs([state], start, start + this.pageSize - 1, true);
        const page = jobs.filter((job) => job.id !== undefined && !seen.has(job.id)).map(toDeadLetter);
        for (const dl of page) seen.add(dl.id);
        if (page.length > 0) yield page;
        if (jobs.length < this.pageSize) break;
      }
    }
  }

  async get(id: string): Promise<DeadLetter | undefined> {
    const job = await this.queue.getJob(id);
    return job ? toDeadLetter(job) : undefined;
  }

  /** The entries of `ids` in that order; `undefined` where one no longer exists. */
  async getMany(ids: string[]): Promise<Array<DeadLetter | undefined>> {
    return Promise.all(ids.map((id) => this.get(id)));
  }

  /** Removes the given entries (absent ones are ignored). */
  async remove(ids: string[]): Promise<void> {
    await Promise.all(ids.map((id) => this.queue.remove(id)));
  }

  /** How many entries the queue holds, without reading them. */
  async count(): Promise<number> {
    const counts = await this.queue.getJobCounts(...DEAD_LETTER_STATES);
    return Object.values(counts).reduce((a, b) => a + b, 0);
  }
}

function str(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

/**
 * The job's data as a DeadLetter. Writers store a complete record; this only fills gaps (an entry
 * written by hand or by an older version) from the job itself so listing never crashes on one.
 */
export function toDeadLetter(job: Job): DeadLetter {
  const data = (job.data && typeof job.data === 'object' ? job.data : {}) as Partial<DeadLetter>;
  const addedAt = new Date(job.timestamp || 0).toISOString();
  const kind = (DEAD_LETTER_KINDS as readonly string[]).includes(String(data.kind ?? job.name)) ? ((data.kind ?? job.name) as DeadLetterKind) : 'unprocessable';
  const error = data.error && typeof data.error === 'object' ? data.error : { message: '(no error recorded)' };
  return {
    ...data,
    // the job id is what removal uses; writers set both to the same value
    id: String(job.id),
    kind,
    event: data.event,
    eventId: str(data.eventId),
    type: str(data.type),
    planId: str(data.planId),
    sessionId: str(data.sessionId),
    error: { ...error, message: str(error.message) ?? '(no message)' },
    attempts: typeof data.attempts === 'number' ? data.attempts : 0,
    firstFailedAt: str(data.firstFailedAt) ?? addedAt,
    lastFailedAt: str(data.lastFailedAt) ?? addedAt,
    source: data.source && typeof data.source === 'object' ? data.source : { queue: '?', jobId: '?' },
    workerVersion: str(data.workerVersion) ?? '?',
    replayCount: typeof data.replayCount === 'number' ? data.replayCount : 0,
  };
}
