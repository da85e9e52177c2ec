/**
 * QUEUE_SHARDS on a Redis Cluster: a durable 3-master cluster started by this file (shared by every
 * test, each with its own {hash tag} prefix), real worker processes, the real publisher and CLI,
 * PostgreSQL for the events. Shards spread over the masters; a slot moving and a master restarting
 * mid-stream lose nothing; dead letters of every shard are listed and replayed.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { randomBytes } from 'node:crypto';
import { Queue } from 'bullmq';
import pino from 'pino';
import { parseClusterNodes } from '../../src/config/redis-cluster-nodes';
import type { PlanEvent } from '../../src/contracts';
import { DeadLetterWriter } from '../../src/dead-letters/dead-letter-writer';
import { PlanEventPublisher } from '../../src/publisher';
import { createRedis, RedisClient } from '../../src/queue/connect-redis';
import { DEAD_LETTER_QUEUE, EVENT_BATCH_JOB, EVENTS_QUEUE, MAINTENANCE_QUEUE } from '../../src/queue/queue-names';
import { queueShards, shardOfPlan } from '../../src/queue/queue-shards';
import { startWorker } from '../../src/worker/start-worker';
import { letter } from '../dead-letters/dead-letter.fixtures';
import { runCli } from '../support/cli';
import { createMigratedDb } from '../support/databases';
import { exactlyEvents, invalidEvent } from '../support/event-factory';
import { RedisCluster } from '../support/redis-cluster';
import { countRows, silentLogger, waitFor } from '../worker/helpers/queue-harness';
import { spawnWorker, stopProcess, WorkerProcess } from '../worker/helpers/worker-process';

jest.setTimeout(180_000);

const SHARDS = 6;
let cluster: RedisCluster;
let admin: RedisClient;
const cleanups: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  cluster = await RedisCluster.start(3, { durable: true });
  admin = createRedis({ redisUrl: '', redisClusterNodes: parseClusterNodes(cluster.nodes) }, 'worker');
});

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

afterAll(async () => {
  await admin?.quit().catch(() => admin.disconnect());
  await cluster?.destroy();
});

function clusterPrefix(): string {
  return `{pls-${randomBytes(4).toString('hex')}}`;
}

async function migratedPostgres() {
  const db = await createMigratedDb('postgres');
  cleanups.push(() => db.close());
  return db;
}

function newPublisher(prefix: string): PlanEventPublisher {
  const journalDir = fs.mkdtempSync(path.join(os.tmpdir(), 'plan-ledger-shards-journal-'));
  const publisher = new PlanEventPublisher({
    redisClusterNodes: cluster.nodes,
    queuePrefix: prefix,
    queueShards: SHARDS,
    journalDir,
    logger: pino({ level: 'silent' }),
  });
  cleanups.push(async () => {
    try {
      await publisher.close(5_000);
    } finally {
      fs.rmSync(journalDir, { recursive: true, force: true });
    }
  });
  return publisher;
}

function clusterWorkers(n: number, prefix: string, databaseUrl: string, env: Record<string, string> = {}) {
  const procs: WorkerProcess[] = [];
  for (let i = 0; i < n; i++) {
    const proc = spawnWorker({
      REDIS_CLUSTER_NODES: cluster.nodes,
      QUEUE_PREFIX: prefix,
      QUEUE_SHARDS: String(SHARDS),
      DATABASE_URL: databaseUrl,
      SHUTDOWN_TIMEOUT_MS: '5000',
      ...env,
    });
    procs.push(proc);
    cleanups.push(() => stopProcess(proc));
  }
  return procs;
}

/** Removes every key of the prefix's shards after the test. */
function dropShardsAfter(prefix: string): void {
  for (const shard of queueShards(prefix, SHARDS))
    for (const name of [EVENTS_QUEUE, DEAD_LETTER_QUEUE, MAINTENANCE_QUEUE]) {
      const queue = new Queue(name, { connection: admin, prefix: shard.prefix });
      cleanups.push(async () => {
        await queue.obliterate({ force: true }).catch(() => undefined);
        await queue.close();
      });
    }
}

async function publishPaced(publisher: PlanEventPublisher, events: PlanEvent[], during?: (i: number) => Promise<void>) {
  for (let i = 0; i < events.length; i += 1_000) {
    for (const event of events.slice(i, i + 1_000)) {
      const r = publisher.publish(event);
      if (!r.ok) throw new Error(`publish refused ${event.eventId}: ${r.reason}`);
    }
    await new Promise((r) => setTimeout(r, 5));
    await during?.(i);
  }
}

async function storedExactlyOnce(ds: { query(sql: string): Promise<Array<{ n: number; distinct: number }>> }) {
  const [row] = await ds.query(`SELECT count(*)::int AS n, count(DISTINCT event_id)::int AS distinct FROM plan_events`);
  return row;
}

async function stopAll(procs: WorkerProcess[]): Promise<Array<number | string>> {
  for (const p of procs) p.child.kill('SIGTERM');
  return Promise.all(
    procs.map(async (p) => {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<string>((resolve) => (timer = setTimeout(() => resolve('still running'), 20_000)));
      const code = await Promise.race([p.exited, late]).finally(() => clearTimeout(timer));
      if (code !== 0)
        console.error(
          `worker ${p.pid} exited with ${code}:\n${p.stdout().split('\n').slice(-15).join('\n')}${p.stderr()}`,
        );
      return code;
    }),
  );
}

/** The master port serving each shard's keys. */
async function mastersOfShards(prefix: string): Promise<number[]> {
  return Promise.all(
    queueShards(prefix, SHARDS).map(async (s) =>
      cluster.ownerOf(await cluster.keySlot(`${s.prefix}:${EVENTS_QUEUE}:meta`)),
    ),
  );
}

describe(`QUEUE_SHARDS=${SHARDS} on a 3-master Redis Cluster`, () => {
  it('the shards land on every master; 100k events through the publisher and two worker processes are stored exactly once', async () => {
    const prefix = clusterPrefix();
    dropShardsAfter(prefix);
    const masters = await mastersOfShards(prefix);
    expect(new Set(masters).size).toBeGreaterThanOrEqual(2);
    // each shard's slot is placed at an even distance around the ring: two per master here
    expect(cluster.ports.map((p) => masters.filter((m) => m === p).length)).toEqual([2, 2, 2]);

    const { db, ds } = await migratedPostgres();
    const workers = clusterWorkers(2, prefix, db.url);
    await Promise.all(workers.map((w) => w.waitForLog('worker started')));
    const publisher = newPublisher(prefix);
    const events = exactlyEvents(100_000, { seed: 31 });
    await publishPaced(publisher, events);
    expect(await publisher.flush(60_000)).toBe(true);
    // the keys of the queue are on every master while it works
    for (const port of cluster.ports) {
      const r = createRedis({ redisUrl: `redis://127.0.0.1:${port}` }, 'command');
      try {
        expect((await r.keys(`${prefix.slice(0, -1)}*`)).length).toBeGreaterThan(0);
      } finally {
        r.disconnect();
      }
    }
    await waitFor(
      '100k events stored',
      async () => (await countRows(ds, 'plan_events')) >= events.length,
      150_000,
      500,
    );
    expect(await storedExactlyOnce(ds)).toEqual({ n: 100_000, distinct: 100_000 });
    expect(publisher.stats()).toMatchObject({ published: 100_000, dropped: 0, redisReady: true });
    expect(await stopAll(workers)).toEqual([0, 0]);
    const inserted = workers
      .flatMap((w) => w.logs())
      .filter((l) => l.msg === 'batch committed')
      .reduce((sum, l) => sum + (l.inserted as number), 0);
    expect(inserted).toBe(100_000);
    for (const w of workers) expect(w.stdout() + w.stderr()).not.toMatch(/MOVED|CROSSSLOT/);
  });

  it("moving one shard's slot to another master mid-stream loses nothing", async () => {
    const prefix = clusterPrefix();
    dropShardsAfter(prefix);
    const { db, ds } = await migratedPostgres();
    const workers = clusterWorkers(2, prefix, db.url);
    await Promise.all(workers.map((w) => w.waitForLog('worker started')));
    const publisher = newPublisher(prefix);
    const shard = queueShards(prefix, SHARDS)[3];
    const slot = await cluster.keySlot(`${shard.prefix}:${EVENTS_QUEUE}:meta`);
    const from = await cluster.ownerOf(slot);
    const to = cluster.ports.find((p) => p !== from)!;
    const events = exactlyEvents(15_000, { seed: 37 });
    let moved = -1;
    await publishPaced(publisher, events, async (i) => {
      if (i === 5_000) moved = await cluster.moveSlot(slot, to);
    });
    expect(moved).toBeGreaterThan(0);
    for (const port of cluster.ports) expect(await cluster.ownerOf(slot, port)).toBe(to);
    expect(await publisher.flush(60_000)).toBe(true);
    await waitFor('every event stored', async () => (await countRows(ds, 'plan_events')) >= events.length, 90_000, 250);
    expect(await storedExactlyOnce(ds)).toEqual({ n: events.length, distinct: events.length });
    expect(publisher.stats()).toMatchObject({ published: events.length, dropped: 0 });
    expect(await stopAll(workers)).toEqual([0, 0]);
  });

  it('restarting a master mid-stream loses nothing', async () => {
    const prefix = clusterPrefix();
    dropShardsAfter(prefix);
    const { db, ds } = await migratedPostgres();
    // a short lock: a job whose completion the restart cut off comes back soon
    const workers = clusterWorkers(2, prefix, db.url, { WORKER_LOCK_MS: '5000' });
    await Promise.all(workers.map((w) => w.waitForLog('worker started')));
    const publisher = newPublisher(prefix);
    const masters = await mastersOfShards(prefix);
    const restarted = masters[1];
    const events = exactlyEvents(15_000, { seed: 41 });
    await publishPaced(publisher, events, async (i) => {
      if (i === 5_000) await cluster.restartMaster(restarted);
    });
    expect(await publisher.flush(90_000)).toBe(true);
    await waitFor(
      'every event stored',
      async () => (await countRows(ds, 'plan_events')) >= events.length,
      120_000,
      250,
    );
    expect(await storedExactlyOnce(ds)).toEqual({ n: events.length, distinct: events.length });
    expect(publisher.stats()).toMatchObject({ published: events.length, dropped: 0 });
    expect(await stopAll(workers)).toEqual([0, 0]);
  });

  it('dead letters of every shard are listed (all, and by --shard) and replayed to their shards', async () => {
    const prefix = clusterPrefix();
    dropShardsAfter(prefix);
    const { db, ds } = await migratedPostgres();
    const config = {
      redisUrl: '',
      redisClusterNodes: parseClusterNodes(cluster.nodes),
      queuePrefix: prefix,
      queueShards: SHARDS,
      database: db.target,
    };
    const worker = await startWorker({
      config,
      logger: silentLogger(),
      dataSource: ds,
      settings: { healthPort: null },
    });
    cleanups.push(() => worker.close(5_000));
    // an invalid event on every shard's queue: the worker dead-letters each, all in one place
    for (const shard of queueShards(prefix, SHARDS)) {
      const queue = new Queue(EVENTS_QUEUE, { connection: admin, prefix: shard.prefix });
      await queue.add(EVENT_BATCH_JOB, { v: 1, events: [invalidEvent(shard.index + 1)] });
      await queue.close();
    }
    await waitFor('six invalid events dead-lettered', () => worker.stats().deadLettered === SHARDS, 30_000);
    // and events of plans on every shard, dead-lettered while their database was down
    const valid = exactlyEvents(1_500, { seed: 43 });
    const writer = new DeadLetterWriter(admin, prefix);
    await writer.write(valid.map((e) => letter({ event: e, planId: e.planId, type: e.type, eventId: e.eventId })));
    await writer.close();
    const perShard = queueShards(prefix, SHARDS).map((s) =>
      valid.filter((e) => shardOfPlan(e.planId, SHARDS) === s.index),
    );
    for (const list of perShard) expect(list.length).toBeGreaterThan(0);

    const env = {
      REDIS_CLUSTER_NODES: cluster.nodes,
      QUEUE_PREFIX: prefix,
      QUEUE_SHARDS: String(SHARDS),
      DATABASE_URL: db.url,
    };
    const stats = await runCli(['dlq', 'stats', '--json'], env);
    expect({ code: stats.code, stderr: stats.stderr }).toEqual({ code: 0, stderr: '' });
    expect(JSON.parse(stats.stdout)).toMatchObject({ total: SHARDS + valid.length });
    for (const [index, list] of perShard.entries()) {
      const listed = await runCli(
        ['dlq', 'list', '--kind', 'retries-exhausted', '--shard', String(index), '--limit', '1000', '--json'],
        env,
      );
      expect({ code: listed.code, stderr: listed.stderr }).toEqual({ code: 0, stderr: '' });
      const ids = (JSON.parse(listed.stdout).deadLetters as Array<{ eventId: string }>).map((d) => d.eventId).sort();
      expect(ids).toEqual(list.map((e) => e.eventId).sort());
    }
    const bad = await runCli(['dlq', 'list', '--shard', String(SHARDS)], env);
    expect({ code: bad.code, stderr: bad.stderr.trim() }).toEqual({
      code: 2,
      stderr: expect.stringContaining(`--shard: "${SHARDS}" is not a shard of QUEUE_SHARDS=${SHARDS}`),
    });

    const replay = await runCli(['dlq', 'replay', '--kind', 'retries-exhausted', '--wait', '--json'], env);
    expect({ code: replay.code, stderr: replay.stderr.replace(/^replay: .*\n/gm, '') }).toEqual({
      code: 0,
      stderr: '',
    });
    expect(JSON.parse(replay.stdout)).toMatchObject({ replayed: valid.length, failedAgain: 0, pending: 0 });
    expect(await countRows(ds, 'plan_events')).toBe(valid.length);
    const left = await runCli(['dlq', 'list', '--json'], env);
    expect((JSON.parse(left.stdout).deadLetters as Array<{ kind: string }>).map((d) => d.kind)).toEqual(
      new Array(SHARDS).fill('invalid'),
    );
  });
});
