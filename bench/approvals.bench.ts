/**
 * `npm run bench:approvals` (`-- --help` lists the options; `-- --json` prints one JSON object).
 *
 * The latency of `POST /v1/approvals/{id}/consume` as an executor sees it: a real `plan-ledger
 * serve` (in this process, on loopback) and worker, on PostgreSQL, SQLite and MariaDB, against a
 * redis-server of its own. Per database, `--approvals` approvals are requested and decided through
 * the publisher and the worker, then consumed over HTTP: one at a time, then `--in-flight` at a
 * time (other approvals, so none is refused; neighbours of different plans), and `--in-flight` at
 * a time over approvals ten to a plan, in plan order (consumes of one plan queue on its head
 * lock). The baseline, in the same run against the same server and rows: `GET /v1/approvals/{id}` of the same approvals (a read of the row, no lock, no
 * write). Every consume must answer 200; a second consume of each answers 409. Then the store's
 * part alone: `ApprovalLedger.consume` of other approvals in this process, without HTTP.
 * Target (issue 45): consume p99 <= 20 ms.
 */
import 'reflect-metadata';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { DataSource } from 'typeorm';
import { loadConfig } from '../src/config/config';
import { argsDigest } from '../src/contracts';
import { loadHttpConfig } from '../src/http/http-config';
import { startHttpServer, type HttpServerHandle } from '../src/http/start-http-server';
import { PlanEventPublisher } from '../src/publisher';
import { createLogger } from '../src/shared/logger';
import { ApprovalLedger } from '../src/store/approvals/approval-ledger';
import { startWorker } from '../src/worker';
import { RedisProcess } from '../test/publisher/support/redis-process';
import { createMigratedDb, type TestDb } from '../test/support/databases';
import { BenchOptions } from './support/cli-options';
import { LatencyRecorder, round } from './support/latency';

const opts = new BenchOptions('npm run bench:approvals -- [options]: consume latency (see BENCHMARKS.md)', [
  { name: 'json', help: 'print one JSON object with every figure' },
  { name: 'approvals', value: 'N', help: 'approvals per database and per pass (default 1000)' },
  { name: 'in-flight', value: 'N', help: 'concurrent consumes in the second pass (default 8)' },
  { name: 'databases', value: 'list', help: 'comma-separated: postgres,sqlite,mariadb (default all three)' },
]);
const json = opts.flag('json');
const N = opts.number('approvals', 1_000);
const IN_FLIGHT = opts.number('in-flight', 8);
const DATABASES = [...opts.list('databases', ['postgres', 'sqlite', 'mariadb'] as const)] as TestDb[];
const INGEST = 'bench-ingest-key-0123456789abcdef';
const READ = 'bench-read-key-0123456789abcdef0';
const PER_PLAN = 10;
const DIGEST = argsDigest({ bench: true });
const silent = () => createLogger({ level: 'silent' });
const log = (line: string) => {
  if (!json) process.stdout.write(`${line}\n`);
};

interface Pass {
  calls: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  perSec: number;
}

/** `ids` through `call`, `inFlight` at a time; each call's latency and the rate. */
async function timed(ids: string[], inFlight: number, call: (id: string) => Promise<void>): Promise<Pass> {
  const latency = new LatencyRecorder(ids.length);
  let next = 0;
  const started = process.hrtime.bigint();
  const lane = async () => {
    while (next < ids.length) {
      const id = ids[next++];
      const t = process.hrtime.bigint();
      await call(id);
      latency.add(Number(process.hrtime.bigint() - t));
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const s = latency.summary();
  return {
    calls: s.calls,
    p50Ms: round(s.p50Us / 1_000),
    p99Ms: round(s.p99Us / 1_000),
    maxMs: round(s.maxUs / 1_000),
    perSec: Math.round(ids.length / seconds),
  };
}

/** Requests and decides `count` approvals (PER_PLAN per plan) through the publisher; resolves once all are decided. */
async function decided(publisher: PlanEventPublisher, db: { ds: DataSource }, tag: string, count: number) {
  const ids: string[] = [];
  const expiresAt = new Date(Date.now() + 3_600_000).toISOString();
  for (let p = 0; p * PER_PLAN < count; p++) {
    const planId = `bench-appr-${tag}-${p}`;
    const sessionId = `bench-sess-${tag}`;
    const steps = [{ stepId: 's1', index: 0, agentId: 'a', task: 't' }];
    publisher.publish({ type: 'plan.created', planId, sessionId, payload: { query: 'q', steps } } as never);
    for (let i = 0; i < PER_PLAN && ids.length < count; i++) {
      const approvalId = `${planId}-a${i}`;
      ids.push(approvalId);
      const seq = i + 1;
      const request = { approvalId, stepId: 's1', tool: 'send_mail', argsDigest: DIGEST, expiresAt };
      publisher.publish({ type: 'approval.requested', planId, sessionId, seq, payload: request } as never);
      const decision = { approvalId, decision: 'approve', decidedBy: 'bench' };
      publisher.publish({ type: 'approval.decided', planId, sessionId, seq, payload: decision } as never);
    }
  }
  if (!(await publisher.flush(120_000))) throw new Error('the publisher did not flush');
  const until = Date.now() + 300_000;
  for (;;) {
    const [{ n }] = await db.ds.query(
      `SELECT COUNT(*) AS n FROM approvals WHERE decision IS NOT NULL AND approval_id LIKE 'bench-appr-${tag}-%'`,
    );
    if (Number(n) >= count) return ids;
    if (Date.now() > until) throw new Error(`${n} of ${count} approvals decided after 300 s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The ids of `decided` (plan by plan) reordered so that neighbours belong to different plans. */
function acrossPlans(ids: string[]): string[] {
  const byIndex = (id: string) => Number(id.slice(id.lastIndexOf('-a') + 2));
  return ids
    .map((id, i) => ({ id, i }))
    .sort((a, b) => byIndex(a.id) - byIndex(b.id) || a.i - b.i)
    .map((x) => x.id);
}

async function request(server: HttpServerHandle, method: string, route: string, key: string, body?: object) {
  const res = await fetch(`${server.url}${route}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  await res.arrayBuffer();
  return res.status;
}

async function onDatabase(redis: RedisProcess, kind: TestDb) {
  const db = await createMigratedDb(kind);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plan-ledger-bench-appr-'));
  const config = loadConfig({ REDIS_URL: redis.url, QUEUE_PREFIX: path.basename(dir), DATABASE_URL: db.db.url });
  const worker = await startWorker({ config, dataSource: db.ds, logger: silent(), settings: { healthPort: null } });
  const publisher = new PlanEventPublisher({
    redisUrl: redis.url,
    queuePrefix: path.basename(dir),
    journalDir: path.join(dir, 'publisher'),
    logger: silent(),
  });
  const server = await startHttpServer({
    config,
    settings: loadHttpConfig({
      HTTP_PORT: '0',
      HTTP_INGEST_KEYS: INGEST,
      HTTP_READ_KEYS: READ,
      HTTP_JOURNAL_DIR: path.join(dir, 'journal'),
    }),
    logger: silent(),
  });
  try {
    const sequential = await decided(publisher, db, 'one', N);
    // in flight: approvals of different plans (a plan's consumes queue on its head lock), then of one plan
    const concurrent = acrossPlans(await decided(publisher, db, 'many', N));
    const samePlan = await decided(publisher, db, 'same', N);
    const direct = await decided(publisher, db, 'direct', N);
    const expect = (want: number) => async (status: Promise<number>) => {
      const got = await status;
      if (got !== want) throw new Error(`answered ${got}, not ${want}`);
    };
    const consume = (id: string) =>
      request(server, 'POST', `/v1/approvals/${id}/consume`, INGEST, { argsDigest: DIGEST, consumer: 'bench' });
    const read = (id: string) => request(server, 'GET', `/v1/approvals/${id}`, READ);
    // warm-up: the connection pool, the JIT
    for (const id of sequential.slice(0, 50)) await expect(200)(read(id));
    const getOne = await timed(sequential, 1, (id) => expect(200)(read(id)));
    const consumeOne = await timed(sequential, 1, (id) => expect(200)(consume(id)));
    const getMany = await timed(concurrent, IN_FLIGHT, (id) => expect(200)(read(id)));
    const consumeMany = await timed(concurrent, IN_FLIGHT, (id) => expect(200)(consume(id)));
    const consumeSamePlan = await timed(samePlan, IN_FLIGHT, (id) => expect(200)(consume(id)));
    const refused = await timed(sequential, IN_FLIGHT, (id) => expect(409)(consume(id)));
    // the store's part alone: the same consume in this process, no HTTP
    const ledger = new ApprovalLedger(db.ds);
    const inProcess = await timed(direct, 1, async (id) => {
      const outcome = await ledger.consume(id, DIGEST, 'bench');
      if (!outcome.ok) throw new Error(`consume of ${id} refused: ${outcome.reason}`);
    });
    return {
      database: kind,
      approvals: N,
      getOne,
      consumeOne,
      getMany,
      consumeMany,
      consumeSamePlan,
      refusedAgain: refused,
      consumeInProcess: inProcess,
      ratios: {
        consumeOverGetP99: round(consumeOne.p99Ms / getOne.p99Ms),
        consumeOverGetP99InFlight: round(consumeMany.p99Ms / getMany.p99Ms),
      },
      targets: { consumeP99AtMost20Ms: Math.max(consumeOne.p99Ms, consumeMany.p99Ms) <= 20 },
    };
  } finally {
    await server.close();
    await publisher.close(5_000);
    await worker.close(10_000);
    await db.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const redis = await RedisProcess.create();
  await redis.start();
  const loadBefore = os.loadavg().map((l) => round(l));
  const results = [];
  try {
    log(`approvals bench: redis-server on port ${redis.port}; load average ${loadBefore.join(' ')}; ${N} approvals`);
    for (const kind of DATABASES) {
      const r = await onDatabase(redis, kind);
      results.push(r);
      const line = (p: Pass) => `p50 ${p.p50Ms} ms  p99 ${p.p99Ms} ms  max ${p.maxMs} ms  (${p.perSec}/s)`;
      log(`${kind}: consume, 1 at a time:   ${line(r.consumeOne)}`);
      log(`${kind}: GET (baseline), 1:       ${line(r.getOne)}`);
      log(`${kind}: consume, ${IN_FLIGHT} in flight:   ${line(r.consumeMany)}`);
      log(`${kind}: GET (baseline), ${IN_FLIGHT}:       ${line(r.getMany)}`);
      log(`${kind}: consume, ${IN_FLIGHT} in flight, ${PER_PLAN} a plan: ${line(r.consumeSamePlan)}`);
      log(`${kind}: second consume (409), ${IN_FLIGHT}: ${line(r.refusedAgain)}`);
      log(`${kind}: consume in process, no HTTP, 1: ${line(r.consumeInProcess)}`);
      log(
        `${kind}: consume p99 / GET p99: ${r.ratios.consumeOverGetP99} (1), ${r.ratios.consumeOverGetP99InFlight} (${IN_FLIGHT}); target consume p99 <= 20 ms: ${r.targets.consumeP99AtMost20Ms ? 'MET' : 'NOT MET'}`,
      );
    }
  } finally {
    await redis.destroy();
  }
  const loadAfter = os.loadavg().map((l) => round(l));
  log(`load average after: ${loadAfter.join(' ')}`);
  if (json)
    process.stdout.write(
      `${JSON.stringify({ command: 'npm run bench:approvals', loadBefore, loadAfter, results }, null, 2)}\n`,
    );
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`bench:approvals failed: ${(err as Error).stack ?? err}\n`);
    process.exit(1);
  },
);
