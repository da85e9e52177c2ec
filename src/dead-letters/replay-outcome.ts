/**
 * What became of a replay (`dlq replay --wait`): waits for the jobs it added to finish, then finds
 * the events the worker dead-lettered again.
 */
import type { Queue } from 'bullmq';
import { deadLetteredAt } from './dead-letter-filter';
import type { DeadLetterRepository } from './dead-letter.repository';

const POLL_MS = 250;
/** After the jobs finish, how long the count of new dead letters must stay still to be final. */
const SETTLE_MS = 500;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export interface ReplayOutcome {
  /** The replay's jobs still unfinished at the deadline. */
  pending: number;
  /** The dead letters written again for its events. */
  failedAgainIds: string[];
}

/** Jobs removed on completion read as 'unknown': finished as well. */
async function waitForJobs(
  queueOf: (jobId: string) => Queue,
  jobIds: readonly string[],
  deadline: number,
): Promise<number> {
  let pending = jobIds;
  while (pending.length > 0 && Date.now() < deadline) {
    const states = await Promise.all(pending.map((id) => queueOf(id).getJobState(id)));
    pending = pending.filter((_, i) => !['completed', 'failed', 'unknown'].includes(states[i]));
    if (pending.length > 0) await sleep(POLL_MS);
  }
  return pending.length;
}

/**
 * A new dead letter for a replayed event comes from one of our jobs (its source), or, should a
 * writer record the source differently, carries a replayed eventId, a raised replay count and a
 * time after the replay began.
 */
async function findFailedAgain(
  repository: DeadLetterRepository,
  jobIds: Set<string>,
  eventIds: Set<string>,
  startedMs: number,
): Promise<string[]> {
  const found: string[] = [];
  for await (const page of repository.scan()) {
    for (const dl of page) {
      const bySource = jobIds.has(dl.source?.jobId);
      const byEvent =
        dl.eventId !== null &&
        eventIds.has(dl.eventId.toLowerCase()) &&
        dl.replayCount > 0 &&
        deadLetteredAt(dl) >= startedMs - 1_000;
      if (bySource || byEvent) found.push(dl.id);
    }
  }
  return found;
}

/** A replay that was sent: its jobs, the events they carry, and when it began. */
export interface SentReplay {
  jobIds: readonly string[];
  eventIds: Set<string>;
  startedMs: number;
}

/** Waits until `deadline` for the replay's jobs, each on the queue `queueOf` names. */
export async function waitForOutcome(
  repository: DeadLetterRepository,
  queueOf: (jobId: string) => Queue,
  replay: SentReplay,
  deadline: number,
): Promise<ReplayOutcome> {
  const { jobIds, eventIds, startedMs } = replay;
  const pending = await waitForJobs(queueOf, jobIds, deadline);
  const ours = new Set(jobIds);
  // A worker may write a dead letter just after the job's state turns final: wait for a still count.
  let found = await findFailedAgain(repository, ours, eventIds, startedMs);
  for (;;) {
    await sleep(SETTLE_MS);
    const again = await findFailedAgain(repository, ours, eventIds, startedMs);
    const still = again.length === found.length;
    found = again;
    if (still || Date.now() >= deadline) break;
  }
  return { pending, failedAgainIds: found };
}
