import { randomBytes } from 'node:crypto';
import IORedis from 'ioredis';
import { Queue } from 'bullmq';
import type { DataSource } from 'typeorm';
import { DEAD_LETTER_QUEUE, EVENT_BATCH_JOB, EVENTS_QUEUE, EventBatchJobData } from '../../../src/queue/queue-names';
import type { DeadLetter } from '../../../src/dead-letters/dead-letter';
import { createLogger } from '../../../src/shared/logger';

export const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
export const silentLogger = () => createLogger({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });

/** A queue prefix no other test uses. */
export function uniquePrefix(tag = 'w'): string {
  return `test-${tag}-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
}

export function openRedis(): IORedis {
  return new IORedis(REDIS_URL, { maxRetriesPerRequest: null });
}

/** Adds jobs the way the publisher does: EventBatchJobData, addBulk, removed once completed. */
export async function publish(
  connection: IORedis,
  prefix: string,
  jobs: EventBatchJobData[],
  jobIdPrefix?: string,
): Promise<string[]> {
  const queue = new Queue(EVENTS_QUEUE, { connection, prefix });
  const ids: string[] = [];
  try {
    for (let i = 0; i < jobs.length; i += 500) {
      const added = await queue.addBulk(
        jobs.slice(i, i + 500).map((data, j) => ({
          name: EVENT_BATCH_JOB,
          data,
          opts: { removeOnComplete: true, ...(jobIdPrefix ? { jobId: `${jobIdPrefix}-${i + j}` } : {}) },
        })),
      );
      ids.push(...added.map((job) => String(job.id)));
    }
  } finally {
    await queue.close();
  }
  return ids;
}

/** Every dead letter on the prefix's dead-letter queue. */
export async function readDeadLetters(connection: IORedis, prefix: string): Promise<DeadLetter[]> {
  const queue = new Queue(DEAD_LETTER_QUEUE, { connection, prefix });
  try {
    const jobs = await queue.getJobs(['wait', 'delayed', 'completed', 'failed'], 0, -1, true);
    return jobs.map((job) => job.data as DeadLetter);
  } finally {
    await queue.close();
  }
}

export async function queueCounts(connection: IORedis, prefix: string): Promise<Record<string, number>> {
  const queue = new Queue(EVENTS_QUEUE, { connection, prefix });
  try {
    return await queue.getJobCounts('wait', 'active', 'delayed', 'completed', 'failed', 'prioritized');
  } finally {
    await queue.close();
  }
}

/** Events held by jobs still waiting on the events queue. */
export async function queuedEvents(connection: IORedis, prefix: string): Promise<number> {
  const queue = new Queue(EVENTS_QUEUE, { connection, prefix });
  try {
    const jobs = await queue.getJobs(['wait', 'delayed', 'prioritized'], 0, -1);
    return jobs.reduce((n, job) => n + ((job.data as EventBatchJobData).events?.length ?? 0), 0);
  } finally {
    await queue.close();
  }
}

/** Deletes every key of the prefix. */
export async function dropPrefix(connection: IORedis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await connection.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length) await connection.del(...keys);
  } while (cursor !== '0');
}

export async function countRows(ds: DataSource, table: string): Promise<number> {
  const [row] = await ds.query(`SELECT COUNT(*) AS n FROM ${table}`);
  return Number(row.n);
}

/** Polls `check` until it returns true; throws with `what` at the timeout. */
export async function waitFor(
  what: string,
  check: () => Promise<boolean> | boolean,
  timeoutMs = 30_000,
  everyMs = 100,
): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
