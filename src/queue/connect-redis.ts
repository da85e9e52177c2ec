import IORedis, { Cluster, ClusterOptions, RedisOptions } from 'ioredis';
import { redactUrl } from '../config/database-url';
import { ClusterSeeds, clusterPrefixProblem, describeClusterNodes } from '../config/redis-cluster-nodes';

/**
 * The one place that builds Redis connections: every caller (publisher, worker, retention
 * scheduler, dead-letter commands, demo, health checks) asks here, so REDIS_CLUSTER_NODES switches
 * all of them to an ioredis `Cluster` at once. BullMQ takes either kind as `connection`.
 */
export type RedisClient = IORedis | Cluster;

/** Where Redis is: REDIS_URL, or the seed nodes of REDIS_CLUSTER_NODES when set (AppConfig has both). */
export interface RedisTarget {
  redisUrl: string;
  redisClusterNodes?: ClusterSeeds | null;
}

/**
 * What the connection is for; the options follow BullMQ's guides:
 * - `worker`: BullMQ Workers, Queues and the scheduler. `maxRetriesPerRequest: null` (BullMQ
 *   requires it for blocking commands) and reconnection forever.
 * - `publisher`: must never block its caller. No offline queue (a command sent while the cluster
 *   or the connection is down fails at once), no retries, no resend of commands in flight, and a
 *   command timeout: the publisher resends with the same job ids itself.
 * - `command`: one-shot processes (CLI, demo): fail fast with one readable line.
 */
export type RedisRole = 'worker' | 'publisher' | 'command';

export interface CreateRedisOptions {
  /** publisher: a command unanswered after this long fails. @defaultValue 10000 */
  commandTimeoutMs?: number;
  /** Connect timeout of each socket. @defaultValue 5000 */
  connectTimeoutMs?: number;
  /** Do not connect before `connect()` is called. @defaultValue false */
  lazyConnect?: boolean;
}

export function isCluster(client: RedisClient): client is Cluster {
  return (client as Cluster).isCluster === true;
}

/** `redis://host:port` (password hidden) or `Redis Cluster host:port,host:port`, for messages. */
export function describeRedis(target: RedisTarget): string {
  return target.redisClusterNodes
    ? `Redis Cluster ${describeClusterNodes(target.redisClusterNodes)}`
    : redactUrl(target.redisUrl);
}

/** Which variable to fix when Redis cannot be reached. */
export function redisVariable(target: RedisTarget): string {
  return target.redisClusterNodes ? 'REDIS_CLUSTER_NODES' : 'REDIS_URL';
}

function singleOptions(role: RedisRole, o: CreateRedisOptions): RedisOptions {
  const connectTimeout = o.connectTimeoutMs ?? 5_000;
  switch (role) {
    case 'worker':
      return { maxRetriesPerRequest: null, lazyConnect: o.lazyConnect ?? false };
    case 'publisher':
      return {
        enableOfflineQueue: false,
        maxRetriesPerRequest: 0,
        autoResendUnfulfilledCommands: false,
        commandTimeout: o.commandTimeoutMs ?? 10_000,
        connectTimeout,
        lazyConnect: o.lazyConnect ?? false,
        // Reconnect soon after an outage ends, without hammering a dead server: 100 ms, 200 ms, ... 2 s.
        retryStrategy: (times) => Math.min(times * 100, 2_000),
      };
    case 'command':
      return {
        lazyConnect: o.lazyConnect ?? false,
        connectTimeout,
        // A one-shot command should fail, not hang, when Redis goes away mid-run.
        maxRetriesPerRequest: 1,
        retryStrategy: (times) => (times > 3 ? null : 200 * times),
      };
  }
}

function clusterOptions(role: RedisRole, seeds: ClusterSeeds, o: CreateRedisOptions): ClusterOptions {
  const auth: RedisOptions = {
    username: seeds.username,
    password: seeds.password,
    tls: seeds.tls ? {} : undefined,
    connectTimeout: o.connectTimeoutMs ?? 5_000,
  };
  // With TLS, nodes announce IPs while certificates name hosts: connect to what the seeds say (ioredis README).
  const tls: ClusterOptions = seeds.tls ? { dnsLookup: (address, callback) => callback(null, address) } : {};
  const common: ClusterOptions = { ...tls, lazyConnect: o.lazyConnect ?? false, slotsRefreshTimeout: 2_000 };
  switch (role) {
    case 'worker':
      return {
        ...common,
        redisOptions: { ...auth, maxRetriesPerRequest: null },
        clusterRetryStrategy: (times) => Math.min(100 * times, 2_000),
      };
    case 'publisher':
      return {
        ...common,
        // Cluster-level offline queue off: while no node is reachable, a command fails at once.
        enableOfflineQueue: false,
        redisOptions: {
          ...auth,
          maxRetriesPerRequest: 0,
          autoResendUnfulfilledCommands: false,
          commandTimeout: o.commandTimeoutMs ?? 10_000,
        },
        clusterRetryStrategy: (times) => Math.min(times * 100, 2_000),
      };
    case 'command':
      return {
        ...common,
        redisOptions: { ...auth, maxRetriesPerRequest: 1 },
        clusterRetryStrategy: (times) => (times > 3 ? null : 200 * times),
      };
  }
}

/** A new connection for `role` to the single Redis or the cluster of `target`. */
export function createRedis(target: RedisTarget, role: RedisRole, options: CreateRedisOptions = {}): RedisClient {
  const seeds = target.redisClusterNodes;
  if (seeds) return new Cluster(seeds.nodes, clusterOptions(role, seeds, options));
  return new IORedis(target.redisUrl, singleOptions(role, options));
}

/** BullMQ prefixes without a `{hash tag}` cannot work on a cluster: refused before anything starts. */
export function assertClusterPrefix(prefix: string, where: RedisTarget | RedisClient): void {
  const cluster =
    'isCluster' in where || where instanceof IORedis
      ? isCluster(where as RedisClient)
      : Boolean((where as RedisTarget).redisClusterNodes);
  const problem = cluster ? clusterPrefixProblem(prefix) : null;
  if (problem) throw new Error(`QUEUE_PREFIX: ${problem}`);
}

/**
 * Throws one line when a single-node connection (REDIS_URL) reached a Redis Cluster node: its
 * commands would fail with MOVED or CROSSSLOT while the socket looks healthy.
 */
export async function assertNotClusterNode(client: RedisClient, target: RedisTarget): Promise<void> {
  if (isCluster(client)) return;
  const info = await client.info('cluster').catch(() => '');
  if (/cluster_enabled:1/.test(info)) {
    throw new Error(
      `${describeRedis(target)} is a Redis Cluster node: set REDIS_CLUSTER_NODES=host:port,... (and a {hash tag} QUEUE_PREFIX) instead of REDIS_URL`,
    );
  }
}

/**
 * A connection for one-shot processes (the CLI, the demo): fails fast with one readable line
 * when Redis is unreachable, instead of BullMQ's silent wait. Not for workers, which need
 * `maxRetriesPerRequest: null`. Takes REDIS_URL itself or a RedisTarget (AppConfig is one).
 */
/** Connects, or throws `cannot reach Redis at redis://host:port: <reason>`. */
export async function connectRedis(target: string | RedisTarget, timeoutMs = 5_000): Promise<RedisClient> {
  const t: RedisTarget = typeof target === 'string' ? { redisUrl: target } : target;
  let lastError: Error | undefined;
  const redis = createRedis(t, 'command', { lazyConnect: true, connectTimeoutMs: timeoutMs });
  redis.on('error', (err: Error) => (lastError = err));
  try {
    await redis.connect();
  } catch (err) {
    redis.disconnect();
    const reason = (lastError ?? (err as Error)).message || String(err);
    // eslint-disable-next-line preserve-caught-error -- one line for an operator: the reason is in it, the driver's error object (which may name the URL) is not
    throw new Error(`cannot reach ${t.redisClusterNodes ? '' : 'Redis at '}${describeRedis(t)}: ${reason}`);
  }
  try {
    await assertNotClusterNode(redis, t);
  } catch (err) {
    redis.disconnect();
    throw err;
  }
  return redis;
}
