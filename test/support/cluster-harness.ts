/**
 * What the Redis Cluster test files share: a cluster of their own started before the file's tests
 * (each test under its own {hash tag} prefix) and destroyed after them, an admin connection, and
 * helpers whose resources go to `cleanups`, run in reverse after each test: a migrated PostgreSQL,
 * a publisher with its own journal, worker processes, queues obliterated afterwards.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { randomBytes } from 'node:crypto';
import { Queue } from 'bullmq';
import pino from 'pino';
import { parseClusterNodes } from '../../src/config/redis-cluster-nodes';
import { PlanEventPublisher, PublisherOptions } from '../../src/publisher';
import { createRedis, RedisClient } from '../../src/queue/connect-redis';
import { spawnWorker, stopProcess, WorkerProcess } from '../worker/helpers/worker-process';
import { createMigratedDb } from './databases';
import { RedisCluster, RedisClusterOptions } from './redis-cluster';

export interface ClusterHarness {
  /** Set once the file's beforeAll has run. */
  readonly cluster: RedisCluster;
  readonly admin: RedisClient;
  readonly cleanups: Array<() => Promise<unknown>>;
  /** A hash-tag prefix no other test uses: `{<tag>-<8 hex>}`. */
  prefix(): string;
  migratedPostgres(): ReturnType<typeof createMigratedDb>;
  /** A publisher on the cluster (or on what `options` names) with a journal directory of its own. */
  newPublisher(prefix: string, options?: PublisherOptions): PlanEventPublisher;
  /** `n` worker processes on the cluster, stopped after the test. */
  workers(n: number, prefix: string, databaseUrl: string, env?: Record<string, string>): WorkerProcess[];
  /** A queue handle on the cluster, its keys obliterated after the test. */
  queue(name: string, prefix: string): Queue;
  /**
   * SIGTERM to each; their exit codes, or 'still running' for one not gone 20 s later (its last log
   * lines go to the console).
   */
  stopAll(procs: WorkerProcess[]): Promise<Array<number | string>>;
}

export function useClusterHarness(
  tag: string,
  options: RedisClusterOptions & { masters?: number } = {},
): ClusterHarness {
  let cluster: RedisCluster | undefined;
  let admin: RedisClient | undefined;
  const cleanups: Array<() => Promise<unknown>> = [];

  beforeAll(async () => {
    cluster = await RedisCluster.start(options.masters ?? 3, options);
    admin = createRedis({ redisUrl: '', redisClusterNodes: parseClusterNodes(cluster.nodes) }, 'worker');
  });
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
  });
  afterAll(async () => {
    await admin?.quit().catch(() => admin!.disconnect());
    await cluster?.destroy();
  });

  const started = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('the cluster harness is used before its beforeAll ran');
    return value;
  };

  return {
    get cluster() {
      return started(cluster);
    },
    get admin() {
      return started(admin);
    },
    cleanups,
    prefix: () => `{${tag}-${randomBytes(4).toString('hex')}}`,
    async migratedPostgres() {
      const db = await createMigratedDb('postgres');
      cleanups.push(() => db.close());
      return db;
    },
    newPublisher(prefix, publisherOptions = { redisClusterNodes: started(cluster).nodes }) {
      const journalDir = fs.mkdtempSync(path.join(os.tmpdir(), 'plan-ledger-cluster-journal-'));
      let publisher: PlanEventPublisher;
      try {
        publisher = new PlanEventPublisher({
          ...publisherOptions,
          queuePrefix: prefix,
          journalDir,
          logger: pino({ level: 'silent' }),
        });
      } catch (err) {
        fs.rmSync(journalDir, { recursive: true, force: true });
        throw err;
      }
      cleanups.push(async () => {
        try {
          await publisher.close(5_000);
        } finally {
          fs.rmSync(journalDir, { recursive: true, force: true });
        }
      });
      return publisher;
    },
    workers(n, prefix, databaseUrl, env = {}) {
      const procs: WorkerProcess[] = [];
      for (let i = 0; i < n; i++) {
        const proc = spawnWorker({
          REDIS_CLUSTER_NODES: started(cluster).nodes,
          QUEUE_PREFIX: prefix,
          DATABASE_URL: databaseUrl,
          SHUTDOWN_TIMEOUT_MS: '5000',
          ...env,
        });
        procs.push(proc);
        cleanups.push(() => stopProcess(proc));
      }
      return procs;
    },
    queue(name, prefix) {
      const queue = new Queue(name, { connection: started(admin), prefix });
      cleanups.push(async () => {
        await queue.obliterate({ force: true }).catch(() => undefined);
        await queue.close();
      });
      return queue;
    },
    async stopAll(procs) {
      for (const p of procs) p.child.kill('SIGTERM');
      return Promise.all(
        procs.map(async (p) => {
          let timer: NodeJS.Timeout | undefined;
          const late = new Promise<string>((resolve) => (timer = setTimeout(() => resolve('still running'), 20_000)));
          const code = await Promise.race([p.exited, late]).finally(() => clearTimeout(timer));
          if (code !== 0)
            console.error(
              `worker ${p.pid} exited with ${code}; its last lines:\n${p.stdout().split('\n').slice(-15).join('\n')}${p.stderr()}`,
            );
          return code;
        }),
      );
    },
  };
}
