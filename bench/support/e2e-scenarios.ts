/**
 * Scenarios of `npm run bench:e2e`. Every run uses its own Redis prefix on the benchmark's own
 * redis-server and its own freshly migrated database (PostgreSQL schema or SQLite file), so runs
 * never see each other's rows or jobs. The worker under test is the real `plan-ledger worker`
 * process; the publisher is the real PlanEventPublisher, in this process.
 */
import * as fs from 'node:fs';
import { randomBytes } from 'node:crypto';
import { Queue } from 'bullmq';
import type { DataSource } from 'typeorm';
import IORedis from 'ioredis';
import pino from 'pino';
import type { PlanEventInput } from '../../src/contracts';
import { PlanEventPublisher, PublisherOptions } from '../../src/publisher';
import { EVENTS_QUEUE } from '../../src/queue/queue-names';
import { queueShards as shardsOf } from '../../src/queue/queue-shards';
import { createRedis } from '../../src/queue/connect-redis';
import { parseClusterNodes } from '../../src/config/redis-cluster-nodes';
import { createMigratedDb, TestDb } from '../../test/support/databases';
import { exactlyEvents } from '../../test/support/event-factory';
import type { RedisProcess } from '../../test/publisher/support/redis-process';
import type { RedisCluster } from '../../test/support/redis-cluster';
import { mb, round } from './latency';
import {
  CpuMeter,
  rssBytes,
  sampleRss,
  startBaselineChild,
  startWorkerChild,
  summariseProfile,
  tempDir,
  waitCommitted,
  ProfileSummary,
} from './e2e-processes';
import { withPublisherIds } from './plan-shapes';
import { waitReady } from './publish-scenarios';

/** What every scenario shares: the benchmark's redis-server and how to run the worker. */
export interface BenchContext {
  redis: RedisProcess;
  /** Compiled CLI script (see compileWorker); undefined runs the sources. */
  workerMain?: string;
}

export const newPrefix = (tag: string) => `bench-e2e-${tag}-${randomBytes(3).toString('hex')}`;

/** Realistic inputs without stamps (the publisher stamps eventId, seq, occurredAt), from `seed`. */
function inputs(count: number, seed: number): PlanEventInput[] {
  return exactlyEvents(count, { seed }).map(
    ({ eventId: _e, seq: _s, occurredAt: _o, specVersion: _v, ...rest }) => rest as PlanEventInput,
  );
}

function chunkOfInputs(count: number, done: number, seed: number, chunk: number): PlanEventInput[] {
  return inputs(Math.min(10_000, count - done), seed * 1_000 + chunk);
}

/**
 * The chunks publishStream would generate, made ahead so a timed run does not pay for them;
 * `interleaved`: each chunk's plans (~600 in 10k events) published round-robin, one event of each
 * plan in turn, instead of plan by plan.
 */
export function pregenerate(count: number, seed: number, interleaved = false): PlanEventInput[][] {
  const chunks: PlanEventInput[][] = [];
  for (let done = 0, chunk = 0; done < count; chunk++) {
    const part = chunkOfInputs(count, done, seed, chunk);
    chunks.push(interleaved ? roundRobin(part) : part);
    done += part.length;
  }
  return chunks;
}

export function roundRobin(events: PlanEventInput[]): PlanEventInput[] {
  const byPlan = new Map<string, PlanEventInput[]>();
  for (const e of events) {
    const list = byPlan.get(e.planId);
    if (list) list.push(e);
    else byPlan.set(e.planId, [e]);
  }
  const plans = [...byPlan.values()];
  const out: PlanEventInput[] = [];
  for (let i = 0; out.length < events.length; i++) for (const plan of plans) if (i < plan.length) out.push(plan[i]);
  return out;
}

export function newPublisher(redis: RedisProcess, prefix: string, options: PublisherOptions = {}) {
  const journalDir = tempDir('journal');
  const where = options.redisClusterNodes ? {} : { redisUrl: redis.url };
  const publisher = new PlanEventPublisher({
    ...where,
    queuePrefix: prefix,
    journalDir,
    logger: pino({ level: 'silent' }),
    ...options,
  });
  return {
    publisher,
    /** Resolves once the publisher reaches Redis: events published before that go to its journal. */
    ready: () => waitReady(publisher),
    async close() {
      await publisher.close();
      fs.rmSync(journalDir, { recursive: true, force: true });
    },
  };
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Publishes `count` events generated in chunks (a 1M backlog never sits in this heap). Unpaced, it
 * keeps the publisher's memory buffer under 50k events (no spill to its journal); paced, it
 * publishes `ratePerSec` evenly.
 */
export async function publishStream(
  publisher: PlanEventPublisher,
  count: number,
  seed: number,
  ratePerSec?: number,
  pregenerated?: PlanEventInput[][],
): Promise<void> {
  const started = Date.now();
  let done = 0;
  for (let chunk = 0; done < count; chunk++) {
    const batch = pregenerated?.[chunk] ?? chunkOfInputs(count, done, seed, chunk);
    for (let i = 0; i < batch.length;) {
      if (ratePerSec) {
        const allowed = Math.floor(((Date.now() - started) / 1000) * ratePerSec) - done;
        if (allowed <= 0) {
          await sleep(2);
          continue;
        }
        const end = Math.min(batch.length, i + allowed);
        for (; i < end; i++, done++) expectAccepted(publisher.publish(batch[i]));
      } else {
        const end = Math.min(batch.length, i + 1_000);
        for (; i < end; i++, done++) expectAccepted(publisher.publish(batch[i]));
        await (publisher.stats().buffered > 50_000 ? sleep(2) : new Promise((r) => setImmediate(r)));
      }
    }
  }
}

export function expectAccepted(result: ReturnType<PlanEventPublisher['publish']>): void {
  if (!result.ok) throw new Error(`bench event not accepted: ${result.reason} ${JSON.stringify(result.violations)}`);
}

export async function obliterate(
  redis: RedisProcess,
  prefix: string,
  queueName = EVENTS_QUEUE,
  cluster?: RedisCluster,
): Promise<void> {
  const connection = cluster
    ? createRedis({ redisUrl: '', redisClusterNodes: parseClusterNodes(cluster.nodes) }, 'worker')
    : undefined;
  const queue = new Queue(queueName, { connection: connection ?? { url: redis.url }, prefix });
  await queue.obliterate({ force: true }).catch(() => undefined);
  await queue.close();
  await connection?.quit();
}

export interface SustainedResult {
  database: TestDb;
  /** `single` (the bench's redis-server) or `cluster of N masters` (--cluster). */
  redis: string;
  /** QUEUE_SHARDS of the publisher and the workers. */
  queueShards: number;
  /** Events published plan by plan (`grouped`) or round-robin over the plans of each 10k chunk. */
  traffic: 'grouped' | 'interleaved';
  /** On a cluster: the busiest master's share of the masters' CPU (1 when one master does all the work). */
  busiestMasterCpuShare?: number;
  /** Worker processes (the RSS and CPU profile are the first one's). */
  workers: number;
  events: number;
  seconds: number;
  eventsPerSec: number;
  batches: number;
  eventsPerBatch: number;
  /** Queue jobs the workers committed (the publisher's batches). */
  jobs: number;
  /** Plans whose events waited on a gap, and plans rebuilt, summed over the commits (store outcome). */
  gapWaits: number;
  rebuilt: number;
  /** WORKER_SHARDS of each worker, when pinned. */
  workerShards?: string[];
  /** Events the publisher spilled to its journal (0 while Redis keeps up). */
  spilled: number;
  /** Published through the spill journal (a publisher memory of 1,000 events). */
  viaJournal?: boolean;
  workerRssPeakMb: number;
  rowsStored: number;
  /** CPU microseconds per event: worker, publisher (this process), redis, postgres (all sessions). */
  cpuUsPerEvent: Record<string, number>;
  /** Cores kept busy on average during the run (2 on this machine). */
  busyCores: number;
  /**
   * With `settle`: seconds from the last commit until it resolved (the workers still running), and
   * the workers' CPU in that time per event of the run (not in `cpuUsPerEvent`).
   */
  settleSeconds?: number;
  settleWorkerCpuUsPerEvent?: number;
  profile?: ProfileSummary;
}

/** `count` worker processes, each on the shards `workerShards` gives it (all by default); the first one profiled. */
function startWorkers(
  ctx: BenchContext,
  env: Record<string, string>,
  count: number,
  workerShards: string[] | undefined,
  profileDir: string | undefined,
) {
  return Promise.all(
    Array.from({ length: count }, (_, i) =>
      startWorkerChild({
        main: ctx.workerMain,
        env: workerShards?.[i] ? { ...env, WORKER_SHARDS: workerShards[i] } : env,
        cpuProfileDir: i === 0 ? profileDir : undefined,
      }),
    ),
  );
}

/** Awaits `settle` with the workers still running: seconds since the last commit, and the workers' CPU meanwhile. */
async function settleTimed(
  settle: (ds: DataSource) => Promise<void>,
  ds: DataSource,
  workers: { pid: number }[],
  lastCommitAt: number,
  events: number,
): Promise<{ settleSeconds: number; settleWorkerCpuUsPerEvent: number }> {
  const cpu = new CpuMeter({ workers: workers.map((w) => w.pid) });
  await settle(ds);
  return {
    settleSeconds: round((Date.now() - lastCommitAt) / 1000),
    settleWorkerCpuUsPerEvent: cpu.stop(events).usPerEvent.worker,
  };
}

/** Publish `count` events as fast as the publisher takes them; time from the first publish to the last commit. */
export async function sustained(
  ctx: BenchContext,
  database: TestDb,
  count: number,
  seed: number,
  opts: {
    profile?: boolean;
    workers?: number;
    workerEnv?: Record<string, string>;
    cluster?: RedisCluster;
    hashTag?: boolean;
    /** QUEUE_SHARDS. @defaultValue 1 */
    queueShards?: number;
    interleaved?: boolean;
    /** WORKER_SHARDS of each worker process, by index. @defaultValue every shard for each */
    workerShards?: string[];
    /**
     * A publisher memory of 1,000 events: a stream published faster than Redis takes it goes
     * through the spill journal, as after an outage.
     */
    viaJournal?: boolean;
    /** The events to publish, in chunks (`count` must be their number). @defaultValue pregenerate(count, seed, interleaved) */
    source?: PlanEventInput[][];
    /** Runs on the migrated database before the workers start (a webhook subscription, say). */
    prepare?: (ds: DataSource) => Promise<void>;
    /** Awaited after the last commit, before the workers stop (every webhook received, say); timed apart. */
    settle?: (ds: DataSource) => Promise<void>;
  } = {},
): Promise<SustainedResult> {
  const queueShards = opts.queueShards ?? 1;
  const { redis } = ctx;
  const { cluster } = opts;
  const db = await createMigratedDb(database);
  await opts.prepare?.(db.ds);
  // on a cluster the prefix needs a {hash tag}; the single-Redis run it is compared with uses one too
  const prefix = cluster || opts.hashTag ? `{${newPrefix(database)}}` : newPrefix(database);
  const profileDir = opts.profile ? tempDir('prof') : undefined;
  const redisEnv: Record<string, string> = cluster ? { REDIS_CLUSTER_NODES: cluster.nodes } : { REDIS_URL: redis.url };
  const env = {
    DATABASE_URL: db.db.url,
    ...redisEnv,
    QUEUE_PREFIX: prefix,
    QUEUE_SHARDS: String(queueShards),
    ...opts.workerEnv,
  };
  const workers = await startWorkers(ctx, env, opts.workers ?? 1, opts.workerShards, profileDir);
  const worker = workers[0];
  const rss = sampleRss(worker.pid);
  const pub = newPublisher(redis, prefix, {
    queueShards,
    ...(cluster ? { redisClusterNodes: cluster.nodes } : {}),
    ...(opts.viaJournal ? { maxBufferedEvents: 1_000 } : {}),
  });
  const source = opts.source ?? pregenerate(count, seed, opts.interleaved);
  try {
    await pub.ready();
    const cpu = new CpuMeter({ workers: workers.map((w) => w.pid), redisPort: cluster ? cluster.ports : redis.port });
    const t0 = Date.now();
    await publishStream(pub.publisher, count, seed, undefined, source);
    await pub.publisher.flush(60_000);
    const { spilled } = pub.publisher.stats();
    const committed = await waitCommitted(workers, count, 600_000);
    const seconds = (committed.lastCommitAt - t0) / 1000;
    const cpuUse = cpu.stop(count);
    const settled = opts.settle && (await settleTimed(opts.settle, db.ds, workers, committed.lastCommitAt, count));
    await Promise.all(workers.map((w) => w.stop()));
    const [{ n }] = await db.ds.query('SELECT COUNT(*) AS n FROM plan_events');
    const masters = cluster ? cluster.ports.map((port) => cpuUse.usPerEvent[`redis:${port}`] ?? 0) : [];
    const mastersTotal = masters.reduce((a, b) => a + b, 0);
    return {
      database,
      redis: cluster ? `cluster of ${cluster.ports.length} masters` : 'single',
      queueShards,
      traffic: opts.interleaved ? 'interleaved' : 'grouped',
      ...(cluster && mastersTotal > 0
        ? { busiestMasterCpuShare: round(masters.reduce((a, b) => Math.max(a, b)) / mastersTotal) }
        : {}),
      workers: workers.length,
      events: count,
      seconds: round(seconds),
      eventsPerSec: Math.round(count / seconds),
      batches: committed.batches,
      eventsPerBatch: Math.round(count / committed.batches),
      jobs: committed.jobs,
      gapWaits: committed.gapWaits,
      rebuilt: committed.rebuilt,
      ...(opts.workerShards ? { workerShards: opts.workerShards } : {}),
      ...(opts.viaJournal ? { viaJournal: true } : {}),
      spilled,
      workerRssPeakMb: mb(rss.stop().peakBytes),
      rowsStored: Number(n),
      cpuUsPerEvent: cpuUse.usPerEvent,
      busyCores: cpuUse.busyCores,
      ...settled,
      profile: profileDir ? summariseProfile(profileDir) : undefined,
    };
  } finally {
    rss.stop();
    await Promise.all(workers.map((w) => w.stop('SIGKILL')));
    await pub.close();
    for (const shard of shardsOf(prefix, queueShards)) await obliterate(redis, shard.prefix, EVENTS_QUEUE, cluster);
    await db.close();
    if (profileDir && !process.env.KEEP_PROFILE) fs.rmSync(profileDir, { recursive: true, force: true });
  }
}

export interface LatencyResult {
  ratePerSec: number;
  seconds: number;
  events: number;
  measuredEvents: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  maxMs: number;
  jobs: number;
}

/**
 * Publish at `ratePerSec` for `seconds`; an event's latency is its job's `finishedOn` (set when the
 * worker acknowledges it, after the commit) minus its `occurredAt` (stamped in publish()): an upper
 * bound of publish-to-commit. The first 2 s (warm-up) are left out.
 */
export async function latencyAtRate(
  ctx: BenchContext,
  ratePerSec: number,
  seconds: number,
  seed: number,
): Promise<LatencyResult> {
  const { redis } = ctx;
  const db = await createMigratedDb('postgres');
  const prefix = newPrefix('lat');
  const worker = await startWorkerChild({
    main: ctx.workerMain,
    env: { DATABASE_URL: db.db.url, REDIS_URL: redis.url, QUEUE_PREFIX: prefix },
  });
  const pub = newPublisher(redis, prefix, { jobOptions: { removeOnComplete: false } });
  const count = ratePerSec * seconds;
  try {
    const source = pregenerate(count, seed);
    await pub.ready();
    const t0 = Date.now();
    await publishStream(pub.publisher, count, seed, ratePerSec, source);
    await pub.publisher.flush(60_000);
    await waitCommitted([worker], count, 120_000);
    await sleep(200); // the last acknowledgements
    const queue = new Queue(EVENTS_QUEUE, { connection: { url: redis.url }, prefix });
    const jobs = await queue.getJobs(['completed'], 0, -1);
    await queue.close();
    const latencies: number[] = [];
    for (const job of jobs) {
      for (const e of (job.data as { events: { occurredAt: string }[] }).events) {
        const at = Date.parse(e.occurredAt);
        if (at - t0 >= 2_000) latencies.push(job.finishedOn! - at);
      }
    }
    latencies.sort((a, b) => a - b);
    const q = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))];
    return {
      ratePerSec,
      seconds,
      events: count,
      measuredEvents: latencies.length,
      p50Ms: q(0.5),
      p90Ms: q(0.9),
      p99Ms: q(0.99),
      maxMs: latencies[latencies.length - 1],
      jobs: jobs.length,
    };
  } finally {
    await worker.stop('SIGKILL');
    await pub.close();
    await obliterate(redis, prefix);
    await db.close();
  }
}

export interface BacklogResult {
  backlogEvents: number;
  publishSeconds: number;
  redisUsedMemoryMb: number;
  watchedSeconds: number;
  workerRssPeakMb: number;
  workerRssAtStartMb: number;
  drainedEvents: number;
  drainEventsPerSec: number;
}

/**
 * A backlog of `count` events published with no worker running; then a worker starts and its RSS is sampled while it
 * drains for `watchSeconds`.
 */
export async function backlogRss(
  ctx: BenchContext,
  count: number,
  watchSeconds: number,
  seed: number,
  workerEnv: Record<string, string> = {},
): Promise<BacklogResult> {
  const { redis } = ctx;
  const db = await createMigratedDb('postgres');
  const prefix = newPrefix('backlog');
  const pub = newPublisher(redis, prefix);
  try {
    await pub.ready();
    const t0 = Date.now();
    await publishStream(pub.publisher, count, seed);
    await pub.publisher.flush(120_000);
    const publishSeconds = (Date.now() - t0) / 1000;
    const client = new IORedis(redis.url);
    const usedMemory = Number(/used_memory:(\d+)/.exec(await client.info('memory'))![1]);
    client.disconnect();
    const worker = await startWorkerChild({
      main: ctx.workerMain,
      env: { DATABASE_URL: db.db.url, REDIS_URL: redis.url, QUEUE_PREFIX: prefix, ...workerEnv },
    });
    const atStart = rssBytes(worker.pid);
    const rss = sampleRss(worker.pid, 100);
    const watchStart = Date.now();
    await sleep(watchSeconds * 1000);
    const { peakBytes } = rss.stop();
    const drained = worker.lines
      .filter((l) => l.msg === 'batch committed')
      .reduce((n, l) => n + (l.inserted as number), 0);
    const watched = (Date.now() - watchStart) / 1000;
    await worker.stop('SIGKILL');
    return {
      backlogEvents: count,
      publishSeconds: round(publishSeconds),
      redisUsedMemoryMb: mb(usedMemory),
      watchedSeconds: round(watched),
      workerRssPeakMb: mb(peakBytes),
      workerRssAtStartMb: mb(atStart),
      drainedEvents: drained,
      drainEventsPerSec: Math.round(drained / watched),
    };
  } finally {
    await pub.close();
    await obliterate(redis, prefix);
    await db.close();
  }
}

export interface BaselineResult {
  events: number;
  seconds: number;
  eventsPerSec: number;
}

/**
 * Plain BullMQ: one job per event (addBulk of 1,000 jobs), one INSERT per job, concurrency 10, worker in its own
 * process.
 */
export async function plainBullmq(
  ctx: BenchContext,
  count: number,
  seed: number,
  database: TestDb = 'postgres',
): Promise<BaselineResult> {
  const { redis } = ctx;
  const db = await createMigratedDb(database);
  const prefix = newPrefix('plain');
  const queueName = 'plain-baseline';
  const worker = await startBaselineChild({
    REDIS_URL: redis.url,
    QUEUE_PREFIX: prefix,
    DATABASE_URL: db.db.url,
    BASELINE_QUEUE: queueName,
    BASELINE_TOTAL: String(count),
  });
  const connection = new IORedis(redis.url, { maxRetriesPerRequest: null });
  const queue = new Queue(queueName, { connection, prefix });
  try {
    const events = withPublisherIds(exactlyEvents(count, { seed }));
    const t0 = Date.now();
    for (let i = 0; i < events.length; i += 1_000) {
      await queue.addBulk(
        events.slice(i, i + 1_000).map((e) => ({ name: 'event', data: e, opts: { removeOnComplete: true } })),
      );
    }
    const done = await worker.waitFor((l) => l.msg === 'done', 600_000, 'baseline done');
    const seconds = ((done.at as number) - t0) / 1000;
    return { events: count, seconds: round(seconds), eventsPerSec: Math.round(count / seconds) };
  } finally {
    await worker.stop();
    await queue.obliterate({ force: true }).catch(() => undefined);
    await queue.close();
    await connection.quit();
    await db.close();
  }
}

/** The limit: multi-row INSERTs (500 rows) of the same plan_events rows on one PostgreSQL connection. */
export async function rawMultiRowInsert(
  count: number,
  seed: number,
  rowsPerInsert = 500,
): Promise<BaselineResult & { rowsPerInsert: number }> {
  const db = await createMigratedDb('postgres', { poolSize: 1 });
  try {
    const rows = withPublisherIds(exactlyEvents(count, { seed })).map((e) => [
      e.eventId,
      e.planId,
      e.sessionId,
      e.type,
      e.seq,
      e.specVersion,
      e.occurredAt,
      new Date(),
      JSON.stringify(e.payload),
    ]);
    const statement = (n: number) =>
      `INSERT INTO plan_events (event_id, plan_id, session_id, type, seq, spec_version, occurred_at, recorded_at, payload) VALUES ${Array.from({ length: n }, (_, r) => `(${Array.from({ length: 9 }, (_, c) => `$${r * 9 + c + 1}`).join(', ')})`).join(', ')}`;
    const full = statement(rowsPerInsert);
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < rows.length; i += rowsPerInsert) {
      const part = rows.slice(i, i + rowsPerInsert);
      await db.ds.query(part.length === rowsPerInsert ? full : statement(part.length), part.flat());
    }
    const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
    return { events: count, seconds: round(seconds), eventsPerSec: Math.round(count / seconds), rowsPerInsert };
  } finally {
    await db.close();
  }
}
