/**
 * QUEUE_SHARDS on a Redis Cluster: a durable 3-master cluster started by this file (shared by every
 * test, each with its own {hash tag} prefix), real worker processes, the real publisher and CLI,
 * PostgreSQL for the events. Shards spread over the masters; a slot moving and a master restarting
 * mid-stream lose nothing; dead letters of every shard are listed and replayed.
 */
import { Queue } from 'bullmq';
import { parseClusterNodes } from '../../src/config/redis-cluster-nodes';
import type { PlanEvent } from '../../src/contracts';
import { DeadLetterWriter } from '../../src/dead-letters/dead-letter-writer';
import { PlanEventPublisher } from '../../src/publisher';
import { createRedis } from '../../src/queue/connect-redis';
import { DEAD_LETTER_QUEUE, EVENT_BATCH_JOB, EVENTS_QUEUE, MAINTENANCE_QUEUE } from '../../src/queue/queue-names';
import { queueShards, shardOfPlan } from '../../src/queue/queue-shards';
import { startWorker } from '../../src/worker/start-worker';
import { letter } from '../dead-letters/dead-letter.fixtures';
import { runCli } from '../support/cli';
import { exactlyEvents, invalidEvent } from '../support/event-factory';
import { useClusterHarness } from '../support/cluster-harness';
import { countRows, silentLogger, waitFor } from '../worker/helpers/queue-harness';

jest.setTimeout(180_000);

const SHARDS = 6;
const h = useClusterHarness('pls', { durable: true });

function newPublisher(prefix: string): PlanEventPublisher {
  return h.newPublisher(prefix, { redisClusterNodes: h.cluster.nodes, queueShards: SHARDS });
}

function clusterWorkers(n: number, prefix: string, databaseUrl: string, env: Record<string, string> = {}) {
  return h.workers(n, prefix, databaseUrl, { QUEUE_SHARDS: String(SHARDS), ...env });
}

/** Removes every key of the prefix's shards after the test. */
function dropShardsAfter(prefix: string): void {
  for (const shard of queueShards(prefix, SHARDS))
    for (const name of [EVENTS_QUEUE, DEAD_LETTER_QUEUE, MAINTENANCE_QUEUE]) h.queue(name, shard.prefix);
}

async function publishPaced(
  publisher: PlanEventPublisher,
  events: PlanEvent[],
  during?: (i: number) => Promise<void>,
  pauseMs = 5,
) {
  for (let i = 0; i < events.length; i += 1_000) {
    for (const event of events.slice(i, i + 1_000)) {
      const r = publisher.publish(event);
      if (!r.ok) throw new Error(`publish refused ${event.eventId}: ${r.reason}`);
    }
    await new Promise((r) => setTimeout(r, pauseMs));
    await during?.(i);
  }
}

async function storedExactlyOnce(ds: { query(sql: string): Promise<Array<{ n: number; distinct: number }>> }) {
  const [row] = await ds.query(`SELECT count(*)::int AS n, count(DISTINCT event_id)::int AS distinct FROM plan_events`);
  return row;
}

/** The master port serving each shard's keys. */
async function mastersOfShards(prefix: string): Promise<number[]> {
  return Promise.all(
    queueShards(prefix, SHARDS).map(async (s) =>
      h.cluster.ownerOf(await h.cluster.keySlot(`${s.prefix}:${EVENTS_QUEUE}:meta`)),
    ),
  );
}

describe(`QUEUE_SHARDS=${SHARDS} on a 3-master Redis Cluster`, () => {
  it('the shards land on every master; 100k events through the publisher and two worker processes are stored exactly once; one retention schedule', async () => {
    const prefix = h.prefix();
    dropShardsAfter(prefix);
    const masters = await mastersOfShards(prefix);
    expect(new Set(masters).size).toBeGreaterThanOrEqual(2);
    // each shard's slot is placed near an even spot around the ring (within 16384/96 slots): two per
    // master, or one and three where a spot lies that close to a master's range boundary
    const perMaster = h.cluster.ports.map((p) => masters.filter((m) => m === p).length);
    expect(perMaster.filter((n) => n < 1 || n > 3)).toEqual([]);

    const { db, ds } = await h.migratedPostgres();
    const workers = clusterWorkers(2, prefix, db.url);
    await Promise.all(workers.map((w) => w.waitForLog('worker started')));
    const publisher = newPublisher(prefix);
    const events = exactlyEvents(100_000, { seed: 31 });
    await publishPaced(publisher, events);
    expect(await publisher.flush(60_000)).toBe(true);
    // the keys of the queue are on every master while it works
    for (const port of h.cluster.ports) {
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
    // retention stays one schedule on QUEUE_PREFIX, however many workers and shards
    const maintenance = new Queue(MAINTENANCE_QUEUE, { connection: h.admin, prefix });
    try {
      expect((await maintenance.getJobSchedulers()).map((s) => s.key)).toEqual(['retention']);
      expect(await maintenance.getDelayedCount()).toBe(1);
    } finally {
      await maintenance.close();
    }
    expect(await h.stopAll(workers)).toEqual([0, 0]);
    const inserted = workers
      .flatMap((w) => w.logs())
      .filter((l) => l.msg === 'batch committed')
      .reduce((sum, l) => sum + (l.inserted as number), 0);
    expect(inserted).toBe(100_000);
    for (const w of workers) expect(w.stdout() + w.stderr()).not.toMatch(/MOVED|CROSSSLOT/);
  });

  it("moving one shard's slot to another master mid-stream loses nothing", async () => {
    const prefix = h.prefix();
    dropShardsAfter(prefix);
    const { db, ds } = await h.migratedPostgres();
    const workers = clusterWorkers(2, prefix, db.url);
    await Promise.all(workers.map((w) => w.waitForLog('worker started')));
    const publisher = newPublisher(prefix);
    const shard = queueShards(prefix, SHARDS)[3];
    const slot = await h.cluster.keySlot(`${shard.prefix}:${EVENTS_QUEUE}:meta`);
    const from = await h.cluster.ownerOf(slot);
    const to = h.cluster.ports.find((p) => p !== from)!;
    const events = exactlyEvents(15_000, { seed: 37 });
    let moved = -1;
    await publishPaced(publisher, events, async (i) => {
      if (i === 5_000) moved = await h.cluster.moveSlot(slot, to);
    });
    expect(moved).toBeGreaterThan(0);
    for (const port of h.cluster.ports) expect(await h.cluster.ownerOf(slot, port)).toBe(to);
    expect(await publisher.flush(60_000)).toBe(true);
    await waitFor('every event stored', async () => (await countRows(ds, 'plan_events')) >= events.length, 90_000, 250);
    expect(await storedExactlyOnce(ds)).toEqual({ n: events.length, distinct: events.length });
    expect(publisher.stats()).toMatchObject({ published: events.length, dropped: 0 });
    expect(await h.stopAll(workers)).toEqual([0, 0]);
  });

  it('restarting a master mid-stream loses nothing', async () => {
    const prefix = h.prefix();
    dropShardsAfter(prefix);
    const { db, ds } = await h.migratedPostgres();
    // a short lock: a job whose completion the restart cut off comes back soon
    const workers = clusterWorkers(2, prefix, db.url, { WORKER_LOCK_MS: '5000' });
    await Promise.all(workers.map((w) => w.waitForLog('worker started')));
    const publisher = newPublisher(prefix);
    const masters = await mastersOfShards(prefix);
    const restarted = masters[1];
    const events = exactlyEvents(15_000, { seed: 41 });
    // the master goes down and comes back while events keep being published and consumed
    let restarting: Promise<void> | undefined;
    // 10 of the 15 chunks are published after the master went down: ~1.5 s, past its restart
    await publishPaced(
      publisher,
      events,
      async (i) => {
        if (i === 5_000) restarting = h.cluster.restartMaster(restarted);
      },
      150,
    );
    await restarting;
    expect(await publisher.flush(90_000)).toBe(true);
    await waitFor(
      'every event stored',
      async () => (await countRows(ds, 'plan_events')) >= events.length,
      120_000,
      250,
    );
    expect(await storedExactlyOnce(ds)).toEqual({ n: events.length, distinct: events.length });
    expect(publisher.stats()).toMatchObject({ published: events.length, dropped: 0 });
    expect(await h.stopAll(workers)).toEqual([0, 0]);
  });

  it('dead letters of every shard are listed (all, and by --shard) and replayed to their shards', async () => {
    const prefix = h.prefix();
    dropShardsAfter(prefix);
    const { db, ds } = await h.migratedPostgres();
    const config = {
      redisUrl: '',
      redisClusterNodes: parseClusterNodes(h.cluster.nodes),
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
    h.cleanups.push(() => worker.close(5_000));
    // an invalid event on every shard's queue: the worker dead-letters each, all in one place
    for (const shard of queueShards(prefix, SHARDS)) {
      const queue = new Queue(EVENTS_QUEUE, { connection: h.admin, prefix: shard.prefix });
      await queue.add(EVENT_BATCH_JOB, { v: 1, events: [invalidEvent(shard.index + 1)] });
      await queue.close();
    }
    await waitFor('six invalid events dead-lettered', () => worker.stats().deadLettered === SHARDS, 30_000);
    // and events of plans on every shard, dead-lettered while their database was down
    const valid = exactlyEvents(1_500, { seed: 43 });
    const writer = new DeadLetterWriter(h.admin, prefix);
    await writer.write(valid.map((e) => letter({ event: e, planId: e.planId, type: e.type, eventId: e.eventId })));
    await writer.close();
    const perShard = queueShards(prefix, SHARDS).map((s) =>
      valid.filter((e) => shardOfPlan(e.planId, SHARDS) === s.index),
    );
    for (const list of perShard) expect(list.length).toBeGreaterThan(0);

    const env = {
      REDIS_CLUSTER_NODES: h.cluster.nodes,
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
