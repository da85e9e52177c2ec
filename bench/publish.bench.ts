/**
 * `npm run bench:publish` (`-- --json` prints one JSON object; `-- --quick` runs a smaller load).
 *
 * Measures, in one run on this machine, against a redis-server of its own on a spare port:
 * - publish() latency p50/p99/p99.9 with Redis up and with Redis down (hrtime around each call);
 * - sustained throughput into Redis: events/s from the first publish until every event is confirmed
 *   by Redis (and counted back from the jobs' data), median of three runs, and the drain rate after
 *   an outage;
 * - memory while Redis is down, against the configured buffer bound;
 * - baselines: plain BullMQ `queue.add`, one job per event, awaited and un-awaited;
 * - events per job: throughput for several batch sizes (the default is the fastest measured).
 */
import * as os from 'node:os';
import * as v8 from 'node:v8';
import * as vm from 'node:vm';
import { execFileSync } from 'node:child_process';
import { RedisProcess } from '../test/publisher/support/redis-process';
import { round, timerOverheadNs } from './support/latency';
import {
  UpResult,
  baselineAwaited,
  baselineUnawaited,
  inputPool,
  publisherDown,
  publisherUp,
} from './support/publish-scenarios';

const MIB = 1024 * 1024;
const json = process.argv.includes('--json');
const quick = process.argv.includes('--quick');
const N = quick ? 50_000 : 300_000;
const N_DOWN = quick ? 100_000 : 400_000;
const N_AWAITED = quick ? 2_000 : 5_000;
const N_UNAWAITED = quick ? 20_000 : 50_000;
const SWEEP = [1, 10, 50, 200, 500, 1_000];
const N_SWEEP = quick ? 20_000 : 100_000;
const UP_RUNS = 3;
/** The down run's buffer: small enough that most events go through the journal, to show the bound. */
const DOWN_BUFFER = { maxBufferedEvents: 50_000, maxBufferedBytes: 16 * MIB };

function log(line: string): void {
  if (!json) process.stdout.write(`${line}\n`);
}

/** A full GC between scenarios, so one scenario's garbage is not collected inside the next one's timed calls. */
const gc = (() => {
  v8.setFlagsFromString('--expose-gc');
  return vm.runInNewContext('gc') as () => void;
})();

async function main(): Promise<void> {
  const loadBefore = os.loadavg()[0];
  const redis = await RedisProcess.create();
  await redis.start();
  try {
    const pool = inputPool(10_000);
    const overheadNs = timerOverheadNs();
    log(
      `publish bench: ${N} events up, ${N_DOWN} down; redis-server on port ${redis.port}; timer overhead ${overheadNs} ns (included in latencies)`,
    );

    // Warm-up: JIT and connections, not measured.
    await publisherUp(redis, pool, 20_000);
    // Three runs (the machine is shared): the headline is the median run by throughput.
    const upRuns: UpResult[] = [];
    for (let i = 0; i < UP_RUNS; i++) {
      gc();
      upRuns.push(await publisherUp(redis, pool, N));
      const r = upRuns[i];
      log(
        `up #${i + 1}: publish p50 ${r.latency.p50Us} us  p99 ${r.latency.p99Us} us  p99.9 ${r.latency.p999Us} us  max ${r.latency.maxUs} us; ${r.eventsPerSec} events/s into redis (${r.inQueue} in queue, ${r.spilled} via the journal)`,
      );
    }
    const up = [...upRuns].sort((a, b) => a.eventsPerSec - b.eventsPerSec)[Math.floor(UP_RUNS / 2)];
    gc();
    const down = await publisherDown(redis, pool, N_DOWN, DOWN_BUFFER, gc);
    log(
      `down:  publish p50 ${down.latency.p50Us} us  p99 ${down.latency.p99Us} us  p99.9 ${down.latency.p999Us} us  max ${down.latency.maxUs} us; accepted ${down.acceptedPerSec}/s; retained heap after GC ${down.memory.retainedGrowth.map((r) => `+${r.heapMb} MB at ${r.published}`).join(', ')} (buffer bound ${DOWN_BUFFER.maxBufferedBytes / MIB} MiB; peak +${down.memory.heapGrowthMb} MB heap, +${down.memory.rssGrowthMb} MB RSS); drained ${down.drain.eventsPerSec} events/s after restart`,
    );
    gc();
    const awaited = await baselineAwaited(redis, pool, N_AWAITED);
    log(
      `queue.add awaited:     p50 ${awaited.latency.p50Us} us  p99 ${awaited.latency.p99Us} us; ${awaited.eventsPerSec} events/s`,
    );
    gc();
    const unawaited = await baselineUnawaited(redis, pool, N_UNAWAITED);
    log(
      `queue.add un-awaited:  p50 ${unawaited.latency.p50Us} us  p99 ${unawaited.latency.p99Us} us; ${unawaited.eventsPerSec} events/s; RSS +${unawaited.memory.rssGrowthMb} MB`,
    );

    const sweep: { eventsPerJob: number; eventsPerSec: number }[] = [];
    for (const eventsPerJob of SWEEP) {
      gc();
      const run = await publisherUp(redis, pool, N_SWEEP, { eventsPerJob });
      sweep.push({ eventsPerJob, eventsPerSec: run.eventsPerSec });
      log(`eventsPerJob ${eventsPerJob}: ${run.eventsPerSec} events/s`);
    }

    const result = {
      // The 1-minute load average: other work on this 2-core machine moves every figure, throughput most.
      machine: {
        cpus: os.cpus().length,
        cpuModel: os.cpus()[0]?.model,
        node: process.version,
        redis: redisVersion(),
        loadAvgBefore: round(loadBefore),
        loadAvgAfter: round(os.loadavg()[0]),
      },
      command: `npm run bench:publish${quick ? ' -- --quick' : ''}`,
      timerOverheadNs: overheadNs,
      publisherUp: {
        ...up,
        runs: upRuns.map((r) => ({
          eventsPerSec: r.eventsPerSec,
          p50Us: r.latency.p50Us,
          p99Us: r.latency.p99Us,
          p999Us: r.latency.p999Us,
        })),
      },
      publisherDown: {
        ...down,
        bufferBound: {
          maxBufferedEvents: DOWN_BUFFER.maxBufferedEvents,
          maxBufferedBytesMb: DOWN_BUFFER.maxBufferedBytes / MIB,
        },
      },
      baselineAddAwaited: awaited,
      baselineAddUnawaited: unawaited,
      eventsPerJobSweep: sweep,
      ratios: {
        awaitedAddP99OverPublishP99Up: round(awaited.latency.p99Us / up.latency.p99Us, 1),
        awaitedAddP99OverPublishP99Down: round(awaited.latency.p99Us / down.latency.p99Us, 1),
        unawaitedAddP99OverPublishP99Up: round(unawaited.latency.p99Us / up.latency.p99Us, 2),
        throughputOverAwaitedAdd: round(up.eventsPerSec / awaited.eventsPerSec, 1),
        throughputOverUnawaitedAdd: round(up.eventsPerSec / unawaited.eventsPerSec, 1),
      },
      targets: {
        publishP99UpAtMost10us: up.latency.p99Us <= 10,
        publishP99DownAtMost10us: down.latency.p99Us <= 10,
        atLeast200kEventsPerSecIntoRedis: up.eventsPerSec >= 200_000,
        everyEventInQueueOnce:
          upRuns.every((r) => r.distinctInQueue === N && r.inQueue === N) &&
          down.distinctInQueue === N_DOWN &&
          down.inQueue === N_DOWN,
        // Retained heap (after GC) stays within twice the bound however many events are published while down.
        memoryBoundedByBuffer: down.memory.retainedGrowth.every(
          (r) => r.heapMb <= 2 * (DOWN_BUFFER.maxBufferedBytes / MIB),
        ),
      },
    };
    if (json) process.stdout.write(`${JSON.stringify(result)}\n`);
    else log(`ratios: ${JSON.stringify(result.ratios)}\ntargets: ${JSON.stringify(result.targets)}`);
  } finally {
    await redis.destroy();
  }
}

function redisVersion(): string {
  try {
    return /v=(\S+)/.exec(execFileSync('redis-server', ['--version']).toString())?.[1] ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`bench:publish failed: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
