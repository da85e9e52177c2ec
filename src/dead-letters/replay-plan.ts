/**
 * What a replay does with the entries it has claimed, a batch at a time: the events it sends, in
 * jobs the worker reads (under its job limit, `maxJobBytes`, past which the worker dead-letters a
 * job whole without reading it); the dead letters it keeps as they are, with the reason; and the
 * events of a raw job (raw-job-letters.ts) that no job can carry, which it dead-letters on their own.
 */
import type { Violation } from '../contracts';
import { DEFAULT_LIMITS } from '../contracts/limits';
import type { DeadLetter } from './dead-letter';
import type { ClaimedLetter, DeadLetterSummary } from './dead-letter-codec';
import { buildDeadLetter } from './dead-letter-writer';
import type { DeadLetterRepository } from './dead-letter.repository';
import { hasTextEvent, isRawJobLetter, splitRawJob, SplitEvent } from './raw-job-letters';

/** A job's data around its events: `{"v":1,"events":[` ... `],"replayCounts":[` ... `]}` (encodeBatch). */
const JOB_FRAME_BYTES = Buffer.byteLength('{"v":1,"events":[],"replayCounts":[]}');

/** Digits of a replay count (a count past 99,999 is counted as 16 digits: more than it takes). */
function digits(n: number): number {
  return n < 10 ? 1 : n < 100 ? 2 : n < 1_000 ? 3 : n < 10_000 ? 4 : n < 100_000 ? 5 : 16;
}

/** What an event adds to a job's data: its bytes, its replay count once raised, and a comma after each. */
function eventCost(letter: ClaimedLetter): number {
  return letter.eventJson.length + digits(letter.replayCount + 1) + 2;
}

function fits(letter: ClaimedLetter, maxJobBytes: number): boolean {
  return JOB_FRAME_BYTES + eventCost(letter) <= maxJobBytes;
}

export interface ReplayPlan {
  /** Events to send, each with the id of the dead letter it comes from. */
  send: ClaimedLetter[];
  /** Dead letters left as they are (their claims are given up), and why. */
  keep: Array<{ id: string; reason: string }>;
  /** New dead letters: events of a raw job that no job can carry. */
  deadLetter: DeadLetter[];
  /** Dead letters to remove once `send` is queued and `deadLetter` written. */
  remove: string[];
}

export interface PlanContext {
  repository: DeadLetterRepository;
  /** The deployment's queue prefix: part of a new dead letter's id. */
  prefix: string;
  maxJobBytes: number;
}

/** The plan for claimed `letters`: only those whose event is text are read again (to tell raw jobs). */
export async function planReplay(ctx: PlanContext, letters: readonly ClaimedLetter[]): Promise<ReplayPlan> {
  const plan: ReplayPlan = { send: [], keep: [], deadLetter: [], remove: [] };
  const texts = letters.filter(hasTextEvent);
  const rawJobs =
    texts.length === 0
      ? new Map<string, DeadLetterSummary>()
      : new Map((await ctx.repository.summaries(texts.map((l) => l.id))).filter(isRawJobLetter).map((s) => [s.id, s]));
  for (const letter of letters) {
    const rawJob = rawJobs.get(letter.id);
    if (rawJob) {
      planRawJob(ctx, plan, letter, rawJob);
    } else if (fits(letter, ctx.maxJobBytes)) {
      plan.send.push(letter);
      plan.remove.push(letter.id);
    } else {
      plan.keep.push({
        id: letter.id,
        reason: `its event is ${letter.eventJson.length} bytes of JSON: no job under the ${ctx.maxJobBytes}-byte job limit (maxJobBytes) can carry it; kept as it is`,
      });
    }
  }
  return plan;
}

function planRawJob(ctx: PlanContext, plan: ReplayPlan, letter: ClaimedLetter, rawJob: DeadLetterSummary): void {
  const split = splitRawJob(letter);
  if ('kept' in split) {
    plan.keep.push({ id: letter.id, reason: split.kept });
    return;
  }
  for (const e of split.events) {
    if (fits(e.letter, ctx.maxJobBytes)) plan.send.push(e.letter);
    else plan.deadLetter.push(oversized(ctx, e, rawJob));
  }
  plan.remove.push(letter.id);
}

/** The dead letter of an event split out of a raw job that no job can carry (over maxEventBytes too). */
function oversized(ctx: PlanContext, e: SplitEvent, rawJob: DeadLetterSummary): DeadLetter {
  const message = `event ${e.index} of the job held by dead letter ${rawJob.id} is ${e.letter.eventJson.length} bytes of JSON: no job under the ${ctx.maxJobBytes}-byte job limit (maxJobBytes) can carry it, so it is dead-lettered on its own`;
  const violations: Violation[] = [
    { path: '', message: `must be at most ${DEFAULT_LIMITS.maxEventBytes} bytes of UTF-8 JSON` },
  ];
  const now = new Date();
  const first = Date.parse(rawJob.firstFailedAt);
  return buildDeadLetter(
    'invalid',
    e.event,
    { message, violations },
    {
      queue: rawJob.source.queue,
      prefix: ctx.prefix,
      jobId: rawJob.source.jobId,
      index: e.index,
      attempts: rawJob.attempts,
      firstFailedAt: Number.isNaN(first) ? now : new Date(first),
      lastFailedAt: now,
      workerVersion: rawJob.workerVersion,
      replayCount: e.letter.replayCount + 1,
    },
  );
}

/** `letters` cut, in order, into jobs whose data stays within `maxJobBytes` (each holds at least one). */
export function packJobs(letters: readonly ClaimedLetter[], maxJobBytes: number): ClaimedLetter[][] {
  const jobs: ClaimedLetter[][] = [];
  let job: ClaimedLetter[] = [];
  let bytes = JOB_FRAME_BYTES;
  for (const letter of letters) {
    const cost = eventCost(letter);
    if (job.length > 0 && bytes + cost > maxJobBytes) {
      jobs.push(job);
      job = [];
      bytes = JOB_FRAME_BYTES;
    }
    job.push(letter);
    bytes += cost;
  }
  if (job.length > 0) jobs.push(job);
  return jobs;
}
