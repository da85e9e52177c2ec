/**
 * `npm run bench:http` (`-- --json` prints one JSON object; `-- --quick` runs a smaller load).
 *
 * Measures, in one run, against a redis-server of its own on a spare port:
 * - the in-process TypeScript publisher's rate into Redis (the baseline): N events from
 *   `publish()` until Redis confirmed all of them;
 * - `POST /v1/events` into Redis through `plan-ledger serve` (in this process, on loopback) with
 *   batches of 100 and 1,000 events, 4 requests in flight, bodies serialised before the clock
 *   starts: events/s until every 202 came back and the server publisher confirmed all of them, and
 *   each request's latency (p50/p99). Twice: with the default acknowledgement (202 once the events
 *   are in Redis) and with HTTP_ACK_BEFORE_DURABLE (202 once they are in the server's memory);
 *   then both again open loop, batches of 100 paced at `--rate=` events/s (default 20,000), the
 *   latency of a request when the server keeps up;
 * - the Python client's `publish()` latency (p50/p99 in microseconds; each call stamps, checks and
 *   encodes its event) with the server up and with it down (a port nobody listens on: the events
 *   go to the journal), from a thread (PlanLedgerClient) and from a coroutine (AsyncPlanLedgerClient).
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { loadConfig } from '../src/config/config';
import { loadHttpConfig } from '../src/http/http-config';
import { startHttpServer } from '../src/http/start-http-server';
import { PlanEventPublisher } from '../src/publisher';
import { createLogger } from '../src/shared/logger';
import { manyPlanRuns } from '../test/support/event-factory';
import { freePort, RedisProcess } from '../test/publisher/support/redis-process';
import { LatencyRecorder, round } from './support/latency';

const json = process.argv.includes('--json');
const quick = process.argv.includes('--quick');
const N = quick ? 50_000 : 200_000;
const N_PY = quick ? 20_000 : 50_000;
const IN_FLIGHT = 4;
/** The open-loop run's offered load: below what serve takes on this machine, so latency is service, not queue. */
const PACED_RATE = Number(process.argv.find((a) => a.startsWith('--rate='))?.slice(7) ?? 20_000);
const KEY = 'bench-ingest-key-0123456789abcdef';
const log = (line: string) => {
  if (!json) process.stdout.write(`${line}\n`);
};
const silent = () => createLogger({ level: 'silent' });
const tmpDir = (tag: string) => fs.mkdtempSync(path.join(os.tmpdir(), `plan-ledger-bench-${tag}-`));

async function baseline(redis: RedisProcess, events: readonly object[]): Promise<number> {
  const dir = tmpDir('ts');
  const publisher = new PlanEventPublisher({
    redisUrl: `redis://127.0.0.1:${redis.port}`,
    queuePrefix: `bench-ts-${Date.now()}`,
    journalDir: dir,
    logger: silent(),
  });
  try {
    const started = process.hrtime.bigint();
    for (const e of events) publisher.publish(e as never);
    if (!(await publisher.flush(120_000))) throw new Error('the TypeScript publisher did not flush');
    return Math.round(events.length / (Number(process.hrtime.bigint() - started) / 1e9));
  } finally {
    await publisher.close(5_000);
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

interface HttpRun {
  eventsPerSec: number;
  requestP50Ms: number;
  requestP99Ms: number;
}

/**
 * `events` through POST /v1/events in batches of `batch`: closed loop (IN_FLIGHT requests at a
 * time, as fast as the server answers) or, with `rate`, open loop (a request every
 * batch/rate seconds whatever the answers; each latency counts from the request's planned start,
 * so a slow answer delays nothing and hides nothing).
 */
async function httpIngest(
  redis: RedisProcess,
  events: readonly object[],
  batch: number,
  ackBeforeDurable = false,
  rate?: number,
): Promise<HttpRun> {
  const dir = tmpDir('http');
  const server = await startHttpServer({
    config: loadConfig({
      REDIS_URL: `redis://127.0.0.1:${redis.port}`,
      QUEUE_PREFIX: `bench-http-${Date.now()}`,
      DATABASE_URL: `sqlite:${path.join(dir, 'db.sqlite')}`,
    }),
    settings: loadHttpConfig({
      HTTP_PORT: '0',
      HTTP_INGEST_KEYS: KEY,
      HTTP_JOURNAL_DIR: path.join(dir, 'journal'),
      HTTP_MAX_BATCH_EVENTS: String(batch),
      HTTP_ACK_BEFORE_DURABLE: String(ackBeforeDurable),
    }),
    logger: silent(),
  });
  try {
    const latency = new LatencyRecorder(Math.ceil(events.length / batch));
    const bodies: string[] = [];
    for (let i = 0; i < events.length; i += batch) bodies.push(JSON.stringify(events.slice(i, i + batch)));
    let next = 0;
    let accepted = 0;
    const started = process.hrtime.bigint();
    const post = async (body: string, since: bigint) => {
      const res = await fetch(`${server.url}/v1/events`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
        body,
      });
      const answer = (await res.json()) as { accepted: number };
      latency.add(Number(process.hrtime.bigint() - since));
      if (res.status !== 202) throw new Error(`POST answered ${res.status}: ${JSON.stringify(answer)}`);
      accepted += answer.accepted;
    };
    if (rate === undefined) {
      const lane = async () => {
        while (next < bodies.length) await post(bodies[next++], process.hrtime.bigint());
      };
      await Promise.all(Array.from({ length: IN_FLIGHT }, lane));
    } else {
      const everyNs = (1e9 * batch) / rate;
      const posts: Promise<void>[] = [];
      for (let i = 0; i < bodies.length; i++) {
        const due = started + BigInt(Math.round(i * everyNs));
        const waitMs = Number(due - process.hrtime.bigint()) / 1e6;
        if (waitMs > 1) await new Promise((resolve) => setTimeout(resolve, waitMs));
        posts.push(post(bodies[i], due));
      }
      await Promise.all(posts);
    }
    if (!(await server.flush(120_000))) throw new Error('the server publisher did not flush');
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    if (accepted !== events.length) throw new Error(`accepted ${accepted} of ${events.length}`);
    const { p50Us, p99Us } = latency.summary();
    return {
      eventsPerSec: Math.round(events.length / seconds),
      requestP50Ms: round(p50Us / 1_000),
      requestP99Ms: round(p99Us / 1_000),
    };
  } finally {
    await server.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

interface PyLatency {
  mode: string;
  p50Us: number;
  p99Us: number;
  p999Us: number;
  maxUs: number;
  flushed: boolean;
  accepted: number;
  journaled: number;
  dropped: number;
}

type PyMode = 'threaded' | 'asyncio';

function pythonLatency(url: string, n: number, mode: PyMode): Promise<PyLatency> {
  const dir = tmpDir('py');
  return new Promise<PyLatency>((resolve, reject) => {
    const child = spawn(
      'python3',
      [path.join(__dirname, 'support', 'python-publish-latency.py'), url, dir, String(n), mode],
      { env: { ...process.env, PLAN_LEDGER_INGEST_KEY: KEY }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('close', (code) => {
      fs.rmSync(dir, { recursive: true, force: true });
      if (code !== 0) reject(new Error(`python3 exited ${code}: ${err}`));
      else resolve(JSON.parse(out.trim().split('\n').pop()!) as PyLatency);
    });
  });
}

async function pythonUp(redis: RedisProcess, mode: PyMode): Promise<PyLatency> {
  const dir = tmpDir('pyup');
  const server = await startHttpServer({
    config: loadConfig({
      REDIS_URL: `redis://127.0.0.1:${redis.port}`,
      QUEUE_PREFIX: `bench-py-${Date.now()}`,
      DATABASE_URL: `sqlite:${path.join(dir, 'db.sqlite')}`,
    }),
    settings: loadHttpConfig({ HTTP_PORT: '0', HTTP_INGEST_KEYS: KEY, HTTP_JOURNAL_DIR: path.join(dir, 'journal') }),
    logger: silent(),
  });
  try {
    return await pythonLatency(server.url, N_PY, mode);
  } finally {
    await server.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const loadBefore = os.loadavg()[0];
  const redis = await RedisProcess.create();
  await redis.start();
  try {
    const events = manyPlanRuns(N, { seed: 3 }).slice(0, N);
    log(`http bench: ${N} events per run; redis-server on port ${redis.port}; ${IN_FLIGHT} requests in flight`);
    await baseline(redis, events.slice(0, 20_000)); // warm-up
    const tsRate = await baseline(redis, events);
    log(`TypeScript publisher (in process): ${tsRate} events/s into redis`);
    const runs: Record<string, HttpRun> = {};
    for (const batch of [100, 1_000])
      for (const early of [false, true]) {
        const run = await httpIngest(redis, events, batch, early);
        const name = `batch${batch}${early ? 'AckBeforeDurable' : ''}`;
        runs[name] = run;
        log(
          `POST /v1/events, batches of ${String(batch).padEnd(4)} ${early ? '(HTTP_ACK_BEFORE_DURABLE)' : '(202 = in Redis)         '}: ` +
            `${run.eventsPerSec} events/s into redis (${round(run.eventsPerSec / tsRate)}x the publisher), ` +
            `request p50 ${run.requestP50Ms} ms p99 ${run.requestP99Ms} ms`,
        );
      }
    // open loop, below saturation: what a request costs when the server keeps up
    const paced = events.slice(0, Math.min(events.length, PACED_RATE * 5));
    for (const early of [false, true]) {
      const run = await httpIngest(redis, paced, 100, early, PACED_RATE);
      runs[`paced100${early ? 'AckBeforeDurable' : ''}`] = run;
      log(
        `POST /v1/events, ${PACED_RATE} events/s paced, batches of 100 ${early ? '(HTTP_ACK_BEFORE_DURABLE)' : '(202 = in Redis)         '}: ` +
          `request p50 ${run.requestP50Ms} ms p99 ${run.requestP99Ms} ms`,
      );
    }
    const http100 = runs.batch100.eventsPerSec;
    const http1000 = runs.batch1000.eventsPerSec;
    const pyUp = await pythonUp(redis, 'threaded');
    log(
      `python publish() server up:   p50 ${pyUp.p50Us} us  p99 ${pyUp.p99Us} us  p99.9 ${pyUp.p999Us} us (${pyUp.accepted} accepted)`,
    );
    const pyDown = await pythonLatency(`http://127.0.0.1:${await freePort()}`, N_PY, 'threaded');
    log(
      `python publish() server down: p50 ${pyDown.p50Us} us  p99 ${pyDown.p99Us} us  p99.9 ${pyDown.p999Us} us (${pyDown.journaled} journaled)`,
    );
    const asyncUp = await pythonUp(redis, 'asyncio');
    log(
      `python asyncio publish() up:   p50 ${asyncUp.p50Us} us  p99 ${asyncUp.p99Us} us  p99.9 ${asyncUp.p999Us} us (${asyncUp.accepted} accepted)`,
    );
    const asyncDown = await pythonLatency(`http://127.0.0.1:${await freePort()}`, N_PY, 'asyncio');
    log(
      `python asyncio publish() down: p50 ${asyncDown.p50Us} us  p99 ${asyncDown.p99Us} us  p99.9 ${asyncDown.p999Us} us (${asyncDown.journaled} journaled)`,
    );
    const result = {
      machine: {
        cpus: os.cpus().length,
        node: process.version,
        python: await pythonVersion(),
        loadAvgBefore: round(loadBefore),
        loadAvgAfter: round(os.loadavg()[0]),
      },
      command: `npm run bench:http${quick ? ' -- --quick' : ''}`,
      events: N,
      typescriptPublisherEventsPerSec: tsRate,
      httpIngest: runs,
      pythonPublish: { up: pyUp, down: pyDown, asyncioUp: asyncUp, asyncioDown: asyncDown },
      ratios: {
        http100OverPublisher: round(http100 / tsRate),
        http1000OverPublisher: round(http1000 / tsRate),
        durableOverEarlyAck100: round(http100 / runs.batch100AckBeforeDurable.eventsPerSec),
        durableOverEarlyAck1000: round(http1000 / runs.batch1000AckBeforeDurable.eventsPerSec),
      },
      targets: {
        http1000AtLeastHalfThePublisher: http1000 >= 0.5 * tsRate,
        requestP99AtMost25msBatch100: runs.batch100.requestP99Ms <= 25,
        requestP99AtMost25msPaced: runs.paced100.requestP99Ms <= 25,
        pythonP99UpAtMost50us: pyUp.p99Us <= 50,
        pythonP99DownAtMost50us: pyDown.p99Us <= 50,
        pythonAsyncioP99UpAtMost50us: asyncUp.p99Us <= 50,
        pythonAsyncioP99DownAtMost50us: asyncDown.p99Us <= 50,
      },
    };
    if (json) process.stdout.write(`${JSON.stringify(result)}\n`);
    else log(`ratios: ${JSON.stringify(result.ratios)}\ntargets: ${JSON.stringify(result.targets)}`);
  } finally {
    await redis.stop();
  }
}

function pythonVersion(): Promise<string> {
  return new Promise((resolve) => {
    const child = spawn('python3', ['--version']);
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.on('close', () => resolve(out.trim()));
  });
}

main().catch((err) => {
  process.stderr.write(`bench:http failed: ${(err as Error).stack}\n`);
  process.exitCode = 1;
});
