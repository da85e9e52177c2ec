import { ConfigError } from '../config/config';
import { durationMs, type Env, integer, read } from '../config/env-readers';

/**
 * Worker settings read from the environment, validated once. Every field documents its default;
 * `WORKER_ENV_HELP` is what `--help` prints. Library callers may pass any subset to `startWorker`.
 */
export interface WorkerConfig {
  /**
   * WORKER_CONCURRENCY: most jobs in flight per process; their events share transactions. Small
   * jobs need many in flight to fill a batch; big ones are held back by `maxEventsInFlight`.
   * @defaultValue 256
   */
  concurrency: number;
  /**
   * WORKER_MAX_EVENTS_IN_FLIGHT: the worker lowers its job concurrency so that about this many
   * events are in memory at once (jobs in flight x average events per job): memory is bounded
   * in events whatever the publisher's job size (the default's measurement is in BENCHMARKS.md,
   * End to end). @defaultValue 10000
   */
  maxEventsInFlight: number;
  /**
   * WORKER_BATCH_SIZE: events per transaction before a flush starts. Bigger batches cost less CPU
   * per event on both sides (fewer statements and commits per event). @defaultValue 2000
   */
  batchSize: number;
  /** WORKER_BATCH_WAIT_MS: longest an event waits for its batch to fill. @defaultValue 10 */
  batchWaitMs: number;
  /**
   * WORKER_TRANSACTIONS: batch transactions in flight at once, so the worker prepares the next
   * batch while the database commits the previous ones (bench:e2e in BENCHMARKS.md chose the
   * default). SQLite always uses 1: its writes are serialised anyway. @defaultValue 4
   */
  transactions: number;
  /**
   * RETRY_BUDGET_MS: how long a job may keep failing for transient reasons (database down,
   * deadlocks) before its events are dead-lettered as `retries-exhausted`. @defaultValue 600000 (10 min)
   */
  retryBudgetMs: number;
  /** HEALTH_PORT: port of /healthz, /readyz, /metrics; 0 = any free port; `off` = no server. @defaultValue 9464 */
  healthPort: number | null;
  /** HEALTH_HOST: address the health server binds. @defaultValue `0.0.0.0` */
  healthHost: string;
  /** READY_STALL_SECONDS: /readyz fails when jobs wait and nothing committed for this long. @defaultValue 60 */
  readyStallSeconds: number;
  /** SHUTDOWN_TIMEOUT_MS: SIGTERM deadline; keep it under the orchestrator's grace period. @defaultValue 8000 */
  shutdownTimeoutMs: number;
  /**
   * WORKER_HEAP_GROWING_PERCENT: how much V8 lets the heap grow past what survived the last full
   * GC (V8's own default grows it 1.1-4x, so a busy worker holds mostly garbage; bench:e2e in
   * BENCHMARKS.md weighs RSS against throughput). Applied by `plan-ledger worker`, which owns its
   * process; the library never changes V8 flags. 0 = V8's default. @defaultValue 50
   */
  heapGrowingPercent: number;
  /**
   * WORKER_GAP_TIMEOUT_MS: how long a plan waits for a missing seq (an event lost upstream,
   * dead-lettered, or never published) before its later events are applied past the gap; should
   * the missing event come after all, the plan is rebuilt from its log. Out-of-order commits fill
   * gaps within milliseconds; keep this above the longest retry wait (30 s). 0 = wait forever.
   * @defaultValue 60000
   */
  gapTimeoutMs: number;
  /**
   * WORKER_ROW_CACHE_MB: plan rows (plan row, steps) the worker keeps between transactions, so
   * the next events of a plan it wrote last apply without reading its rows back
   * (docs/store.md#rows-cached-between-transactions).
   * Size it for the plans in flight at once: ~2.5 KB per 3-step plan, more with long outputs. 0 = off.
   * @defaultValue 64
   */
  rowCacheMb: number;
  /**
   * WORKER_LOCK_MS: BullMQ lock duration; a crashed worker's jobs are redelivered after about this
   * long. Flush wait + commit time must stay far below it. @defaultValue 30000
   */
  lockDurationMs: number;
  /**
   * STALL_AFTER: a running plan with no deadlineMs of its own (nor a running step's) is `stalled`
   * once it has gone this long without an event (docs/store.md#stalled-plans). @defaultValue 900000 (15 min)
   */
  stallAfterMs: number;
  /**
   * STALL_CHECK_EVERY: how often the stall check runs, once per cluster whatever the number of
   * workers; a plan is found stalled within its deadline plus this. null (`off`): never.
   * @defaultValue 30000 (30 s)
   */
  stallCheckMs: number | null;
}

export const DEFAULT_WORKER_CONFIG: Readonly<WorkerConfig> = Object.freeze({
  concurrency: 256,
  maxEventsInFlight: 10_000,
  batchSize: 2000,
  batchWaitMs: 10,
  transactions: 4,
  retryBudgetMs: 600_000,
  healthPort: 9464,
  healthHost: '0.0.0.0',
  readyStallSeconds: 60,
  shutdownTimeoutMs: 8000,
  lockDurationMs: 30_000,
  heapGrowingPercent: 50,
  gapTimeoutMs: 60_000,
  rowCacheMb: 64,
  stallAfterMs: 900_000,
  stallCheckMs: 30_000,
});

/** Every environment variable the worker reads, for `--help`. */
export const WORKER_ENV_HELP: ReadonlyArray<[name: string, help: string]> = [
  ['WORKER_CONCURRENCY', 'most jobs in flight per worker process, 1-10000 (default 256)'],
  ['WORKER_MAX_EVENTS_IN_FLIGHT', 'events held in memory at once; lowers job concurrency for big jobs (default 10000)'],
  ['WORKER_BATCH_SIZE', 'events per database transaction, 1-50000 (default 2000)'],
  ['WORKER_BATCH_WAIT_MS', 'longest wait for a batch to fill, 0-5000 ms (default 10)'],
  ['WORKER_TRANSACTIONS', 'batch transactions in flight at once, 1-32; SQLite always 1 (default 4)'],
  ['RETRY_BUDGET_MS', 'transient failures are retried this long, then dead-lettered (default 600000 = 10 min)'],
  ['HEALTH_PORT', '/healthz /readyz /metrics port; 0 = any free port, off = disabled (default 9464)'],
  ['HEALTH_HOST', 'address the health server binds (default 0.0.0.0)'],
  ['READY_STALL_SECONDS', '/readyz fails when jobs wait and nothing committed this long (default 60)'],
  ['SHUTDOWN_TIMEOUT_MS', 'SIGTERM/SIGINT deadline before in-flight jobs are abandoned (default 8000)'],
  ['WORKER_LOCK_MS', "BullMQ job lock; a crashed worker's jobs come back after it (default 30000)"],
  [
    'WORKER_GAP_TIMEOUT_MS',
    'a plan waits this long for a missing seq, then applies its later events past it; 0 = forever (default 60000)',
  ],
  [
    'WORKER_ROW_CACHE_MB',
    "plan rows kept in memory between transactions, so a plan's next events skip reading them; 0 = off (default 64)",
  ],
  [
    'STALL_AFTER',
    'a running plan with no deadlineMs is stalled after this long without an event, 1s-30d (default 15m)',
  ],
  ['STALL_CHECK_EVERY', 'how often the stall check runs (once per cluster), 100ms-1d, or off (default 30s)'],
  ['WORKER_HEAP_GROWING_PERCENT', 'V8 heap growth past the live set, lower = less RSS; 0 = V8 default (default 50)'],
];

/** Reads and checks every worker variable; throws one ConfigError naming every bad one. */
export function loadWorkerConfig(env: Env = process.env): Readonly<WorkerConfig> {
  const problems: string[] = [];
  const d = DEFAULT_WORKER_CONFIG;
  const num = (name: string, fallback: number, min: number, max: number): number => {
    const raw = read(env, name);
    if (raw === undefined) return fallback;
    try {
      return integer(raw, min, max);
    } catch (err) {
      problems.push(`${name}: ${(err as Error).message}`);
      return fallback;
    }
  };
  const healthRaw = read(env, 'HEALTH_PORT');
  const healthPort =
    healthRaw !== undefined && /^(off|none|disabled?)$/i.test(healthRaw)
      ? null
      : num('HEALTH_PORT', d.healthPort as number, 0, 65535);
  const duration = (name: string, fallback: number, min: number, max: number): number => {
    const raw = read(env, name);
    if (raw === undefined) return fallback;
    try {
      return durationMs(raw, min, max);
    } catch (err) {
      problems.push(`${name}: ${(err as Error).message}`);
      return fallback;
    }
  };
  const checkRaw = read(env, 'STALL_CHECK_EVERY');
  const stallCheckMs =
    checkRaw !== undefined && /^off$/i.test(checkRaw)
      ? null
      : duration('STALL_CHECK_EVERY', d.stallCheckMs as number, 100, 86_400_000);
  const config: WorkerConfig = {
    concurrency: num('WORKER_CONCURRENCY', d.concurrency, 1, 10_000),
    maxEventsInFlight: num('WORKER_MAX_EVENTS_IN_FLIGHT', d.maxEventsInFlight, 1, 1_000_000),
    batchSize: num('WORKER_BATCH_SIZE', d.batchSize, 1, 50_000),
    batchWaitMs: num('WORKER_BATCH_WAIT_MS', d.batchWaitMs, 0, 5_000),
    transactions: num('WORKER_TRANSACTIONS', d.transactions, 1, 32),
    retryBudgetMs: num('RETRY_BUDGET_MS', d.retryBudgetMs, 0, 7 * 24 * 3_600_000),
    healthPort,
    healthHost: read(env, 'HEALTH_HOST') ?? d.healthHost,
    readyStallSeconds: num('READY_STALL_SECONDS', d.readyStallSeconds, 1, 86_400),
    shutdownTimeoutMs: num('SHUTDOWN_TIMEOUT_MS', d.shutdownTimeoutMs, 100, 3_600_000),
    lockDurationMs: num('WORKER_LOCK_MS', d.lockDurationMs, 1_000, 3_600_000),
    heapGrowingPercent: num('WORKER_HEAP_GROWING_PERCENT', d.heapGrowingPercent, 0, 1_000),
    gapTimeoutMs: num('WORKER_GAP_TIMEOUT_MS', d.gapTimeoutMs, 0, 7 * 24 * 3_600_000),
    rowCacheMb: num('WORKER_ROW_CACHE_MB', d.rowCacheMb, 0, 65_536),
    stallAfterMs: duration('STALL_AFTER', d.stallAfterMs, 1_000, 30 * 86_400_000),
    stallCheckMs,
  };
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze(config);
}
