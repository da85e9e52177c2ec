/**
 * `npm run bench:otlp` (`-- --json` prints one JSON object; `-- --quick` runs a smaller load;
 * `-- --rounds N` repeats the three throughput runs N times, default 3, and reports the median ratios).
 *
 * In one run, against a redis-server of its own on a spare port, with `plan-ledger serve` in this
 * process on loopback:
 * - `POST /v1/traces`: protobuf requests of 512 spans (what the SDK's batch processor sends),
 *   encoded before the clock starts, 4 in flight, spans of multi-agent runs shaped by the GenAI
 *   conventions; spans/s and resulting events/s until every trace was mapped and the server
 *   publisher confirmed every event in Redis. The traces are mapped as soon as the last request is
 *   answered (the assembler's `flushDue(true)`), so the quiet time (OTLP_TRACE_QUIET_MS) is not in it;
 *   it is set long (THROUGHPUT_QUIET_MS) so that no trace is mapped before its last span came, however
 *   slowly a loaded machine answers.
 * - OTLP/gRPC `TraceService/Export` with the very same protobuf messages, 4 calls in flight on one
 *   grpc-js channel, measured the same way.
 * - `POST /v1/events` with the very events the traces map to, in batches of 1,000, 4 in flight:
 *   the baseline, events/s into Redis.
 * Each round runs the three in turn (events, HTTP, gRPC), so a load change on the machine reaches
 *   all three of a round alike; the ratios are taken per round.
 * - span-to-stored latency: with a worker on SQLite, traces sent one request at a time at a steady
 *   pace; for each trace, from sending the request holding its root span to its plan.finalized
 *   stored (`recorded_at`), which includes the quiet time.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { loadConfig } from '../src/config/config';
import { loadHttpConfig } from '../src/http/http-config';
import { startHttpServer, HttpServerHandle } from '../src/http/start-http-server';
import { encodeRequest, grpcExportPath } from '../src/otlp/otlp-codec';
import type { OtlpSpan } from '../src/otlp/otlp-span';
import { mapTrace } from '../src/otlp/span-mapping';
import { createLogger } from '../src/shared/logger';
import type { PlanEvent } from '../src/contracts';
import { startWorker } from '../src/worker';
import { createMigratedDb } from '../test/support/databases';
import { genAiRun, otlpJsonRequest } from '../test/otlp/otlp-fixtures';
import { RedisProcess } from '../test/publisher/support/redis-process';
import { round } from './support/latency';

const json = process.argv.includes('--json');
const quick = process.argv.includes('--quick');
const TRACES = quick ? 2_000 : 12_000;
const LATENCY_TRACES = quick ? 300 : 1_000;
const SPANS_PER_REQUEST = 512;
const IN_FLIGHT = 4;
const roundsAt = process.argv.indexOf('--rounds');
const ROUNDS = roundsAt > 0 ? Number(process.argv[roundsAt + 1]) : 3;
if (!Number.isInteger(ROUNDS) || ROUNDS < 1) throw new Error('--rounds takes a whole number of at least 1');
/** Quiet time of the latency run (the throughput runs map every trace once the last request is answered). */
const QUIET_MS = 200;
/** Quiet time of the throughput runs: longer than any gap between two requests of one trace. */
const THROUGHPUT_QUIET_MS = 600_000;
const KEY = 'bench-ingest-key-0123456789abcdef';
const log = (line: string) => {
  if (!json) process.stdout.write(`${line}\n`);
};
const silent = () => createLogger({ level: 'silent' });
const tmpDir = (tag: string) => fs.mkdtempSync(path.join(os.tmpdir(), `plan-ledger-bench-${tag}-`));

function traceId(i: number, run: string): string {
  return (run + i.toString(16)).padStart(32, '0').slice(-32).replace(/^0/, '1');
}

/** Spans of `n` runs, each trace's spans in end order (children first), as the SDK exports them. */
function traces(n: number, run: string): OtlpSpan[][] {
  return Array.from({ length: n }, (_, i) =>
    genAiRun(traceId(i, run), `conv-${run}-${i % 100}`).sort((a, b) => (a.endNs < b.endNs ? -1 : 1)),
  );
}

/** Protobuf bodies of 512 spans each, spans in the order given. */
function protobufBodies(spans: OtlpSpan[]): Uint8Array<ArrayBuffer>[] {
  const bodies: Uint8Array<ArrayBuffer>[] = [];
  for (let i = 0; i < spans.length; i += SPANS_PER_REQUEST) {
    const request = JSON.parse(
      JSON.stringify(otlpJsonRequest(spans.slice(i, i + SPANS_PER_REQUEST))),
      (k: string, v: unknown) =>
        (k === 'traceId' || k === 'spanId' || k === 'parentSpanId') && typeof v === 'string'
          ? Buffer.from(v, 'hex')
          : v,
    );
    bodies.push(new Uint8Array(encodeRequest(request)));
  }
  return bodies;
}

async function serve(
  redis: RedisProcess,
  dir: string,
  options: { quietMs: number; databaseUrl?: string; grpc?: boolean },
): Promise<HttpServerHandle> {
  const { quietMs, databaseUrl } = options;
  return startHttpServer({
    config: loadConfig({
      REDIS_URL: `redis://127.0.0.1:${redis.port}`,
      QUEUE_PREFIX: path.basename(dir),
      DATABASE_URL: databaseUrl ?? `sqlite:${path.join(dir, 'db.sqlite')}`,
    }),
    settings: loadHttpConfig({
      HTTP_PORT: '0',
      HTTP_INGEST_KEYS: KEY,
      HTTP_JOURNAL_DIR: path.join(dir, 'journal'),
      HTTP_MAX_BATCH_EVENTS: '1000',
      OTLP_TRACE_QUIET_MS: String(quietMs),
      ...(options.grpc ? { OTLP_GRPC_PORT: '0' } : {}),
    }),
    logger: silent(),
  });
}

async function post(
  url: string,
  bodies: readonly (Uint8Array<ArrayBuffer> | string)[],
  contentType: string,
): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < bodies.length) {
      const body = bodies[next++];
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': contentType, authorization: `Bearer ${KEY}` },
        body,
      });
      const text = await res.text();
      if (res.status !== 200 && res.status !== 202) throw new Error(`POST ${url} answered ${res.status}: ${text}`);
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, lane));
}

async function otlpEventsPublished(server: HttpServerHandle): Promise<number> {
  const metric = await server.server.metrics.otlpEvents.get();
  return metric.values.reduce((sum, v) => sum + v.value, 0);
}

/** The protobuf messages as OTLP/gRPC Export calls, `IN_FLIGHT` at a time on one channel. */
async function exportGrpc(port: number, bodies: readonly Uint8Array[]): Promise<void> {
  const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  const raw = (b: Buffer) => b;
  const metadata = new grpc.Metadata();
  metadata.set('authorization', `Bearer ${KEY}`);
  const path = grpcExportPath('traces');
  let next = 0;
  const lane = async () => {
    while (next < bodies.length) {
      const body = Buffer.from(bodies[next++]);
      await new Promise<void>((resolve, reject) =>
        client.makeUnaryRequest(path, raw, raw, body, metadata, (err) =>
          err ? reject(new Error(`gRPC Export answered ${err.code} ${err.details}`)) : resolve(),
        ),
      );
    }
  };
  try {
    await Promise.all(Array.from({ length: IN_FLIGHT }, lane));
  } finally {
    client.close();
  }
}

/** Seconds from the first export (OTLP/HTTP or OTLP/gRPC) until every trace's events are in Redis. */
async function otlpIngest(
  redis: RedisProcess,
  bodies: Uint8Array<ArrayBuffer>[],
  events: number,
  transport: 'http' | 'grpc',
): Promise<number> {
  const dir = tmpDir(`otlp-${transport}`);
  const server = await serve(redis, dir, { quietMs: THROUGHPUT_QUIET_MS, grpc: transport === 'grpc' });
  try {
    const started = process.hrtime.bigint();
    if (transport === 'grpc') await exportGrpc(server.grpcPort!, bodies);
    else await post(`${server.url}/v1/traces`, bodies, 'application/x-protobuf');
    // every trace is complete once its last request was answered: map them now, not after the quiet time
    server.server.traces.flushDue(true);
    const deadline = Date.now() + 120_000;
    while ((await otlpEventsPublished(server)) < events) {
      if (Date.now() > deadline)
        throw new Error(`only ${await otlpEventsPublished(server)} of ${events} events mapped`);
      await new Promise((r) => setTimeout(r, 5));
    }
    if (!(await server.flush(120_000))) throw new Error('the server publisher did not flush');
    return Number(process.hrtime.bigint() - started) / 1e9;
  } finally {
    await server.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function eventsIngest(redis: RedisProcess, events: PlanEvent[]): Promise<number> {
  const dir = tmpDir('events');
  const server = await serve(redis, dir, { quietMs: THROUGHPUT_QUIET_MS });
  try {
    const bodies: string[] = [];
    for (let i = 0; i < events.length; i += 1_000) bodies.push(JSON.stringify(events.slice(i, i + 1_000)));
    const started = process.hrtime.bigint();
    await post(`${server.url}/v1/events`, bodies, 'application/json');
    if (!(await server.flush(120_000))) throw new Error('the server publisher did not flush');
    return Number(process.hrtime.bigint() - started) / 1e9;
  } finally {
    await server.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** Each trace in one request of its own, one every `gapMs`; latency to its plan.finalized stored. */
async function spanToStored(redis: RedisProcess, runs: OtlpSpan[][], gapMs: number) {
  const dir = tmpDir('latency');
  const db = await createMigratedDb('sqlite');
  const server = await serve(redis, dir, { quietMs: QUIET_MS, databaseUrl: db.db.url });
  const worker = await startWorker({
    config: loadConfig({
      REDIS_URL: `redis://127.0.0.1:${redis.port}`,
      QUEUE_PREFIX: path.basename(dir),
      DATABASE_URL: db.db.url,
    }),
    dataSource: db.ds,
    logger: silent(),
    settings: { healthPort: null },
  });
  try {
    const sentAt = new Map<string, number>();
    const bodies = runs.map((spans) => protobufBodies(spans)[0]);
    for (const [i, body] of bodies.entries()) {
      sentAt.set(`otlp-${runs[i][0].traceId}`, Date.now());
      await post(`${server.url}/v1/traces`, [body], 'application/x-protobuf');
      await new Promise((r) => setTimeout(r, gapMs));
    }
    let rows: { plan_id: string; recorded_at: string | Date }[] = [];
    const deadline = Date.now() + 120_000;
    while (Date.now() < deadline) {
      rows = await db.ds.query(`SELECT plan_id, recorded_at FROM plan_events WHERE type = 'plan.finalized'`);
      if (rows.length >= runs.length) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    if (rows.length < runs.length) throw new Error(`only ${rows.length} of ${runs.length} plans stored`);
    const ms = rows
      .map(
        (r) =>
          new Date(
            typeof r.recorded_at === 'string'
              ? r.recorded_at.replace(' ', 'T') + (r.recorded_at.endsWith('Z') ? '' : 'Z')
              : r.recorded_at,
          ).getTime() - sentAt.get(r.plan_id)!,
      )
      .sort((a, b) => a - b);
    const at = (p: number) => ms[Math.min(ms.length - 1, Math.floor(ms.length * p))];
    return { traces: ms.length, p50Ms: at(0.5), p99Ms: at(0.99), maxMs: ms[ms.length - 1] };
  } finally {
    await worker.close(10_000);
    await server.close();
    await db.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

interface Round {
  eventsPerSec: number;
  http: { spansPerSec: number; eventsPerSec: number };
  grpc: { spansPerSec: number; eventsPerSec: number };
  httpToEvents: number;
  grpcToHttp: number;
}

/** One round: the events API, then OTLP/HTTP, then OTLP/gRPC, on the same load. */
async function throughputRound(
  redis: RedisProcess,
  load: { bodies: Uint8Array<ArrayBuffer>[]; spans: number; events: PlanEvent[] },
): Promise<Round> {
  const events = load.events.length;
  const eventsPerSec = Math.round(events / (await eventsIngest(redis, load.events)));
  const rates = async (transport: 'http' | 'grpc') => {
    const seconds = await otlpIngest(redis, load.bodies, events, transport);
    return { spansPerSec: Math.round(load.spans / seconds), eventsPerSec: Math.round(events / seconds) };
  };
  const http = await rates('http');
  const grpcRates = await rates('grpc');
  return {
    eventsPerSec,
    http,
    grpc: grpcRates,
    httpToEvents: round(http.eventsPerSec / eventsPerSec),
    grpcToHttp: round(grpcRates.eventsPerSec / http.eventsPerSec),
  };
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid] : round((sorted[mid - 1] + sorted[mid]) / 2);
};

async function warmUp(redis: RedisProcess, events: PlanEvent[]): Promise<void> {
  const warm = traces(200, 'b');
  const warmEvents = warm.flatMap((r) => mapTrace(r, { captureContent: false }).plans.flatMap((p) => p.events)).length;
  await otlpIngest(redis, protobufBodies(warm.flat()), warmEvents, 'http');
  await otlpIngest(redis, protobufBodies(warm.flat()), warmEvents, 'grpc');
  await eventsIngest(redis, events.slice(0, 3_000));
}

async function main(): Promise<void> {
  const loadBefore = os.loadavg()[0];
  const redis = await RedisProcess.create();
  await redis.start();
  try {
    const runs = traces(TRACES, 'a');
    const spans = runs.flat();
    const events = runs.flatMap((r) => mapTrace(r, { captureContent: false }).plans.flatMap((p) => p.events));
    const bodies = protobufBodies(spans);
    log(
      `otlp bench: ${runs.length} traces, ${spans.length} spans -> ${events.length} events; ${bodies.length} protobuf requests of <= ${SPANS_PER_REQUEST} spans; ${IN_FLIGHT} in flight; ${ROUNDS} rounds; redis-server on port ${redis.port}`,
    );
    await warmUp(redis, events);
    const rounds: Round[] = [];
    for (let i = 1; i <= ROUNDS; i++) {
      const r = await throughputRound(redis, { bodies, spans: spans.length, events });
      rounds.push(r);
      log(
        `round ${i}: POST /v1/events ${r.eventsPerSec} events/s; POST /v1/traces ${r.http.spansPerSec} spans/s = ${r.http.eventsPerSec} events/s (${r.httpToEvents}x the events API); gRPC Export ${r.grpc.spansPerSec} spans/s = ${r.grpc.eventsPerSec} events/s (${r.grpcToHttp}x OTLP/HTTP)`,
      );
    }
    const httpToEvents = median(rounds.map((r) => r.httpToEvents));
    const grpcToHttp = median(rounds.map((r) => r.grpcToHttp));
    log(
      `median ratios: OTLP/HTTP / events API ${httpToEvents} (target >= 0.5); gRPC / OTLP/HTTP ${grpcToHttp} (target >= 0.8)`,
    );
    const latency = await spanToStored(redis, traces(LATENCY_TRACES, 'c'), 5);
    log(
      `span-to-stored (SQLite worker, OTLP_TRACE_QUIET_MS=${QUIET_MS}, one trace per request every 5 ms): p50 ${latency.p50Ms} ms  p99 ${latency.p99Ms} ms  max ${latency.maxMs} ms over ${latency.traces} traces`,
    );
    const result = {
      machine: {
        cpus: os.cpus().length,
        node: process.version,
        loadAvgBefore: round(loadBefore),
        loadAvgAfter: round(os.loadavg()[0]),
      },
      command: `npm run bench:otlp${quick ? ' -- --quick' : ''}`,
      traces: runs.length,
      spans: spans.length,
      events: events.length,
      rounds,
      ratio: httpToEvents,
      grpcToHttp,
      spanToStored: { ...latency, quietMs: QUIET_MS },
      targets: { otlpAtLeastHalfTheEventsApi: httpToEvents >= 0.5, grpcAtLeast80PercentOfHttp: grpcToHttp >= 0.8 },
    };
    if (json) process.stdout.write(`${JSON.stringify(result)}\n`);
    else log(`targets: ${JSON.stringify(result.targets)}`);
  } finally {
    await redis.stop();
  }
}

main().catch((err) => {
  process.stderr.write(`bench:otlp failed: ${(err as Error).stack}\n`);
  process.exitCode = 1;
});
