/**
 * Dead letters by the hundred thousand, in one run against a redis-server of
 * its own: fills the dead-letter queue with N entries (default 100k), then measures
 * - `stats` and an unfiltered `list` (the table's first 100) through the library;
 * - `replay --all --dry-run` and `replay --all`, each as the real CLI in a child process (time and
 *   peak RSS as the process itself reports them), one after the other on the same quiet Redis;
 * - then, on a fresh fill of N, a live events queue (another process: a feeder and a no-op
 *   worker) on the same Redis, its throughput without a replay (the baseline) and during a second
 *   replay (whose time is reported too: it shares the 2 cores with the live queue).
 * Targets: replay <= 2x dry run, replay peak RSS <= 200 MB, stats and list <= 1 s, live
 * throughput during the replay >= 0.5x the baseline.
 *
 *   npm run bench:dlq [-- --count 100k] [-- --json]
 */
import { ChildProcess, spawn } from 'node:child_process';
import * as path from 'node:path';
import { randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import IORedis from 'ioredis';
import { DeadLetterService } from '../src/dead-letters';
import type { DeadLetter } from '../src/dead-letters/dead-letter';
import { DeadLetterWriter } from '../src/dead-letters/dead-letter-writer';
import { DEAD_LETTER_QUEUE, EVENTS_QUEUE } from '../src/queue/queue-names';
import { queueShards } from '../src/queue/queue-shards';
import { createLogger } from '../src/shared/logger';
import { RedisProcess } from '../test/publisher/support/redis-process';
import { BenchOptions } from './support/cli-options';

const options = new BenchOptions('npm run bench:dlq -- [options]', [
  { name: 'count', value: 'n', help: 'dead letters to fill (default 100k)' },
  { name: 'shards', value: 'n', help: 'QUEUE_SHARDS of the replay: events go to the shard of their plan (default 1)' },
  { name: 'json', help: 'print the results as JSON' },
]);
const N = options.number('count', 100_000);
const SHARDS = options.number('shards', 1);
const JSON_OUT = options.flag('json');
const ROOT = path.join(__dirname, '..');
const log = (line: string) => process.stderr.write(`${line}\n`);

function deadLetter(i: number): DeadLetter {
  const eventId = randomUUID();
  const event = {
    specVersion: 1,
    eventId,
    type: i % 3 === 0 ? 'step.completed' : 'step.started',
    planId: `plan_${i % 997}`,
    sessionId: 'session_1',
    seq: i,
    occurredAt: '2026-01-01T00:00:00.000Z',
    payload: { stepId: `s${i % 7}`, inputTokens: 100, outputTokens: -1, outputContent: 'x'.repeat(200) },
  };
  return {
    id: `dl-${randomUUID()}`,
    kind: i % 2 === 0 ? 'invalid' : 'retries-exhausted',
    event,
    eventId,
    type: event.type,
    planId: event.planId,
    sessionId: 'session_1',
    error: {
      message: 'payload.outputTokens: must not be less than 0',
      violations: [{ path: 'payload.outputTokens', message: 'must not be less than 0' } as never],
      stack: 'Error: invalid\n    at check (x.ts:1:1)',
    },
    attempts: 1,
    firstFailedAt: new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString(),
    lastFailedAt: new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString(),
    source: { queue: EVENTS_QUEUE, jobId: `job-${i}` },
    workerVersion: '0.1.0',
    replayCount: 0,
  };
}

async function fill(redis: IORedis, prefix: string, n: number): Promise<void> {
  const writer = new DeadLetterWriter(redis, prefix);
  for (let i = 0; i < n; i += 1_000)
    await writer.write(Array.from({ length: Math.min(1_000, n - i) }, (_, k) => deadLetter(i + k)));
  await writer.close();
}

async function timed<T>(fn: () => Promise<T>): Promise<[T, number]> {
  const t = process.hrtime.bigint();
  const value = await fn();
  return [value, Number(process.hrtime.bigint() - t) / 1e6];
}

/**
 * The CLI in a child process, as an operator runs it: the build (`npm run build`; bin/ falls back
 * to the sources when there is none). The wrapper reports the process's own peak RSS on exit.
 */
function runCli(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; maxRssMb: number; ms: number }> {
  const wrapper = `process.on('exit', () => process.stderr.write('\\nmaxrss ' + process.resourceUsage().maxRSS + '\\n')); process.argv = ['node', 'plan-ledger', ...${JSON.stringify(args)}]; require(${JSON.stringify(path.join(ROOT, 'bin', 'plan-ledger.js'))});`;
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const child = spawn(process.execPath, ['-e', wrapper], {
      env: { ...process.env, ...env, LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => {
      const rss = /maxrss (\d+)/.exec(stderr);
      if (code !== 0) log(stderr);
      resolve({
        code,
        stdout,
        maxRssMb: rss ? Math.round(Number(rss[1]) / 1024) : NaN,
        ms: Number(process.hrtime.bigint() - started) / 1e6,
      });
    });
  });
}

interface LiveSample {
  t: number;
  completed: number;
}

function startLive(url: string, prefix: string): { child: ChildProcess; samples: LiveSample[] } {
  const child = spawn(
    process.execPath,
    [
      path.join(ROOT, 'node_modules', 'tsx', 'dist', 'cli.mjs'),
      path.join(__dirname, 'support', 'dlq-live-queue.ts'),
      url,
      prefix,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const samples: LiveSample[] = [];
  let buffer = '';
  child.stdout!.on('data', (d) => {
    buffer += d;
    const lines = buffer.split('\n');
    buffer = lines.pop()!;
    for (const line of lines) if (line.trim()) samples.push(JSON.parse(line));
  });
  return { child, samples };
}

/** Jobs per second completed between two wall-clock instants. */
function rate(samples: LiveSample[], from: number, to: number): number {
  const inside = samples.filter((s) => s.t >= from && s.t <= to);
  if (inside.length < 2) return NaN;
  const [a, b] = [inside[0], inside[inside.length - 1]];
  return ((b.completed - a.completed) * 1000) / (b.t - a.t);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main(): Promise<void> {
  const server = await RedisProcess.create();
  await server.start();
  const redis = new IORedis(server.url, { maxRetriesPerRequest: null });
  let live: ReturnType<typeof startLive> | undefined;
  try {
    const prefix = `bench-dlq-${Date.now().toString(36)}`;
    log(`dlq bench: ${N} dead letters; redis-server on port ${server.port}`);
    const [, fillMs] = await timed(() => fill(redis, prefix, N));
    log(`filled in ${Math.round(fillMs)} ms`);
    const deadLetters = new Queue(DEAD_LETTER_QUEUE, { connection: redis, prefix });
    const service = new DeadLetterService({ deadLetters, logger: createLogger({ level: 'silent' }) });
    const [stats, statsMs] = await timed(() => service.stats());
    const [list, listMs] = await timed(() => service.listSummaries({ limit: 100 }));
    if (stats.total !== N || list.total !== N || list.deadLetters.length !== Math.min(100, N))
      throw new Error(`counts wrong: stats ${stats.total}, list ${list.total}/${list.deadLetters.length}`);
    log(`stats ${Math.round(statsMs)} ms, list ${Math.round(listMs)} ms`);

    // replay opens the database for its "already stored" count: an empty, migrated SQLite file
    const env = {
      REDIS_URL: server.url,
      QUEUE_PREFIX: prefix,
      QUEUE_SHARDS: String(SHARDS),
      DATABASE_URL: `sqlite:${path.join(server.dir, 'bench.sqlite')}`,
    };
    if ((await runCli(['migrate'], env)).code !== 0) throw new Error('migrate failed');
    const dry = await runCli(['dlq', 'replay', '--all', '--dry-run', '--json'], env);
    log(`dry run: exit ${dry.code}, ${Math.round(dry.ms)} ms, peak RSS ${dry.maxRssMb} MB`);

    // the replay on the same quiet machine as the dry run: the ratio compares their own costs
    const replay = await runCli(['dlq', 'replay', '--all', '--json'], env);
    const summary = JSON.parse(replay.stdout || '{}');
    log(
      `replay: exit ${replay.code}, ${Math.round(replay.ms)} ms, peak RSS ${replay.maxRssMb} MB, replayed ${summary.replayed}`,
    );
    const left = await service.listSummaries({ limit: 1 });
    // every shard's events queue (one without --shards)
    const shardQueues = queueShards(prefix, SHARDS).map(
      (s) => new Queue(EVENTS_QUEUE, { connection: redis, prefix: s.prefix }),
    );
    const queuedByShard = await Promise.all(shardQueues.map((q) => q.count()));
    const queued = queuedByShard.reduce((a, b) => a + b, 0);

    // then N more, and the live queue (another process): its baseline, then a replay beside it
    for (const q of shardQueues) await q.obliterate({ force: true });
    await fill(redis, prefix, N);
    live = startLive(server.url, 'bench-live');
    await sleep(3_000);
    const baseFrom = Date.now();
    await sleep(3_000);
    const baseline = rate(live.samples, baseFrom, Date.now());
    const samples = live.samples;
    const replayFrom = Date.now();
    const beside = await runCli(['dlq', 'replay', '--all', '--json'], env);
    const during = rate(samples, replayFrom, Date.now());
    const besideSummary = JSON.parse(beside.stdout || '{}');
    log(
      `replay beside the live queue: exit ${beside.code}, ${Math.round(beside.ms)} ms, peak RSS ${beside.maxRssMb} MB, replayed ${besideSummary.replayed}`,
    );
    for (const q of shardQueues) await q.close();

    const results = {
      count: N,
      queueShards: SHARDS,
      statsMs: Math.round(statsMs),
      listMs: Math.round(listMs),
      dryRunMs: Math.round(dry.ms),
      dryRunSelected: JSON.parse(dry.stdout || '{}').selected,
      replayMs: Math.round(replay.ms),
      replayOverDryRun: +(replay.ms / dry.ms).toFixed(2),
      replayPeakRssMb: replay.maxRssMb,
      replayed: summary.replayed,
      replayBesideLiveMs: Math.round(beside.ms),
      replayBesideLivePeakRssMb: beside.maxRssMb,
      replayedBesideLive: besideSummary.replayed,
      deadLettersLeft: left.total,
      eventJobsQueued: queued,
      ...(SHARDS > 1 ? { eventJobsQueuedByShard: queuedByShard } : {}),
      liveJobsPerSecBaseline: Math.round(baseline),
      liveJobsPerSecDuringReplay: Math.round(during),
      liveRatio: +(during / baseline).toFixed(2),
      targets: {
        'replay <= 2x dry run': replay.ms <= 2 * dry.ms,
        'replay peak RSS <= 200 MB': Math.max(replay.maxRssMb, beside.maxRssMb) <= 200,
        'stats <= 1 s': statsMs <= 1_000,
        'list <= 1 s': listMs <= 1_000,
        'live throughput >= 0.5x': during / baseline >= 0.5,
      },
    };
    if (JSON_OUT) process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
    else
      for (const [k, v] of Object.entries(results))
        process.stdout.write(`${k.padEnd(28)}${typeof v === 'object' ? JSON.stringify(v) : v}\n`);
    await deadLetters.close();
  } finally {
    if (live) {
      live.child.kill('SIGTERM');
      await sleep(500);
      if (live.child.exitCode === null) live.child.kill('SIGKILL');
    }
    redis.disconnect();
    await server.destroy();
  }
}

main().catch((err) => {
  log(String(err?.stack ?? err));
  process.exit(1);
});
