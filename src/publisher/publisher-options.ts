import * as path from 'node:path';
import type { JobsOptions } from 'bullmq';
import type { Registry } from 'prom-client';
import type { ContractLimits, Violation } from '../contracts';
import type { Logger } from '../shared/logger';
import { ClusterSeeds, clusterPrefixProblem, parseClusterNodes } from '../config/redis-cluster-nodes';
import type { RedisClient } from '../queue/connect-redis';
import { DEFAULT_JOB_OPTIONS } from '../queue/batch-job-options';
import { MAX_QUEUE_SHARDS } from '../queue/queue-shards';
import { PlanLedgerError } from '../shared/errors';

/**
 * How `publish()` checks events before accepting them.
 * - `fast` (default): the publisher's own synchronous check of every contract rule (contracts/fast-check),
 *   about 1 µs for a typical event. The worker re-checks every event with `checkStoredEvent`
 *   (`parsePlanEvent`'s verdict) and dead-letters whatever slipped through.
 * - `contract`: `parsePlanEvent` on the caller's path: exact, but ~25 µs (p99 ~75 µs) per small
 *   event and ~70 µs for a 5-step plan, which also caps one publisher near 40k events/s.
 */
export type ValidationMode = 'fast' | 'contract';

/** Everything `new PlanEventPublisher(options)` accepts; every field is optional. */
export interface PublisherOptions {
  /** ioredis URL (`rediss://` for TLS). @defaultValue `redis://127.0.0.1:6379` */
  redisUrl?: string;
  /**
   * Seed nodes of a Redis Cluster, as REDIS_CLUSTER_NODES (`host:port,host:port`) or parsed; when
   * set, the publisher connects to the cluster and `redisUrl` is not used. `queuePrefix` must then
   * contain a `{hash tag}`. @defaultValue none (one Redis at `redisUrl`)
   */
  redisClusterNodes?: string | ClusterSeeds | null;
  /**
   * A connection owned by the caller (an ioredis Redis or Cluster), used instead of opening one and
   * left open by close(). Give it the publisher's settings so publish() never waits on Redis:
   * `enableOfflineQueue: false`, `maxRetriesPerRequest: 0`, a `commandTimeout`. @defaultValue none
   */
  connection?: RedisClient;
  /** BullMQ key prefix, the same as the workers' QUEUE_PREFIX. @defaultValue `plan-ledger` */
  queuePrefix?: string;
  /**
   * QUEUE_SHARDS: events go to one of this many queues by a hash of their plan id (the workers'
   * QUEUE_SHARDS; src/queue/queue-shards.ts). @defaultValue `1` (one queue, the unsharded layout)
   */
  queueShards?: number;
  /** Events held in memory waiting for Redis (queued + in flight) before spilling. @defaultValue `100_000` */
  maxBufferedEvents?: number;
  /** Event JSON held in memory before spilling, in characters (= UTF-8 bytes for ASCII). @defaultValue `64 MiB` */
  maxBufferedBytes?: number;
  /**
   * Events per BullMQ job (the worker dead-letters them one by one). @defaultValue `500` (bench:publish sweep: near
   * the fastest, half the job size of 1000)
   */
  eventsPerJob?: number;
  /** Jobs per `addBulk` call (one round trip). @defaultValue `10` */
  jobsPerBulk?: number;
  /** `addBulk` calls awaiting Redis at once; bounds what is in flight. @defaultValue `4` */
  maxInFlightBulks?: number;
  /**
   * Directory of the spill journal; one publisher per directory (a lock file enforces it). @defaultValue
   * `./data/plan-ledger-journal`
   */
  journalDir?: string;
  /** Bytes the journal may occupy on disk; past it events are dropped (counted, logged). @defaultValue `1 GiB` */
  maxJournalBytes?: number;
  /** Size at which the journal starts a new segment file, so drained space is freed early. @defaultValue `16 MiB` */
  journalSegmentBytes?: number;
  /**
   * Spilled bytes gathered in memory before one journal write (also the most a publish call may write inline).
   * @defaultValue `1 MiB`
   */
  journalWriteBytes?: number;
  /**
   * Group-commit window while Redis is unreachable: events held in memory are written to the
   * journal at least this often, so a crash (kill -9) loses at most the events accepted in the last
   * `journalCommitMs`. With Redis up, memory only holds what is on its way to Redis. @defaultValue `100`
   */
  journalCommitMs?: number;
  /**
   * Overrides of the BullMQ job options (attempts, backoff, removeOnComplete...). @defaultValue see
   * DEFAULT_JOB_OPTIONS
   */
  jobOptions?: JobsOptions;
  /** A Redis command (addBulk) that has not answered after this long is failed and retried. @defaultValue `10_000` */
  redisCommandTimeoutMs?: number;
  /** @defaultValue `fast`; see ValidationMode. */
  validation?: ValidationMode;
  /** Contract limits, as the workers' (`parsePlanEvent` options). @defaultValue DEFAULT_LIMITS of the contract */
  limits?: Partial<ContractLimits>;
  /** Plans whose next seq is remembered; the least recently used is forgotten past it. @defaultValue `100_000` */
  maxTrackedPlans?: number;
  /** Called synchronously for each rejected event, in addition to the return value. @defaultValue none */
  onRejected?: (violations: Violation[], input: unknown) => void;
  /** pino logger. @defaultValue `createLogger({ level: 'info' })` with `component: 'publisher'` */
  logger?: Logger;
  /**
   * A prom-client Registry of the executor's: the publisher registers its counters and gauges on it
   * (`plan_ledger_publisher_*`: published, recovered, spilled, dropped, rejected, buffered, journal
   * bytes, Redis up), read from `stats()` at scrape time, and removes them in close(). One publisher
   * per registry. Never prom-client's global registry unless you pass it. @defaultValue none (no metrics)
   */
  metricsRegistry?: Registry;
}

/** Job options of every batch job (src/queue/batch-job-options.ts), part of the publisher's API. */
export { DEFAULT_JOB_OPTIONS };

export type ResolvedOptions = Required<
  Omit<PublisherOptions, 'onRejected' | 'logger' | 'limits' | 'redisClusterNodes' | 'connection' | 'metricsRegistry'>
> &
  Pick<PublisherOptions, 'onRejected' | 'limits' | 'connection'> & { redisClusterNodes: ClusterSeeds | null };

const MIB = 1024 * 1024;

const NUMERIC_DEFAULTS = {
  maxBufferedEvents: 100_000,
  maxBufferedBytes: 64 * MIB,
  eventsPerJob: 500,
  jobsPerBulk: 10,
  maxInFlightBulks: 4,
  maxJournalBytes: 1024 * MIB,
  journalSegmentBytes: 16 * MIB,
  journalWriteBytes: 1 * MIB,
  journalCommitMs: 100,
  redisCommandTimeoutMs: 10_000,
  maxTrackedPlans: 100_000,
} as const;

/** A nonsense option: one line naming every bad field. Thrown by the constructor, never by publish(). */
export class PublisherConfigError extends PlanLedgerError {
  override readonly name = 'PublisherConfigError';
  readonly kind = 'config';
  constructor(readonly problems: string[]) {
    super(`invalid PlanEventPublisher options: ${problems.join('; ')}`);
  }
}

/**
 * A job must hold any one event, and the journal's largest record (drained as one job): up to
 * `journalWriteBytes` of staged events plus the event that crossed it.
 */
export function checkJobLimit(
  limits: Pick<ContractLimits, 'maxEventBytes' | 'maxJobBytes'>,
  journalWriteBytes: number,
): void {
  const needed = journalWriteBytes + limits.maxEventBytes + 64;
  if (limits.maxJobBytes < needed) {
    throw new PublisherConfigError([
      `limits.maxJobBytes (${limits.maxJobBytes}) must be at least journalWriteBytes + limits.maxEventBytes + 64 (${needed}): a job must hold the largest event and the largest journal record`,
    ]);
  }
}

export function resolveOptions(options: PublisherOptions): ResolvedOptions {
  const problems: string[] = [];
  const numbers = { ...NUMERIC_DEFAULTS } as Record<keyof typeof NUMERIC_DEFAULTS, number>;
  for (const key of Object.keys(NUMERIC_DEFAULTS) as (keyof typeof NUMERIC_DEFAULTS)[]) {
    const value = options[key];
    if (value === undefined) continue;
    if (!Number.isSafeInteger(value) || value < 1)
      problems.push(`${key} must be a positive integer (got ${String(value)})`);
    else numbers[key] = value;
  }
  const queueShards = options.queueShards ?? 1;
  if (!Number.isSafeInteger(queueShards) || queueShards < 1 || queueShards > MAX_QUEUE_SHARDS)
    problems.push(`queueShards must be a whole number from 1 to ${MAX_QUEUE_SHARDS} (got ${String(queueShards)})`);
  const validation = options.validation ?? 'fast';
  if (validation !== 'fast' && validation !== 'contract')
    problems.push(`validation must be "fast" or "contract" (got ${String(validation)})`);
  const queuePrefix = options.queuePrefix ?? 'plan-ledger';
  if (!/^[A-Za-z0-9_.{}-]{1,64}$/.test(queuePrefix))
    problems.push(`queuePrefix "${queuePrefix}" must be 1-64 of letters, digits, - _ . { }`);
  let redisClusterNodes: ClusterSeeds | null = null;
  try {
    const raw = options.redisClusterNodes;
    redisClusterNodes = typeof raw === 'string' ? parseClusterNodes(raw) : (raw ?? null);
  } catch (err) {
    problems.push(`redisClusterNodes: ${(err as Error).message}`);
  }
  const onCluster =
    redisClusterNodes !== null || (options.connection as { isCluster?: boolean } | undefined)?.isCluster === true;
  const prefixProblem = onCluster ? clusterPrefixProblem(queuePrefix) : null;
  if (prefixProblem) problems.push(`queuePrefix ${prefixProblem}`);
  if (problems.length > 0) throw new PublisherConfigError(problems);
  return {
    ...numbers,
    redisUrl: options.redisUrl ?? 'redis://127.0.0.1:6379',
    redisClusterNodes,
    connection: options.connection,
    queuePrefix,
    queueShards,
    journalDir: path.resolve(options.journalDir ?? path.join('data', 'plan-ledger-journal')),
    jobOptions: { ...DEFAULT_JOB_OPTIONS, ...options.jobOptions },
    validation,
    limits: options.limits,
    onRejected: options.onRejected,
  };
}
