/**
 * Puts dead-lettered events back on EVENTS_QUEUE. Safe to run twice, at once, and safe to kill:
 * - a replay claims each dead letter before sending it (a field of the entry's job hash, void
 *   ten minutes later): a second replay running at the same time skips what the first claimed, so
 *   an event is never sent twice and a failing one never comes back as two dead letters;
 * - each event travels with its original `eventId`, so the database stores it at most once, and
 *   as the bytes it was stored as (encodeDeadLetter's layout): a replay parses no record and
 *   encodes no event again, so what the executor sent is what the worker reads;
 * - a dead letter is removed only after the job carrying its event was added. A crash in between
 *   leaves the event both queued and dead-lettered: the next replay is a harmless duplicate. The
 *   reverse order could lose an event, so it is never done;
 * - jobs stay under the worker's job limit (replay-plan.ts), and a dead letter holding a whole job
 *   the worker did not read goes back as that job's events (raw-job-letters.ts).
 */
import { randomUUID } from 'node:crypto';
import type { JobsOptions, Queue } from 'bullmq';
import { DEFAULT_LIMITS } from '../contracts/limits';
import { pushAll } from '../shared/arrays';
import type { Logger } from '../shared/logger';
import { encodeBatch } from '../queue/batch-encoding';
import { EVENT_BATCH_JOB } from '../queue/queue-names';
import { shardOfPlan } from '../queue/queue-shards';
import type { ClaimedLetter } from './dead-letter-codec';
import { addRawJobs, RawJobData } from '../queue/raw-batch-queue';
import { writeDeadLetters } from './dead-letter-writer';
import type { DeadLetterRepository } from './dead-letter.repository';
import { DEFAULT_REPLAY_BATCH } from './replay-defaults';
import { waitForOutcome } from './replay-outcome';
import { packJobs, planReplay, ReplayPlan } from './replay-plan';

/** Answers "which of these events are stored already"; `PlanEventStore` implements it. */
export interface StoredEventLookup {
  storedEventIds(eventIds: string[]): Promise<Set<string>>;
}

export interface ReplayProgress {
  /** Dead letters gone through so far (replayed, skipped by the filter, or found gone). */
  done: number;
  total: number;
}

/** One page of candidates: those that matched (summaries, or ids alone), out of how many entries were looked at. */
export interface ReplayPage<T extends ReplayRef = ReplayRef> {
  matched: T[];
  scanned: number;
}

/** What a replay goes through: pages of candidates, read as it goes, and how many entries in all. */
export interface ReplaySource {
  total: number;
  pages: AsyncIterable<ReplayPage>;
}

export interface ReplayOptions {
  /** Count what would be replayed (and what is stored already) and send nothing. @defaultValue false */
  dryRun?: boolean;
  /** Events per EVENTS_QUEUE job, i.e. per Redis round trip. @defaultValue 500 (the publisher's job size) */
  batch?: number;
  /** At most this many events per second, so a big replay does not starve live traffic. @defaultValue unlimited */
  rate?: number;
  /**
   * Wait up to this many ms for the replayed jobs to finish, then count the events that were
   * dead-lettered again. @defaultValue undefined: do not wait (`failedAgain` is then null)
   */
  waitMs?: number;
  /** Called after every batch. */
  onProgress?: (progress: ReplayProgress) => void;
  /**
   * Largest job the replay adds, in UTF-8 bytes of its data: the worker's job limit, past which it
   * dead-letters a job whole without reading it. @defaultValue DEFAULT_LIMITS.maxJobBytes
   */
  maxJobBytes?: number;
}

export interface ReplaySummary {
  dryRun: boolean;
  /** Dead letters the selection matched. */
  selected: number;
  /** Events put back on the queue (in a dry run: that would be). */
  replayed: number;
  /** Of those, events whose eventId was in plan_events before the replay: no-ops. Null if not checked. */
  alreadyStored: number | null;
  /** Selected, but removed or claimed by someone else (another replay or purge) before this one got to them. */
  vanished: number;
  /** The EVENTS_QUEUE jobs created. */
  jobIds: string[];
  /** Events dead-lettered again by the worker (needs `waitMs`); null when not waited for. */
  failedAgain: number | null;
  /** Ids of those new dead letters. */
  failedAgainIds: string[];
  /** Replayed jobs still unfinished when the wait timed out. */
  pending: number;
  /**
   * Selected dead letters not sent, and why: kept as they are (a raw job text that is not a job's
   * JSON, an event no job can carry), or events split out of a raw job and dead-lettered on their
   * own by the replay (`id`: the new dead letter).
   */
  kept: Array<{ id: string; reason: string }>;
  durationMs: number;
}

export interface ReplayContext {
  repository: DeadLetterRepository;
  /** DEAD_LETTER_QUEUE, where the replay writes what it dead-letters itself. */
  deadLetters: Queue;
  events: Queue;
  /** The events queue of each shard (QUEUE_SHARDS above 1), shard 0 first. @defaultValue [events] */
  eventShards?: Queue[];
  storedEvents?: StoredEventLookup;
  jobOptions: JobsOptions;
  logger: Logger;
}

/**
 * What replay needs of a selected dead letter before fetching it again, batch by batch. `eventId`
 * is read only by a dry run (its "already stored" count); a replay reads it from the entry itself.
 */
export interface ReplayRef {
  id: string;
  eventId: string | null;
}

export { DEFAULT_REPLAY_BATCH };
/**
 * Batches a replay (or dry run) works on at once, without --rate. Three, with short script calls
 * (WRITE_PAGE_SIZE): the most that met both bench:dlq targets (a replay within 2x its dry run, a
 * live queue beside it above half its throughput) in every run; a fourth took the live queue below
 * half in some (BENCHMARKS.md, "Dead letters", 2026-11-25 session 3).
 */
const REPLAY_BATCHES_IN_FLIGHT = 3;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Only UUID-shaped ids can be in plan_events (and PostgreSQL rejects anything else in a uuid compare). */
function lookupIds(refs: ReplayRef[]): string[] {
  return [
    ...new Set(
      refs
        .map((r) => r.eventId)
        .filter((id): id is string => typeof id === 'string' && UUID.test(id))
        .map((id) => id.toLowerCase()),
    ),
  ];
}

async function countStored(ctx: ReplayContext, refs: ReplayRef[]): Promise<number> {
  const ids = lookupIds(refs);
  if (!ctx.storedEvents || ids.length === 0) return 0;
  const stored = await ctx.storedEvents.storedEventIds(ids);
  return refs.filter((r) => r.eventId !== null && stored.has(r.eventId.toLowerCase())).length;
}

/**
 * Adds the stored ones among `refs` to the summary. Batches run concurrently: the count is added
 * after the lookup settles (`x += await f()` would read x before awaiting, and a batch settling
 * later would overwrite an earlier one's count).
 */
async function addStored(ctx: ReplayContext, summary: ReplaySummary, refs: ReplayRef[]): Promise<void> {
  if (summary.alreadyStored === null) return;
  const stored = await countStored(ctx, refs);
  summary.alreadyStored += stored;
}

/**
 * Cuts the matched entries of the source's pages into batches of `size`, as they are read. Each
 * batch says how many entries it accounts for: its own, plus the unmatched ones of the pages
 * finished before it (for progress).
 */
async function* batches(source: ReplaySource, size: number): AsyncGenerator<{ refs: ReplayRef[]; scanned: number }> {
  let pending: ReplayRef[] = [];
  let skipped = 0;
  for await (const page of source.pages) {
    for (const dl of page.matched) {
      pending.push({ id: dl.id, eventId: dl.eventId });
      if (pending.length >= size) {
        yield { refs: pending, scanned: pending.length + skipped };
        pending = [];
        skipped = 0;
      }
    }
    skipped += page.scanned - page.matched.length;
  }
  if (pending.length > 0 || skipped > 0) yield { refs: pending, scanned: pending.length + skipped };
}

/** One replay's state, shared by its batches in flight. */
interface Run {
  ctx: ReplayContext;
  opts: ReplayOptions;
  summary: ReplaySummary;
  started: number;
  /** One token per run: its claims are its own (another replay skips what it holds). */
  token: string;
  maxJobBytes: number;
  /** The replayed events' ids, to find those dead-lettered again: only when waiting for the outcome. */
  replayedEventIds: Set<string> | undefined;
  /** The queue each replay job went to (its shard's). */
  jobQueues: Map<string, Queue>;
}

function newRun(ctx: ReplayContext, opts: ReplayOptions): Run {
  const summary: ReplaySummary = {
    dryRun: opts.dryRun ?? false,
    selected: 0,
    replayed: 0,
    alreadyStored: ctx.storedEvents ? 0 : null,
    vanished: 0,
    jobIds: [],
    failedAgain: null,
    failedAgainIds: [],
    pending: 0,
    kept: [],
    durationMs: 0,
  };
  const replayedEventIds = opts.waitMs !== undefined ? new Set<string>() : undefined;
  return {
    ctx,
    opts,
    summary,
    started: Date.now(),
    token: `replay-${randomUUID()}`,
    maxJobBytes: opts.maxJobBytes ?? DEFAULT_LIMITS.maxJobBytes,
    replayedEventIds,
    jobQueues: new Map(),
  };
}

export async function replayDeadLetters(
  ctx: ReplayContext,
  source: ReplaySource,
  opts: ReplayOptions = {},
): Promise<ReplaySummary> {
  const run = newRun(ctx, opts);
  const { summary } = run;
  try {
    await runBatches(run, source);
  } catch (err) {
    // Say where it stopped: what was sent is queued, the rest is still dead-lettered, so rerunning is safe.
    if (summary.dryRun) throw err;
    const message = `replay stopped after ${summary.replayed} of ${summary.selected}+ events (those are queued, the rest are still dead letters; rerun to continue): ${(err as Error).message}`;
    throw Object.assign(new Error(message), { cause: err });
  }
  if (opts.waitMs !== undefined && !summary.dryRun && summary.jobIds.length > 0) {
    const outcome = await waitForOutcome(
      ctx.repository,
      (id) => run.jobQueues.get(id) ?? ctx.events,
      { jobIds: summary.jobIds, eventIds: run.replayedEventIds!, startedMs: run.started },
      run.started + opts.waitMs,
    );
    summary.pending = outcome.pending;
    summary.failedAgain = outcome.failedAgainIds.length;
    summary.failedAgainIds = outcome.failedAgainIds;
  } else if (opts.waitMs !== undefined && !summary.dryRun) {
    summary.failedAgain = 0;
  }
  summary.durationMs = Date.now() - run.started;
  const { jobIds, failedAgainIds: _ids, kept, ...line } = summary;
  ctx.logger.info(
    { ...line, jobs: jobIds.length, kept: kept.length },
    summary.dryRun ? 'dead-letter replay dry run' : 'dead letters replayed',
  );
  return summary;
}

/**
 * Three batches at a time (one with --rate): while Redis adds and removes some, this process reads
 * and encodes another, instead of each side waiting for the other. Each batch keeps its own order
 * (sent, then removed); events of two batches may reach the queue in either order, which the store
 * does not mind (it orders a plan's events by seq). Returns once none is in flight.
 */
async function runBatches(run: Run, source: ReplaySource): Promise<void> {
  const { opts, summary } = run;
  const batch = Math.max(1, Math.min(opts.batch ?? DEFAULT_REPLAY_BATCH, opts.rate ? Math.ceil(opts.rate) : Infinity));
  const limit = opts.rate ? 1 : REPLAY_BATCHES_IN_FLIGHT;
  const inFlight = new Set<Promise<void>>();
  let failure: unknown;
  let done = 0;
  const settle = async (): Promise<void> => {
    await Promise.race(inFlight);
    if (failure !== undefined) throw failure;
  };
  try {
    for await (const { refs, scanned } of batches(source, batch)) {
      summary.selected += refs.length;
      const chunk = (refs.length > 0 ? replayChunk(run, refs) : Promise.resolve()).then(
        () => opts.onProgress?.({ done: (done = Math.min(source.total, done + scanned)), total: source.total }),
        (err) => void (failure ??= err),
      );
      const tracked: Promise<void> = chunk.finally(() => inFlight.delete(tracked));
      inFlight.add(tracked);
      while (inFlight.size >= limit) await settle();
      if (failure !== undefined) throw failure;
      if (opts.rate && !summary.dryRun)
        await sleep(Math.max(0, (summary.replayed / opts.rate) * 1000 - (Date.now() - run.started)));
    }
    while (inFlight.size > 0) await settle();
    if (failure !== undefined) throw failure;
  } finally {
    // nothing may still be sending when the summary is reported
    await Promise.allSettled(inFlight);
  }
}

async function replayChunk(run: Run, chunk: ReplayRef[]): Promise<void> {
  const { ctx, summary } = run;
  if (summary.dryRun) {
    summary.replayed += chunk.length;
    await addStored(ctx, summary, chunk);
    return;
  }
  const letters = await ctx.repository.claim(
    chunk.map((r) => r.id),
    run.token,
  );
  summary.vanished += chunk.length - letters.length;
  if (letters.length === 0) return;
  const plan = await planReplay(
    { repository: ctx.repository, prefix: String(ctx.events.opts.prefix ?? 'bull'), maxJobBytes: run.maxJobBytes },
    letters,
  );
  // counted before sending: afterwards the worker may store them and all would look like no-ops
  await addStored(ctx, summary, plan.send);
  pushAll(summary.jobIds, await sendPlan(run, plan));
  summary.replayed += plan.send.length;
  for (const k of plan.keep) summary.kept.push(k);
  for (const dl of plan.deadLetter) summary.kept.push({ id: dl.id, reason: dl.error.message });
  if (run.replayedEventIds)
    for (const dl of plan.send) if (dl.eventId) run.replayedEventIds.add(dl.eventId.toLowerCase());
}

/**
 * The plan's jobs in one atomic add, the events no job can carry dead-lettered, then (only then)
 * the dead letters sent go, and the kept ones are released. Returns the jobs' ids.
 */
async function sendPlan(run: Run, plan: ReplayPlan): Promise<string[]> {
  const { ctx } = run;
  const shards = ctx.eventShards && ctx.eventShards.length > 1 ? ctx.eventShards : [ctx.events];
  const jobIds: string[] = [];
  // each event to the queue of its plan's shard, so a plan's events stay on one queue
  for (const [shard, letters] of byShard(plan.send, shards.length)) {
    const jobs = packJobs(letters, run.maxJobBytes).map((group) => ({
      name: EVENT_BATCH_JOB,
      // EventBatchJobData, laid out from the events' stored bytes: nothing parsed or encoded again
      data: new RawJobData(
        encodeBatch(
          group.map((dl) => dl.eventJson),
          group.map((dl) => dl.replayCount + 1),
        ),
      ),
      opts: { ...ctx.jobOptions, jobId: `replay-${randomUUID()}` },
    }));
    const added = jobs.length > 0 ? await addRawJobs(shards[shard], jobs) : [];
    for (const id of added) run.jobQueues.set(id, shards[shard]);
    pushAll(jobIds, added);
  }
  await writeDeadLetters(ctx.deadLetters, plan.deadLetter);
  if (plan.remove.length > 0) await ctx.repository.remove(plan.remove);
  if (plan.keep.length > 0)
    await ctx.repository.release(
      plan.keep.map((k) => k.id),
      run.token,
    );
  return jobIds;
}

/** Letters by the shard of their event's plan id (all on shard 0 with one shard); an event without one: shard 0. */
function byShard(letters: readonly ClaimedLetter[], shards: number): Map<number, ClaimedLetter[]> {
  if (shards <= 1) return new Map([[0, [...letters]]]);
  const groups = new Map<number, ClaimedLetter[]>();
  for (const letter of letters) {
    let shard = 0;
    try {
      const planId = (JSON.parse(letter.eventJson.toString('utf8')) as { planId?: unknown } | null)?.planId;
      if (typeof planId === 'string') shard = shardOfPlan(planId, shards);
    } catch {
      // not JSON: the worker dead-letters it again, from shard 0
    }
    const group = groups.get(shard);
    if (group) group.push(letter);
    else groups.set(shard, [letter]);
  }
  return groups;
}
