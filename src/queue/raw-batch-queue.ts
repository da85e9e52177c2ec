import { Job, JobsOptions, Queue } from 'bullmq';

/**
 * Job data that is already encoded JSON (batch-encoding.ts). The publisher serialises each event
 * once, in `publish()` (which also snapshots it: later mutation of the caller's object cannot change
 * what is sent). Stock BullMQ would JSON.stringify the batch again (~1.2 µs per event here). The
 * dead-letter writer and `dlq replay` store bytes they laid out themselves the same way.
 */
export class RawJobData {
  constructor(readonly bytes: Buffer) {}
}

/**
 * A Job whose `RawJobData` is stored verbatim. BullMQ passes the `data` of asJSON() to its
 * add-job script as one argument and ioredis sends a Buffer argument as is, so Redis stores exactly
 * these bytes: a worker reads them as ordinary JSON job data.
 */
class RawDataJob extends Job {
  override asJSON(): ReturnType<Job['asJSON']> {
    const data: unknown = this.data;
    if (!(data instanceof RawJobData)) return super.asJSON();
    this.data = undefined;
    try {
      return { ...super.asJSON(), data: data.bytes as unknown as string };
    } finally {
      this.data = data;
    }
  }
}

/** EVENTS_QUEUE as the publisher sees it: BullMQ's documented `Job` extension point, nothing else changed. */
export class RawBatchQueue extends Queue {
  protected override get Job(): typeof Job {
    return RawDataJob as unknown as typeof Job;
  }
}

/**
 * Adds jobs whose data is RawJobData to any BullMQ `Queue` (a caller's own, not only a
 * RawBatchQueue), atomically, as `queue.addBulk` would: the queue's default job options under each
 * job's own. Returns the jobs' ids.
 */
export async function addRawJobs(
  queue: Queue,
  jobs: ReadonlyArray<{ name: string; data: RawJobData; opts?: JobsOptions }>,
): Promise<string[]> {
  const added = await (RawDataJob as unknown as typeof Job).createBulk(
    queue,
    jobs.map((job) => ({ name: job.name, data: job.data, opts: { ...queue.defaultJobOptions, ...job.opts } })),
  );
  return added.map((job) => job.id!);
}
