/**
 * plan-ledger on a Redis Cluster: a 3-master cluster started by this file on free loopback ports
 * (shared by every test, each with its own {hash tag} prefix), real worker processes, the real
 * publisher and the real CLI, PostgreSQL for the events.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { parseClusterNodes } from '../../src/config/redis-cluster-nodes';
import type { PlanEvent } from '../../src/contracts';
import { DeadLetterWriter } from '../../src/dead-letters/dead-letter-writer';
import { PlanEventPublisher, PublisherConfigError } from '../../src/publisher';
import { createRedis } from '../../src/queue/connect-redis';
import { EVENT_BATCH_JOB, EVENTS_QUEUE, MAINTENANCE_QUEUE } from '../../src/queue/queue-names';
import { retentionPolicy } from '../../src/retention/retention-config';
import { RETENTION_JOB, startRetentionScheduler } from '../../src/retention/retention-scheduler';
import type { RetentionReport } from '../../src/retention/retention-report';
import { startWorker } from '../../src/worker/start-worker';
import { letter } from '../dead-letters/dead-letter.fixtures';
import { DAY, insertPlans } from '../retention/plan-fixtures';
import { runCli } from '../support/cli';
import { exactlyEvents, invalidEvent } from '../support/event-factory';
import { useClusterHarness } from '../support/cluster-harness';
import { countRows, silentLogger, waitFor } from '../worker/helpers/queue-harness';

jest.setTimeout(120_000);

const h = useClusterHarness('pl');

function publishAll(publisher: PlanEventPublisher, events: PlanEvent[]): void {
  for (const event of events) {
    const r = publisher.publish(event);
    if (!r.ok) throw new Error(`publish refused ${event.eventId}: ${r.reason}`);
  }
}

describe('plan-ledger on Redis Cluster', () => {
  it('20k events through the publisher and two worker processes are stored exactly once; one retention schedule', async () => {
    const prefix = h.prefix();
    const { db, ds } = await h.migratedPostgres();
    const workers = h.workers(2, prefix, db.url);
    await Promise.all(workers.map((w) => w.waitForLog('worker started')));
    const publisher = h.newPublisher(prefix);
    const events = exactlyEvents(20_000, { seed: 17 });
    publishAll(publisher, events);
    expect(await publisher.flush(60_000)).toBe(true);
    await waitFor('20k events stored', async () => (await countRows(ds, 'plan_events')) >= events.length, 90_000, 250);

    const [{ n, distinct }] = await ds.query(
      `SELECT count(*)::int AS n, count(DISTINCT event_id)::int AS distinct FROM plan_events`,
    );
    expect({ n, distinct }).toEqual({ n: 20_000, distinct: 20_000 });
    expect(publisher.stats()).toMatchObject({ published: 20_000, dropped: 0, redisReady: true });
    const maintenance = h.queue(MAINTENANCE_QUEUE, prefix);
    expect((await maintenance.getJobSchedulers()).map((s) => s.key)).toEqual(['retention']);
    expect(await maintenance.getDelayedCount()).toBe(1); // two workers upserted it: one next run
    h.queue(EVENTS_QUEUE, prefix);

    expect(await h.stopAll(workers)).toEqual([0, 0]);
    const inserted = workers
      .flatMap((w) => w.logs())
      .filter((l) => l.msg === 'batch committed')
      .reduce((sum, l) => sum + (l.inserted as number), 0);
    expect(inserted).toBe(20_000);
    for (const w of workers) expect(w.stdout() + w.stderr()).not.toMatch(/MOVED|CROSSSLOT/);
  });

  it('moving the queue slot to another master mid-stream loses nothing and leaves no worker stuck', async () => {
    const prefix = h.prefix();
    const { db, ds } = await h.migratedPostgres();
    const workers = h.workers(2, prefix, db.url);
    await Promise.all(workers.map((w) => w.waitForLog('worker started')));
    const publisher = h.newPublisher(prefix);
    const slot = await h.cluster.keySlot(`${prefix}:${EVENTS_QUEUE}:meta`);
    const before = await h.cluster.ownerOf(slot);
    const target = h.cluster.ports.find((p) => p !== before)!;

    const events = exactlyEvents(12_000, { seed: 23 });
    let moved = -1;
    for (let i = 0; i < events.length; i += 500) {
      publishAll(publisher, events.slice(i, i + 500));
      await new Promise((r) => setTimeout(r, 20));
      // the slot moves while jobs are waiting, active and being added
      if (i === 3_000) moved = await h.cluster.moveSlot(slot, target);
    }
    expect(moved).toBeGreaterThan(0);
    for (const port of h.cluster.ports) expect(await h.cluster.ownerOf(slot, port)).toBe(target);
    expect(await publisher.flush(60_000)).toBe(true);
    await waitFor('every event stored', async () => (await countRows(ds, 'plan_events')) >= events.length, 90_000, 250);
    expect(publisher.stats()).toMatchObject({ published: events.length, dropped: 0, redisReady: true });

    // each worker alone stores a new wave after the move: none is stuck on the old owner
    const waves = [exactlyEvents(300, { seed: 91 }), exactlyEvents(300, { seed: 92 })];
    let expected = events.length;
    for (const [i, wave] of waves.entries()) {
      const other = workers[1 - i];
      process.kill(other.pid, 'SIGSTOP');
      try {
        publishAll(publisher, wave);
        expected += wave.length;
        await waitFor(
          `wave ${i + 1} stored by worker ${i + 1} alone`,
          async () => (await countRows(ds, 'plan_events')) >= expected,
          30_000,
          100,
        );
      } finally {
        process.kill(other.pid, 'SIGCONT');
      }
    }
    expect(await countRows(ds, 'plan_events')).toBe(expected);
    h.queue(EVENTS_QUEUE, prefix);
    h.queue(MAINTENANCE_QUEUE, prefix);
    expect(await h.stopAll(workers)).toEqual([0, 0]);
    for (const w of workers) expect(w.logs().filter((l) => l.msg === 'worker stopped with an error')).toEqual([]);
  }, 300_000); // each wait above fails with its own message before this

  it('dlq list / stats / replay work on the cluster', async () => {
    const prefix = h.prefix();
    const { db, ds } = await h.migratedPostgres();
    const config = {
      redisUrl: '',
      redisClusterNodes: parseClusterNodes(h.cluster.nodes),
      queuePrefix: prefix,
      database: db.target,
    };
    const worker = await startWorker({
      config,
      logger: silentLogger(),
      dataSource: ds,
      settings: { healthPort: null },
    });
    h.cleanups.push(() => worker.close(5_000));
    const events = h.queue(EVENTS_QUEUE, prefix);
    await events.add(EVENT_BATCH_JOB, { v: 1, events: [invalidEvent(5)] });
    await waitFor('the invalid event dead-lettered', () => worker.stats().deadLettered === 1, 30_000);
    // /readyz's Redis check is a command on the queue's keys, answered through the cluster
    expect(await worker.readiness()).toMatchObject({ ready: true, checks: { redis: { ok: true } } });
    // a dead letter whose event is valid (its database was down): replay stores it
    const writer = new DeadLetterWriter(h.admin, prefix);
    const [valid] = exactlyEvents(1, { seed: 3 });
    const retried = letter({ event: valid, planId: valid.planId, type: valid.type, eventId: valid.eventId });
    await writer.write([retried]);
    await writer.close();

    const env = { REDIS_CLUSTER_NODES: h.cluster.nodes, QUEUE_PREFIX: prefix, DATABASE_URL: db.url };
    const [list, stats] = await Promise.all([
      runCli(['dlq', 'list', '--json'], env),
      runCli(['dlq', 'stats', '--json'], env),
    ]);
    expect({ code: list.code, stderr: list.stderr }).toEqual({ code: 0, stderr: '' });
    const listed = JSON.parse(list.stdout).deadLetters as Array<{ id: string; kind: string }>;
    expect(listed.map((d) => d.kind).sort()).toEqual(['invalid', 'retries-exhausted']);

    expect({ code: stats.code, stderr: stats.stderr }).toEqual({ code: 0, stderr: '' });
    expect(JSON.parse(stats.stdout)).toMatchObject({ total: 2 });

    const replay = await runCli(['dlq', 'replay', retried.id, '--wait'], env);
    expect({ code: replay.code, stderr: replay.stderr }).toEqual({ code: 0, stderr: '' });
    await waitFor(
      'the replayed event stored',
      async () =>
        (await ds.query(`SELECT count(*)::int AS n FROM plan_events WHERE event_id = $1`, [valid.eventId]))[0].n === 1,
      30_000,
    );
    const after = await runCli(['dlq', 'list', '--json'], env);
    expect((JSON.parse(after.stdout).deadLetters as Array<{ kind: string }>).map((d) => d.kind)).toEqual(['invalid']);
    h.queue('plan-events-dead', prefix);
  });

  it('the retention scheduler keeps one schedule however many workers upsert it, and runs retention', async () => {
    const prefix = h.prefix();
    const { ds } = await h.migratedPostgres();
    const plan = {
      id: `cluster-due-${randomBytes(3).toString('hex')}`,
      status: 'completed' as const,
      completedAt: new Date(Date.now() - 40 * DAY),
    };
    await insertPlans(ds, [plan]);
    const redisClusterNodes = parseClusterNodes(h.cluster.nodes);
    for (let i = 0; i < 3; i++) {
      const scheduler = await startRetentionScheduler({
        redisClusterNodes,
        prefix,
        dataSource: ds,
        policy: retentionPolicy(),
        runWorker: i === 0,
      });
      h.cleanups.push(() => scheduler.close());
    }
    const queue = h.queue(MAINTENANCE_QUEUE, prefix);
    expect(await queue.getJobSchedulersCount()).toBe(1);
    expect(await queue.getDelayedCount()).toBe(1);
    const job = await queue.add(RETENTION_JOB, { v: 1 });
    await waitFor('the retention job done', async () => ['completed', 'failed'].includes(await job.getState()), 30_000);
    const done = (await queue.getJob(job.id!))!;
    expect(done.failedReason).toBeUndefined();
    expect((done.returnvalue as RetentionReport).plans.softDeleted).toBe(1);
  });

  it('refuses a prefix without a {hash tag} at start-up, in one line', async () => {
    const line =
      'QUEUE_PREFIX: "plan-ledger" has no {hash tag}: on Redis Cluster every key of a queue must hash to one slot (BullMQ\'s scripts touch several keys at once, else CROSSSLOT), so use e.g. QUEUE_PREFIX={plan-ledger}';
    const commands = [['dlq', 'stats'], ['worker'], ['retention', 'run', '--dry-run']];
    const bad = runCli(['dlq', 'stats'], { REDIS_CLUSTER_NODES: '127.0.0.1', QUEUE_PREFIX: '{x}' });
    const results = await Promise.all(
      commands.map((args) =>
        runCli(args, { REDIS_CLUSTER_NODES: h.cluster.nodes, QUEUE_PREFIX: 'plan-ledger', HEALTH_PORT: 'off' }),
      ),
    );
    results.forEach((r, i) => {
      expect({ args: commands[i], code: r.code, stderr: r.stderr }).toEqual({
        args: commands[i],
        code: 2,
        stderr: `plan-ledger: invalid configuration: ${line}\n`,
      });
    });
    expect(() => h.newPublisher('plan-ledger')).toThrow(PublisherConfigError);
    expect(() => h.newPublisher('plan-ledger')).toThrow(
      `invalid PlanEventPublisher options: queuePrefix ${line.slice('QUEUE_PREFIX: '.length)}`,
    );
    const config = {
      redisUrl: '',
      redisClusterNodes: parseClusterNodes(h.cluster.nodes),
      queuePrefix: 'plan-ledger',
      database: { driver: 'better-sqlite3' } as never,
    };
    await expect(startWorker({ config, logger: silentLogger(), settings: { healthPort: null } })).rejects.toThrow(line);
    const badResult = await bad;
    expect({ code: badResult.code, stderr: badResult.stderr }).toEqual({
      code: 2,
      stderr:
        'plan-ledger: invalid configuration: REDIS_CLUSTER_NODES: "127.0.0.1" needs a host and a port; expected host:port,host:port,... (an entry may be written as in REDIS_URL, e.g. rediss://host:port, to carry credentials and TLS)\n',
    });
  });

  it("REDIS_URL on a cluster node: commands say to use REDIS_CLUSTER_NODES, and the publisher reports not ready; a caller's Cluster works", async () => {
    const prefix = h.prefix();
    const owner = await h.cluster.ownerOf(await h.cluster.keySlot(`${prefix}:${EVENTS_QUEUE}:meta`));
    const elsewhere = h.cluster.ports.find((p) => p !== owner)!;
    const redisUrl = `redis://127.0.0.1:${elsewhere}`;
    const r = await runCli(['dlq', 'stats'], { REDIS_URL: redisUrl, QUEUE_PREFIX: prefix });
    expect({ code: r.code, stderr: r.stderr }).toEqual({
      code: 1,
      stderr: `plan-ledger: ${redisUrl} is a Redis Cluster node: set REDIS_CLUSTER_NODES=host:port,... (and a {hash tag} QUEUE_PREFIX) instead of REDIS_URL\n`,
    });

    // every command of this single-node link answers MOVED: open socket, not ready
    const single = h.newPublisher(prefix, { redisUrl });
    const onCluster = h.newPublisher(h.prefix());
    const [a, b] = [exactlyEvents(10, { seed: 7 }), exactlyEvents(10, { seed: 8 })];
    publishAll(single, a);
    publishAll(onCluster, b);
    expect(await onCluster.flush(10_000)).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(single.stats()).toMatchObject({ redisReady: false, published: 0, dropped: 0 });
    expect(onCluster.stats()).toMatchObject({ redisReady: true, published: 10 });

    // or a ready Cluster of the caller's own, which close() leaves open
    const own = createRedis({ redisUrl: '', redisClusterNodes: parseClusterNodes(h.cluster.nodes) }, 'publisher');
    await new Promise((resolve) => own.once('ready', resolve));
    h.cleanups.push(() => own.quit());
    const journalDir = fs.mkdtempSync(path.join(os.tmpdir(), 'plan-ledger-cluster-journal-'));
    h.cleanups.push(async () => fs.rmSync(journalDir, { recursive: true, force: true }));
    const borrowed = new PlanEventPublisher({
      connection: own,
      queuePrefix: h.prefix(),
      journalDir,
      logger: pino({ level: 'silent' }),
    });
    publishAll(borrowed, exactlyEvents(10, { seed: 9 }));
    expect(await borrowed.flush(10_000)).toBe(true);
    expect(borrowed.stats()).toMatchObject({ redisReady: true, published: 10 });
    await borrowed.close(5_000);
    expect(await own.ping()).toBe('PONG');
  });
});
