import { Worker } from 'bullmq';
import type { JobJson } from 'bullmq';
import type { JobSummary, WorkerJobData } from './job-processor';
import type { UnreadableJobData } from './unreadable-job';

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

  /** A job whose data is not JSON still becomes a Job, carrying UnreadableJobData. */
  protected override createJob(json: JobJson, jobId: string) {
    try {
      return super.createJob(json, jobId);
    } catch (err) {
      if (!(err instanceof SyntaxError)) throw err;
      const unreadable: UnreadableJobData = { unreadable: { text: String(json.data ?? ''), reason: err.message } };
      return super.createJob({ ...json, data: JSON.stringify(unreadable) }, jobId);
    }
  }
}
