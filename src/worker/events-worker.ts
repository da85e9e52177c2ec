import { Worker } from 'bullmq';
import type { JobJson } from 'bullmq';
import type { JobSummary, WorkerJobData } from './job-processor';
import type { UnreadableJobData } from './unreadable-job';
import { DEFAULT_LIMITS } from '../contracts';
import { utf8BytesOver } from '../contracts/limits';

/**
 * BullMQ's Worker plus what a deadline-bound shutdown needs: `worker.close()` has no timeout and
 * keeps renewing the locks of jobs it waits for, so a hung job would never be redelivered while
 * this process lives. `abandonInFlight()` stops fetching and stops renewing those locks: they
 * expire after the lock duration and BullMQ's stalled-job check hands the jobs to another worker.
 */
export class EventsWorker extends Worker<WorkerJobData, JobSummary> {
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
      return this.unreadable(json, jobId, { text, message: `job data is not JSON (${err.message}); its raw text is kept as the event` });
    }
  }

  private unreadable(json: JobJson, jobId: string, unreadable: UnreadableJobData['unreadable']) {
    const job = super.createJob({ ...json, data: '{}' }, jobId);
    job.data = { unreadable } satisfies UnreadableJobData as never; // not re-serialised: the text may be large
    return job;
  }
}
