/**
 * The mixed scenario of `npm run bench:e2e`: one long plan (10,000 steps; its first
 * ~20k events stored beforehand through the store) trickles `longRate` events/s among `shortRate`
 * events/s of short 10-event plans (200 in flight at a time, round-robin), for a fixed window,
 * through the real publisher and one `plan-ledger worker` on PostgreSQL.
 * Commit lag = the job's `finishedOn` (acknowledged after the commit) - the event's `occurredAt`
 * (stamped by publish()), as in `latencyAtRate`; events of the first `warmupSeconds` are left out.
 */
import { pushAll } from '../../src/shared/arrays';
import { Queue } from 'bullmq';
import type { PlanEventInput } from '../../src/contracts';
import { EVENTS_QUEUE } from '../../src/queue/queue-names';
import { createMigratedDb } from '../../test/support/databases';
import { startWorkerChild, waitCommitted } from './e2e-processes';
import { BenchContext, expectAccepted, newPrefix, newPublisher, obliterate, sleep } from './e2e-scenarios';
import { commitStats, CommitStats } from './e2e-interleaved';
import { persistAll } from './history';
import { round } from './latency';
import { asInput, longPlan, roundRobin } from './plan-shapes';

export interface MixedOptions {
  /** Events of the long plan stored before the window. @defaultValue 20_000 */
  longStored: number;
  longRate: number;
  shortRate: number;
  seconds: number;
  warmupSeconds: number;
  seed: number;
}

export interface LagSummary {
  events: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  maxMs: number;
}

export interface MixedResult {
  longPlanStepCount: number;
  longPlanStoredBefore: number;
  longPlanPreloadSeconds: number;
  longRatePerSec: number;
  shortRatePerSec: number;
  seconds: number;
  warmupSeconds: number;
  published: { long: number; short: number };
  /** Commit lag of every measured event, and of the long plan's events alone. */
  lag: LagSummary;
  lagLongPlan: LagSummary;
  /** From the end of the window to the last commit (backlog the worker still had). */
  drainAfterWindowSeconds: number;
  commits: CommitStats;
  jobs: number;
}

function summary(ms: number[]): LagSummary {
  ms.sort((a, b) => a - b);
  const q = (p: number) => ms[Math.min(ms.length - 1, Math.floor(ms.length * p))] ?? 0;
  return { events: ms.length, p50Ms: q(0.5), p90Ms: q(0.9), p99Ms: q(0.99), maxMs: ms[ms.length - 1] ?? 0 };
}

/** Short plans of 10 events, in groups of 200 plans published round-robin, at least `count` events. */
function shortStream(tag: string, count: number, seed: number): PlanEventInput[] {
  const out: PlanEventInput[] = [];
  for (let g = 0; out.length < count; g++) pushAll(out, roundRobin(tag, 200, seed, g * 200));
  return out.slice(0, count);
}

const TICK_MS = 5;

export async function mixed(ctx: BenchContext, opts: MixedOptions): Promise<MixedResult> {
  const { redis } = ctx;
  const db = await createMigratedDb('postgres', { poolSize: 1 });
  const prefix = newPrefix('mixed');
  const longId = `long-${opts.seed}`;
  const steps = 10_000;
  const long = longPlan(longId, steps);
  const longCount = Math.min(long.length - opts.longStored, Math.ceil(opts.longRate * opts.seconds));
  const shortCount = Math.ceil(opts.shortRate * opts.seconds);
  const longInputs = long.slice(opts.longStored, opts.longStored + longCount).map(asInput);
  const shortInputs = shortStream(`mix${opts.seed}`, shortCount, opts.seed);
  const pub = newPublisher(redis, prefix, { jobOptions: { removeOnComplete: false } });
  let worker: Awaited<ReturnType<typeof startWorkerChild>> | undefined;
  try {
    const preload = await persistAll(db.db.target, long.slice(0, opts.longStored), 2_000);
    worker = await startWorkerChild({
      main: ctx.workerMain,
      env: { DATABASE_URL: db.db.url, REDIS_URL: redis.url, QUEUE_PREFIX: prefix },
    });
    await pub.ready();
    const t0 = Date.now();
    let doneLong = 0;
    let doneShort = 0;
    while (doneLong < longCount || doneShort < shortCount) {
      const elapsed = (Date.now() - t0) / 1000;
      const shortDue = Math.min(shortCount, Math.floor(elapsed * opts.shortRate));
      const longDue = Math.min(longCount, Math.floor(elapsed * opts.longRate));
      while (doneShort < shortDue) expectAccepted(pub.publisher.publish(shortInputs[doneShort++]));
      while (doneLong < longDue) expectAccepted(pub.publisher.publish(longInputs[doneLong++]));
      await sleep(TICK_MS);
    }
    const windowEnd = Date.now();
    await pub.publisher.flush(60_000);
    const committed = await waitCommitted([worker], longCount + shortCount, 1_800_000);
    await sleep(300); // the last acknowledgements
    const queue = new Queue(EVENTS_QUEUE, { connection: { url: redis.url }, prefix });
    const jobs = await queue.getJobs(['completed'], 0, -1);
    await queue.close();
    const all: number[] = [];
    const ofLong: number[] = [];
    for (const job of jobs) {
      for (const e of (job.data as { events: { occurredAt: string; planId: string }[] }).events) {
        const at = Date.parse(e.occurredAt);
        if (at - t0 < opts.warmupSeconds * 1000) continue;
        all.push(job.finishedOn! - at);
        if (e.planId === longId) ofLong.push(job.finishedOn! - at);
      }
    }
    return {
      longPlanStepCount: steps,
      longPlanStoredBefore: opts.longStored,
      longPlanPreloadSeconds: preload.seconds,
      longRatePerSec: opts.longRate,
      shortRatePerSec: opts.shortRate,
      seconds: round((windowEnd - t0) / 1000),
      warmupSeconds: opts.warmupSeconds,
      published: { long: longCount, short: shortCount },
      lag: summary(all),
      lagLongPlan: summary(ofLong),
      drainAfterWindowSeconds: round(Math.max(0, committed.lastCommitAt - windowEnd) / 1000),
      commits: commitStats([worker]),
      jobs: jobs.length,
    };
  } finally {
    await worker?.stop('SIGKILL');
    await pub.close();
    await obliterate(redis, prefix);
    await db.close();
  }
}
