/**
 * The interleaved scenario of `npm run bench:e2e`: on top of a history of finished
 * plans, `plans` fresh plans of exactly 10 events each, published round-robin (event 0 of every
 * plan, then event 1 of every plan, ...) through the real PlanEventPublisher to one or more real
 * `plan-ledger worker` processes. With several workers, one plan's events commit out of order.
 * Throughput = events / (last commit - first publish()), as in `sustained`; the end state is
 * checked (every plan completed with its 3 steps).
 */
import * as fs from 'node:fs';
import type { DataSource } from 'typeorm';
import type { PlanEventInput } from '../../src/contracts';
import type { TestDb } from '../../test/support/databases';
import {
  CpuMeter,
  sampleRss,
  startWorkerChild,
  summariseProfile,
  tempDir,
  waitCommitted,
  Child,
  ProfileSummary,
} from './e2e-processes';
import { BenchContext, newPrefix, newPublisher, obliterate, publishStream } from './e2e-scenarios';
import { HistoryResult, preloadHistory } from './history';
import { mb, round } from './latency';
import { roundRobin } from './plan-shapes';
import {
  createMeasuredDb,
  forceCheckpoint,
  settledSnapshot,
  walPosition,
  writesBetween,
  WritesReport,
} from './pg-writes';

export interface CommitStats {
  batches: number;
  eventsPerBatch: number;
  plansPerBatch: number;
  commitMsP50: number;
  commitMsP99: number;
  commitMsMax: number;
}

export interface InterleavedResult {
  database: TestDb;
  workers: number;
  plans: number;
  eventsPerPlan: number;
  events: number;
  history: HistoryResult;
  seconds: number;
  eventsPerSec: number;
  commits: CommitStats;
  workerRssPeakMb: number;
  cpuUsPerEvent: Record<string, number>;
  busyCores: number;
  /** PostgreSQL only: rows and WAL written by the timed window. */
  writes?: WritesReport;
  /** End state: plans completed with 3 completed steps, and events stored, against the expected. */
  check: { plansCompleted: number; stepsCompleted: number; eventsStored: number; ok: boolean };
  profile?: ProfileSummary;
}

/** Transactions, their size and duration, from the workers' `batch committed` lines. */
export function commitStats(workers: Child[], from = 0): CommitStats {
  const lines = workers.flatMap((w) =>
    w.lines.filter((l) => l.msg === 'batch committed' && Date.parse(l.time as string) >= from),
  );
  const ms = lines.map((l) => l.durationMs as number).sort((a, b) => a - b);
  const q = (p: number) => ms[Math.min(ms.length - 1, Math.floor(ms.length * p))] ?? 0;
  const sum = (key: string) => lines.reduce((n, l) => n + (l[key] as number), 0);
  const n = lines.length || 1;
  return {
    batches: lines.length,
    eventsPerBatch: Math.round(sum('events') / n),
    plansPerBatch: Math.round(sum('plans') / n),
    commitMsP50: q(0.5),
    commitMsP99: q(0.99),
    commitMsMax: ms[ms.length - 1] ?? 0,
  };
}

/** Chunks of 10k inputs, the shape publishStream takes pregenerated. */
export function chunked(inputs: PlanEventInput[], size = 10_000): PlanEventInput[][] {
  const out: PlanEventInput[][] = [];
  for (let i = 0; i < inputs.length; i += size) out.push(inputs.slice(i, i + size));
  return out;
}

export interface InterleavedOptions {
  plans: number;
  history: number;
  workers?: number;
  seed: number;
  /** V8 CPU profile of the (first) worker, summarised by package and function. */
  profile?: boolean;
}

export async function interleaved(
  ctx: BenchContext,
  database: TestDb,
  opts: InterleavedOptions,
): Promise<InterleavedResult> {
  const { redis } = ctx;
  const db = await createMeasuredDb(database);
  const prefix = newPrefix(`ilv-${database}`);
  const tag = `ilv${opts.seed}`;
  const inputs = roundRobin(tag, opts.plans, opts.seed);
  const count = inputs.length;
  const workers: Child[] = [];
  let profileDir: string | undefined;
  const pub = newPublisher(redis, prefix);
  try {
    const history = await preloadHistory(db.db.target, opts.history, opts.seed);
    const pg = database === 'postgres';
    if (pg) await forceCheckpoint(db.ds);
    const before = pg ? await settledSnapshot(db.ds) : undefined;
    const env = { DATABASE_URL: db.db.url, REDIS_URL: redis.url, QUEUE_PREFIX: prefix };
    profileDir = opts.profile ? tempDir('prof') : undefined;
    const started = await Promise.all(
      Array.from({ length: opts.workers ?? 1 }, (_, i) =>
        startWorkerChild({ main: ctx.workerMain, env, cpuProfileDir: i === 0 ? profileDir : undefined }),
      ),
    );
    for (const w of started) workers.push(w);
    const rss = sampleRss(workers[0].pid);
    await pub.ready();
    const cpu = new CpuMeter({ workers: workers.map((w) => w.pid), redisPort: redis.port });
    const t0 = Date.now();
    await publishStream(pub.publisher, count, opts.seed, undefined, chunked(inputs));
    await pub.publisher.flush(60_000);
    const committed = await waitCommitted(workers, count, 1_800_000);
    const walEnd = pg ? await walPosition(db.ds) : undefined;
    const seconds = (committed.lastCommitAt - t0) / 1000;
    const cpuUse = cpu.stop(count);
    const rssPeak = rss.stop().peakBytes;
    await Promise.all(workers.map((w) => w.stop()));
    const writes = before ? writesBetween(before, await settledSnapshot(db.ds), count, opts.plans, walEnd) : undefined;
    return {
      database,
      workers: workers.length,
      plans: opts.plans,
      eventsPerPlan: 10,
      events: count,
      history,
      seconds: round(seconds),
      eventsPerSec: Math.round(count / seconds),
      commits: commitStats(workers),
      workerRssPeakMb: mb(rssPeak),
      cpuUsPerEvent: cpuUse.usPerEvent,
      busyCores: cpuUse.busyCores,
      writes,
      check: await endState(db.ds, tag, opts.plans, history.events + count),
      profile: profileDir ? summariseProfile(profileDir) : undefined,
    };
  } finally {
    if (profileDir && !process.env.KEEP_PROFILE) fs.rmSync(profileDir, { recursive: true, force: true });
    await Promise.all(workers.map((w) => w.stop('SIGKILL')));
    await pub.close();
    await obliterate(redis, prefix);
    await db.close();
  }
}

/** Every plan of the scenario completed with its 3 steps, and every event stored once. */
export async function endState(
  ds: DataSource,
  tag: string,
  plans: number,
  expectedEvents: number,
): Promise<InterleavedResult['check']> {
  const like = `${tag}-%`;
  const [{ n: done }] = await ds.query(
    `SELECT COUNT(*) AS n FROM execution_plans WHERE id LIKE '${like}' AND status = 'completed' AND completed_steps = 3`,
  );
  const [{ n: steps }] = await ds.query(
    `SELECT COUNT(*) AS n FROM plan_steps WHERE plan_id LIKE '${like}' AND status = 'completed'`,
  );
  const [{ n: stored }] = await ds.query('SELECT COUNT(*) AS n FROM plan_events');
  const check = { plansCompleted: Number(done), stepsCompleted: Number(steps), eventsStored: Number(stored) };
  return {
    ...check,
    ok: check.plansCompleted === plans && check.stepsCompleted === plans * 3 && check.eventsStored === expectedEvents,
  };
}
