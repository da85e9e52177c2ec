import { parseDatabaseUrl, DatabaseTarget, DEFAULT_SQLITE_FILE, redactUrl, withPassword } from './database-url';
import { type Env, read } from './env-readers';
import { ClusterSeeds, clusterPrefixProblem, parseClusterNodes } from './redis-cluster-nodes';
import { PlanLedgerError } from '../shared/errors';
import { MAX_QUEUE_SHARDS, parseQueueShards, parseWorkerShards } from './queue-shard-settings';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Start-up configuration, validated once and frozen. Every field documents its default. */
export interface AppConfig {
  /** DATABASE_URL. @defaultValue `sqlite:./data/plan-ledger.sqlite` */
  database: DatabaseTarget;
  /** REDIS_URL. @defaultValue `redis://127.0.0.1:6379` */
  redisUrl: string;
  /**
   * REDIS_CLUSTER_NODES: seed nodes of a Redis Cluster; when set, every connection is an ioredis
   * Cluster and REDIS_URL is not used. @defaultValue null (one Redis at REDIS_URL)
   */
  redisClusterNodes: ClusterSeeds | null;
  /**
   * QUEUE_PREFIX: BullMQ key prefix; use a hash tag such as `{plan-ledger}` on Redis Cluster. @defaultValue
   * `plan-ledger`
   */
  queuePrefix: string;
  /**
   * QUEUE_SHARDS: the events queue is split into this many BullMQ queues, an event going to the shard
   * of its plan id (src/queue/queue-shards.ts). @defaultValue 1 (the unsharded key layout)
   */
  queueShards: number;
  /** WORKER_SHARDS: the shards a worker consumes, e.g. [0, 2]. @defaultValue null (every shard) */
  workerShards: number[] | null;
  /** LOG_LEVEL. @defaultValue `info` */
  logLevel: LogLevel;
}

/** Every environment variable plan-ledger reads, with what it expects; `--help` prints this. */
export const ENV_HELP: ReadonlyArray<[name: string, help: string]> = [
  [
    'DATABASE_URL',
    `sqlite:<file> | postgres:// | mysql:// | mariadb:// | mssql:// (default sqlite:${DEFAULT_SQLITE_FILE})`,
  ],
  [
    'DATABASE_PASSWORD',
    "the database password, taken as is (no URL encoding); DATABASE_URL then names only the user (default: the URL's)",
  ],
  ['REDIS_URL', 'redis://[user:pass@]host:port[/db] (default redis://127.0.0.1:6379)'],
  ['REDIS_CLUSTER_NODES', 'host:port,host:port,... seed nodes of a Redis Cluster (replaces REDIS_URL; default unset)'],
  [
    'QUEUE_PREFIX',
    'BullMQ key prefix, letters/digits/-_.{} (default plan-ledger; on a cluster a {hash tag}, e.g. {plan-ledger})',
  ],
  [
    'QUEUE_SHARDS',
    `1-${MAX_QUEUE_SHARDS}: events queues, an event going to the one of its plan id; each its own {hash tag} (default 1)`,
  ],
  ['WORKER_SHARDS', 'shards of QUEUE_SHARDS a worker consumes, e.g. 0,2 or 0-2 (default all, and older layouts)'],
  ['LOG_LEVEL', `${LOG_LEVELS.join('|')} (default info)`],
];

/** A configuration problem: one line naming every bad variable. */
export class ConfigError extends PlanLedgerError {
  override readonly name = 'ConfigError';
  readonly kind = 'config';
  constructor(readonly problems: string[]) {
    super(`invalid configuration: ${problems.join('; ')}`);
  }
}

/** Collects problems instead of stopping at the first, so one run shows every bad variable. */
class Checker {
  readonly problems: string[] = [];
  check<T>(name: string, fn: () => T): T | undefined {
    try {
      return fn();
    } catch (err) {
      this.problems.push(`${name}: ${(err as Error).message}`);
      return undefined;
    }
  }
}

export function parseRedisUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error(`"${redactUrl(raw)}" is not a URL; expected redis://host:6379`);
  }
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') {
    throw new Error(`unsupported scheme "${url.protocol}"; expected redis:// or rediss://`);
  }
  if (!url.hostname) throw new Error(`"${redactUrl(raw)}" has no host; expected redis://host:6379`);
  return raw;
}

export function loadConfig(env: Env = process.env): Readonly<AppConfig> {
  const c = new Checker();
  const database = c.check('DATABASE_URL', () =>
    parseDatabaseUrl(read(env, 'DATABASE_URL') ?? `sqlite:${DEFAULT_SQLITE_FILE}`),
  );
  const password = read(env, 'DATABASE_PASSWORD');
  const target =
    database && password !== undefined
      ? c.check('DATABASE_PASSWORD', () => withPassword(database, password))
      : database;
  const redisUrl = c.check('REDIS_URL', () => parseRedisUrl(read(env, 'REDIS_URL') ?? 'redis://127.0.0.1:6379'));
  const queuePrefix = c.check('QUEUE_PREFIX', () => {
    const v = read(env, 'QUEUE_PREFIX') ?? 'plan-ledger';
    if (!/^[A-Za-z0-9_.{}-]{1,64}$/.test(v)) throw new Error(`"${v}" must be 1-64 of letters, digits, - _ . { }`);
    return v;
  });
  const redisClusterNodes = c.check('REDIS_CLUSTER_NODES', () => {
    const v = read(env, 'REDIS_CLUSTER_NODES');
    return v === undefined ? null : parseClusterNodes(v);
  });
  if (redisClusterNodes && queuePrefix !== undefined) {
    c.check('QUEUE_PREFIX', () => {
      const problem = clusterPrefixProblem(queuePrefix);
      if (problem) throw new Error(problem);
    });
  }
  const queueShards = c.check('QUEUE_SHARDS', () => parseQueueShards(read(env, 'QUEUE_SHARDS')));
  const workerShards =
    queueShards === undefined
      ? undefined
      : c.check('WORKER_SHARDS', () => parseWorkerShards(read(env, 'WORKER_SHARDS'), queueShards));
  const logLevel = c.check('LOG_LEVEL', () => {
    const v = (read(env, 'LOG_LEVEL') ?? 'info').toLowerCase();
    if (!(LOG_LEVELS as readonly string[]).includes(v))
      throw new Error(`"${v}" is not one of ${LOG_LEVELS.join(', ')}`);
    return v as LogLevel;
  });
  if (c.problems.length > 0) throw new ConfigError(c.problems);
  return Object.freeze({
    database: target!,
    redisUrl: redisUrl!,
    redisClusterNodes: redisClusterNodes!,
    queuePrefix: queuePrefix!,
    queueShards: queueShards!,
    workerShards: workerShards ?? null,
    logLevel: logLevel!,
  });
}
