/**
 * The scenarios of `npm run bench:publish`, each against a redis-server of the benchmark's own
 * (started, stopped and restarted at will). Events come from the shared realistic factory; the
 * inputs carry no stamps, so publish() stamps eventId/seq/occurredAt as it does for an executor.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import IORedis from 'ioredis';
import pino from 'pino';
import type { PlanEventInput } from '../../src/contracts';
import { PlanEventPublisher, PublisherOptions } from '../../src/publisher';
import { EVENTS_QUEUE, EVENT_BATCH_JOB } from '../../src/queue/queue-names';
import { exactlyEvents } from '../../test/support/event-factory';
import type { RedisProcess } from '../../test/publisher/support/redis-process';
import { LatencyRecorder, LatencySummary, mb, round, yieldToLoop } from './latency';

/** Calls between two yields to the event loop, as an executor's own work would interleave them. */
export const SLICE = 1_000;

export function inputPool(size: number): PlanEventInput[] {
  return exactlyEvents(size, { seed: 99 }).map(
    ({ eventId: _e, seq: _s, occurredAt: _o, specVersion: _v, ...rest }) => rest as PlanEventInput,
  );
}

export function newPrefix(): string {
  return `bench-pub-${randomBytes(4).toString('hex')}`;
}

const journalDirs: string[] = [];
process.once('exit', () => {
  for (const dir of journalDirs) fs.rmSync(dir, { recursive: true, force: true });
});

/** A publisher on its own journal directory (removed when the benchmark exits). */
export function newBenchPublisher(
  redis: RedisProcess,
  prefix: string,
  options: PublisherOptions = {},
): { publisher: PlanEventPublisher; journalDir: string } {
  const journalDir = fs.mkdtempSync(path.join(os.tmpdir(), 'plan-ledger-bench-journal-'));
  journalDirs.push(journalDir);
  const publisher = new PlanEventPublisher({
    redisUrl: redis.url,
    queuePrefix: prefix,
    journalDir,
    logger: pino({ level: 'silent' }),
    ...options,
  });
  return { publisher, journalDir };
}

/** Events in the queue's wait list, read from the jobs' data; `distinct` counts eventIds once. */
export async function countQueued(redis: RedisProcess, prefix: string): Promise<{ events: number; distinct: number }> {
  const client = new IORedis(redis.url);
  try {
    const ids = await client.lrange(`${prefix}:${EVENTS_QUEUE}:wait`, 0, -1);
    const seen = new Set<string>();
    let events = 0;
    for (let i = 0; i < ids.length; i += 200) {
      const pipeline = client.pipeline();
      for (const id of ids.slice(i, i + 200)) pipeline.hget(`${prefix}:${EVENTS_QUEUE}:${id}`, 'data');
      for (const [, data] of (await pipeline.exec()) ?? []) {
        for (const e of (JSON.parse(data as string) as { events: { eventId: string }[] }).events) {
          events++;
          seen.add(e.eventId);
        }
      }
    }
    return { events, distinct: seen.size };
  } finally {
    client.disconnect();
  }
}

export async function obliterate(redis: RedisProcess, prefix: string): Promise<void> {
  const queue = new Queue(EVENTS_QUEUE, { connection: { url: redis.url }, prefix });
  await queue.obliterate({ force: true }).catch(() => undefined);
  await queue.close();
}

/**
 * Publishes `n` events (cycling the pool) in slices, timing every call; samples memory per slice and
 * takes a retained-memory snapshot (after a full GC, between calls) at each quarter.
 */
async function publishTimed(
  publisher: PlanEventPublisher,
  pool: PlanEventInput[],
  n: number,
  rec: LatencyRecorder,
  memory?: MemorySampler,
): Promise<number> {
  const start = process.hrtime.bigint();
  let pausedNs = 0n;
  for (let i = 0; i < n; i++) {
    const result = rec.time(() => publisher.publish(pool[i % pool.length]));
    if (!result.ok && result.reason === 'invalid')
      throw new Error(`bench event rejected: ${JSON.stringify(result.violations)}`);
    if (i % SLICE === SLICE - 1) {
      memory?.sample();
      if (memory && (i + 1) % (n / 4) === 0) {
        const t = process.hrtime.bigint();
        memory.snapshot(i + 1);
        pausedNs += process.hrtime.bigint() - t;
      }
      await yieldToLoop();
    }
  }
  return Number(process.hrtime.bigint() - start - pausedNs) / 1e9;
}

export class MemorySampler {
  readonly rssBefore = process.memoryUsage.rss();
  readonly heapBefore: number;
  rssPeak = this.rssBefore;
  heapPeak: number;
  /** Heap still in use after a full GC, after `published` calls: what the publisher really holds. */
  readonly retained: { published: number; heapMb: number; rssMb: number }[] = [];

  constructor(private readonly gc: () => void = () => undefined) {
    gc();
    this.heapBefore = process.memoryUsage().heapUsed;
    this.heapPeak = this.heapBefore;
  }

  snapshot(published: number): void {
    this.gc();
    const { heapUsed, rss } = process.memoryUsage();
    this.retained.push({ published, heapMb: mb(heapUsed - this.heapBefore), rssMb: mb(rss - this.rssBefore) });
  }

  sample(): void {
    const { rss, heapUsed } = process.memoryUsage();
    this.rssPeak = Math.max(this.rssPeak, rss);
    this.heapPeak = Math.max(this.heapPeak, heapUsed);
  }

  report() {
    return {
      retainedGrowth: this.retained,
      rssBeforeMb: mb(this.rssBefore),
      rssPeakMb: mb(this.rssPeak),
      rssGrowthMb: mb(this.rssPeak - this.rssBefore),
      heapBeforeMb: mb(this.heapBefore),
      heapPeakMb: mb(this.heapPeak),
      heapGrowthMb: mb(this.heapPeak - this.heapBefore),
    };
  }
}

export interface UpResult {
  latency: LatencySummary;
  events: number;
  seconds: number;
  /** Until the last publish() returned (the rest is the flush). */
  publishSeconds: number;
  eventsPerSec: number;
  /** CPU of this process (all threads: main, GC, libuv) per event, publish to confirmed. */
  processCpuUsPerEvent: number;
  spilled: number;
  inQueue: number;
  distinctInQueue: number;
}

/** Redis up: publish() latency, and events/s from the first publish until all are confirmed in Redis. */
export async function publisherUp(
  redis: RedisProcess,
  pool: PlanEventInput[],
  n: number,
  options: PublisherOptions = {},
): Promise<UpResult> {
  const prefix = newPrefix();
  const { publisher } = newBenchPublisher(redis, prefix, options);
  await waitReady(publisher);
  const rec = new LatencyRecorder(n);
  const cpu = process.cpuUsage();
  const start = process.hrtime.bigint();
  const publishSeconds = await publishTimed(publisher, pool, n, rec);
  if (!(await publisher.flush(300_000))) throw new Error('publisher did not flush within 300 s');
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  const used = process.cpuUsage(cpu);
  const { spilled } = publisher.stats();
  await publisher.close(10_000);
  const queued = await countQueued(redis, prefix);
  await obliterate(redis, prefix);
  return {
    latency: rec.summary(),
    events: n,
    seconds: round(seconds, 3),
    publishSeconds: round(publishSeconds, 3),
    eventsPerSec: Math.round(n / seconds),
    processCpuUsPerEvent: round((used.user + used.system) / n),
    spilled,
    inQueue: queued.events,
    distinctInQueue: queued.distinct,
  };
}

/** Waits up to 5 s for the publisher's link to Redis: a clock started before it times the spill journal. */
export async function waitReady(publisher: PlanEventPublisher): Promise<void> {
  for (let i = 0; i < 500 && !publisher.stats().redisReady; i++) await new Promise((r) => setTimeout(r, 10));
  if (!publisher.stats().redisReady) throw new Error('publisher did not connect to the bench redis-server');
}

/** Redis down: publish() latency and memory with a bounded buffer; then the drain rate once Redis is back. */
export async function publisherDown(
  redis: RedisProcess,
  pool: PlanEventInput[],
  n: number,
  options: PublisherOptions,
  gc: () => void,
) {
  await redis.stop();
  const prefix = newPrefix();
  const rec = new LatencyRecorder(n);
  const memory = new MemorySampler(gc);
  const { publisher } = newBenchPublisher(redis, prefix, options);
  const publishSeconds = await publishTimed(publisher, pool, n, rec, memory);
  const during = publisher.stats();
  await redis.start();
  const start = process.hrtime.bigint();
  if (!(await publisher.flush(600_000))) throw new Error('journal did not drain within 600 s');
  const drainSeconds = Number(process.hrtime.bigint() - start) / 1e9;
  await publisher.close(10_000);
  const queued = await countQueued(redis, prefix);
  await obliterate(redis, prefix);
  return {
    latency: rec.summary(),
    events: n,
    acceptedPerSec: Math.round(n / publishSeconds),
    buffered: during.buffered,
    spilled: during.spilled,
    dropped: during.dropped,
    memory: memory.report(),
    drain: { seconds: round(drainSeconds, 3), eventsPerSec: Math.round(n / drainSeconds) },
    inQueue: queued.events,
    distinctInQueue: queued.distinct,
  };
}

function stampedJob(input: PlanEventInput) {
  return {
    v: 1 as const,
    events: [{ ...input, specVersion: 1, eventId: randomUUID(), seq: 0, occurredAt: new Date().toISOString() }],
  };
}

const BASELINE_JOB_OPTIONS = { removeOnComplete: { count: 1_000 }, removeOnFail: false, attempts: 50 };

/** Plain BullMQ, one job per event, each `queue.add` awaited before the next (what an executor would otherwise do). */
export async function baselineAwaited(redis: RedisProcess, pool: PlanEventInput[], n: number) {
  const prefix = newPrefix();
  const queue = new Queue(EVENTS_QUEUE, { connection: { url: redis.url }, prefix });
  await queue.waitUntilReady();
  const rec = new LatencyRecorder(n);
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    const data = stampedJob(pool[i % pool.length]);
    const t = process.hrtime.bigint();
    await queue.add(EVENT_BATCH_JOB, data, BASELINE_JOB_OPTIONS);
    rec.add(Number(process.hrtime.bigint() - t));
  }
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  await queue.obliterate({ force: true });
  await queue.close();
  return { latency: rec.summary(), events: n, eventsPerSec: Math.round(n / seconds) };
}

/** Plain BullMQ, one job per event, `queue.add` not awaited (fire and forget), same slicing as the publisher. */
export async function baselineUnawaited(redis: RedisProcess, pool: PlanEventInput[], n: number) {
  const prefix = newPrefix();
  const queue = new Queue(EVENTS_QUEUE, { connection: { url: redis.url }, prefix });
  await queue.waitUntilReady();
  const rec = new LatencyRecorder(n);
  const memory = new MemorySampler();
  const pending: Promise<unknown>[] = [];
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    const data = stampedJob(pool[i % pool.length]);
    pending.push(rec.time(() => queue.add(EVENT_BATCH_JOB, data, BASELINE_JOB_OPTIONS)));
    if (i % SLICE === SLICE - 1) {
      memory.sample();
      await yieldToLoop();
    }
  }
  await Promise.all(pending);
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  memory.sample();
  await queue.obliterate({ force: true });
  await queue.close();
  return { latency: rec.summary(), events: n, eventsPerSec: Math.round(n / seconds), memory: memory.report() };
}
