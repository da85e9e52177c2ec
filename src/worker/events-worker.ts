import { Worker } from 'bullmq';
import type { JobJson } from 'bullmq';
import type { JobSummary, WorkerJobData } from './job-processor';
import type { UnreadableJobData } from './unreadable-job';
import { DEFAULT_LIMITS } from '../contracts';
import { utf8BytesOver } from '../contracts/limits';
import { isRedisOomError } from './redis-relief';
import { sleep } from '../shared/backoff';

/**
 * BullMQ's Worker plus what a deadline-bound shutdown needs: `worker.close()` has no timeout and
 * keeps renewing the locks of jobs it waits for, so a hung job would never be redelivered while
 * this process lives. `abandonInFlight()` stops fetching and stops renewing those locks: they
 * expire after the lock duration and BullMQ's stalled-job check hands the jobs to another worker.
 */
export class EventsWorker extends Worker<WorkerJobData, JobSummary> {
  /**
   * Pause after Redis refused a fetch for lack of memory: doubles per refusal up to the cap, reset by a fetch that
   * works.
   */
  static readonly FULL_REDIS_PAUSE_MS = { first: 100, max: 2_000 };
  private fullRedisPauseMs = 0;
  private readonly closingAbort = new AbortController();
  private jobsUnacknowledged = 0;

  constructor(...args: ConstructorParameters<typeof Worker<WorkerJobData, JobSummary>>) {
    super(...args);
    this.once('closing', () => this.closingAbort.abort());
  }

  /**
   * A Redis at maxmemory (noeviction) refuses the move of a job to active, and BullMQ fetches again
   * at once: thousands of refused scripts a second, each an 'error' event. After such a refusal
   * this waits (100 ms doubling to 2 s; a close cuts it short) before the next try, which
   * RedisRelief's freeing or an operator's fix then lets through.
   */
  protected override async moveToActive(token: string, name?: string) {
    try {
      const job = await super.moveToActive(token, name);
      this.fullRedisPauseMs = 0;
      return job;
    } catch (err) {
      if (isRedisOomError(err) && !this.closing) {
        const { first, max } = EventsWorker.FULL_REDIS_PAUSE_MS;
        this.fullRedisPauseMs = Math.min(max, this.fullRedisPauseMs === 0 ? first : this.fullRedisPauseMs * 2);
        await sleep(this.fullRedisPauseMs, this.closingAbort.signal);
      }
      throw err;
    }
  }

  /**
   * Jobs fetched and not yet acknowledged to Redis (completed or failed there): processing, or done
   * but their acknowledgment not through (Redis down). A shutdown that abandons none loses nothing
   * and hands nothing back.
   */
  get unacknowledgedJobs(): number {
    return this.jobsUnacknowledged;
  }

  override async processJob(...args: Parameters<Worker<WorkerJobData, JobSummary>['processJob']>) {
    this.jobsUnacknowledged++;
    try {
      return await super.processJob(...args);
    } finally {
      this.jobsUnacknowledged--;
    }
  }

  async abandonInFlight(): Promise<void> {
    await this.pause(true); // also stops this worker's stalled-job checker and its timer
    await this.lockManager.close();
  }

  /** Largest job data read (UTF-8 bytes); larger jobs are dead-lettered unparsed. */
  maxJobBytes = DEFAULT_LIMITS.maxJobBytes;

  /** A job whose data is not JSON, or too large to parse, still becomes a Job, carrying UnreadableJobData. */
  protected override createJob(json: JobJson, jobId: string) {
    const text = typeof json.data === 'string' ? json.data : '';
    const bytes = utf8BytesOver(text, this.maxJobBytes);
    if (bytes !== undefined) {
      const message = `job data is ${bytes} bytes, over the ${this.maxJobBytes}-byte job limit (maxJobBytes); not parsed, its raw text is kept as the event`;
      return this.unreadable(json, jobId, { text, message });
    }
    try {
      return super.createJob(json, jobId);
    } catch (err) {
      if (!(err instanceof SyntaxError)) throw err;
      return this.unreadable(json, jobId, {
        text,
        message: `job data is not JSON (${err.message}); its raw text is kept as the event`,
      });
    }
  }

  private unreadable(json: JobJson, jobId: string, unreadable: UnreadableJobData['unreadable']) {
    const job = super.createJob({ ...json, data: '{}' }, jobId);
    job.data = { unreadable } satisfies UnreadableJobData as never; // not re-serialised: the text may be large
    return job;
  }
}
