import { ConfigError } from '../config/config';
import { type Env, integer, read } from '../config/env-readers';

/**
 * What retention keeps and for how long, read from the environment and validated once. Every field
 * documents its default; `RETENTION_ENV_HELP` is what `--help` prints. Library callers (tests, the
 * scheduler) may build a policy with `retentionPolicy({ ...overrides })`.
 *
 * Ages count from the plan's end (`completed_at`), not from its last event: a late event does not
 * postpone retirement. A `plans restore` starts a fresh period (`plan_heads.restored_at`).
 * Planning/executing plans are never touched, whatever their age.
 */
export interface RetentionPolicy {
  /** RETENTION_COMPLETED_DAYS: days a completed plan is kept before soft delete. @defaultValue 30 */
  completedDays: number;
  /** RETENTION_FAILED_DAYS: failed plans are kept longer, for debugging. @defaultValue 90 */
  failedDays: number;
  /** RETENTION_CANCELLED_DAYS: cancelled (also rejected) plans. @defaultValue 30 */
  cancelledDays: number;
  /**
   * RETENTION_GRACE_DAYS: a soft-deleted plan can be restored this long; after it, the next run
   * purges it for good. 0 = purge at the next run (no undo). @defaultValue 7
   */
  graceDays: number;
  /**
   * RETENTION_DAG_TTL (e.g. `90m`, `24h`, `2d`; RETENTION_DAG_TTL_HOURS, whole hours, still read):
   * the DAG and checkpoints of a completed or cancelled workflow are only needed to resume it
   * (a workflow resumed layer by layer), so they expire this long after it ended (`completed_at`, not its last
   * event): a
   * retention run stamps `workflow_dags.expires_at` = end + TTL, which resume-point shows, then
   * expires them once that instant has passed; they are soft-deleted,
   * then purged after the grace period, and their source events stay with the plan. A running
   * workflow's DAG never expires (the seed's 1 h from creation would break a long human-validated
   * workflow), nor does a failed one's (kept for debugging and retry, as long as the plan).
   * An `expires_at` already stamped is kept (a later TTL change applies to workflows that end after
   * it). 0 = keep them as long as the plan. @defaultValue 1440 (24 h)
   */
  dagTtlMinutes: number;
  /**
   * RETENTION_ORPHAN_DAYS: events of a plan whose `plan.created` never arrived (no execution_plans
   * row), with no activity for this long, are soft-deleted (e.g. a late event that arrived after the
   * plan was purged). Costs one walk over plan_heads per run. 0 = keep them forever. @defaultValue 90
   */
  orphanDays: number;
  /**
   * RETENTION_BATCH_SIZE: plans per transaction at most (each statement carries at most this many
   * ids), and plans per scan; capped per database: SQL Server 2,000 (2,100 parameters per
   * statement). Transactions are bounded by rows too (maxRowsPerTransaction), whichever is reached
   * first. @defaultValue 1000
   */
  batchSize: number;
  /**
   * RETENTION_MAX_ROWS: rows of plan tables one retention or erasure transaction changes at most
   * (deletes, or stamps for a soft delete), besides the session rows a purge leaves with no plan.
   * Each scanned page's plans are counted per table and cut into transactions whose rows add up to
   * this at most; a plan with more rows is changed alone, in chunks of this many rows, each chunk
   * its own transaction under the plan's head lock, the plan row and head with the last (soft
   * delete, purge, erasure; a DAG expiry goes whole). A changed row keeps its locks (on SQL Server a
   * key lock per index) until its transaction commits, so the budget bounds the locks one
   * transaction holds: with lock escalation off, SQL Server's lock memory; with it on, no statement
   * passes the ~5,000 rows at which SQL Server tries to lock the whole table, workers' writes
   * included. Rows are counted when a page is scanned: a late event stored before the batch takes
   * its locks adds its rows to that batch. Lower it when the lock memory is short; raise it for
   * fewer, longer transactions. @defaultValue 5000
   */
  maxRowsPerTransaction: number;
  /**
   * RETENTION_REQUEST_TIMEOUT: seconds one statement of retention or erasure may run on SQL Server
   * before the driver cancels it (the transaction is then retried or the run fails), instead of the
   * DATABASE_URL's `requestTimeout` (15 s by default), which stays the worker's. 0 = no limit. Only
   * SQL Server's driver has a request timeout. @defaultValue 300
   */
  requestTimeoutSeconds: number;
  /**
   * RETENTION_PAUSE_PERCENT: after each transaction retention rests for this percentage of the time
   * it worked since its last rest (the transaction and the reads before it), so a run holds the
   * database's CPU and disk for at most 100 / (100 + this) of its time and the workers' writes and
   * the API's reads beside it keep their latency; the run takes that much longer. 0 = no pause
   * (a run as fast as it can, e.g. to catch up after an outage); 100 = rest as long as it worked;
   * 300, the default, holds the database for at most a quarter of the run's time.
   * A stop (worker shutdown) ends a pause at once. Dry runs pause alike; session erasure never does.
   * @defaultValue 300
   */
  pausePercent: number;
  /**
   * RETENTION_CRON: when the scheduler runs, a cron pattern in UTC; `off` = no schedule. @defaultValue `0 3 * * *`
   * (daily 03:00 UTC)
   */
  cron: string | null;
}

export const DEFAULT_RETENTION_POLICY: Readonly<RetentionPolicy> = Object.freeze({
  completedDays: 30,
  failedDays: 90,
  cancelledDays: 30,
  graceDays: 7,
  dagTtlMinutes: 1440,
  orphanDays: 90,
  batchSize: 1000,
  maxRowsPerTransaction: 5000,
  requestTimeoutSeconds: 300,
  pausePercent: 300,
  cron: '0 3 * * *',
});

/** Rows per transaction: a plan's last chunk also changes its plan row and head. */
const MIN_ROWS = 100;
const MAX_ROWS = 1_000_000;
/** One day. */
const MAX_TIMEOUT_S = 86_400;
/** A rest of at most 100 times the work. */
const MAX_PAUSE_PERCENT = 10_000;
/** 100 years. */
const MAX_DAG_TTL_MINUTES = 52_560_000;
const TTL_UNIT_MINUTES: Record<string, number> = { m: 1, h: 60, d: 1_440 };

/** `90m`, `36h`, `2d`, or `0`/`off` (no expiry) → whole minutes. */
export function parseDagTtl(raw: string): number {
  const text = raw.trim();
  if (/^(0|off)$/i.test(text)) return 0;
  const m = /^(\d{1,8})\s*([mhd])$/i.exec(text);
  const minutes = m ? Number(m[1]) * TTL_UNIT_MINUTES[m[2].toLowerCase()] : NaN;
  if (!Number.isSafeInteger(minutes) || minutes < 1 || minutes > MAX_DAG_TTL_MINUTES) {
    throw new Error(
      `"${raw}" is not a duration; use a whole number and a unit m, h or d (e.g. 90m, 24h, 2d), at most 100 years, or 0 / off`,
    );
  }
  return minutes;
}

/** Every environment variable retention reads, for `--help`. */
export const RETENTION_ENV_HELP: ReadonlyArray<[name: string, help: string]> = [
  [
    'RETENTION_COMPLETED_DAYS',
    'days a completed plan is kept after it ended (or was restored), then soft-deleted, 1-36500 (default 30)',
  ],
  ['RETENTION_FAILED_DAYS', 'days a failed plan is kept, 1-36500 (default 90)'],
  ['RETENTION_CANCELLED_DAYS', 'days a cancelled plan is kept, 1-36500 (default 30)'],
  ['RETENTION_GRACE_DAYS', 'days a soft-deleted plan stays restorable before purge, 0-3650 (default 7)'],
  [
    'RETENTION_DAG_TTL',
    'how long after a completed/cancelled workflow ended its DAG and checkpoints expire: 90m, 24h, 2d; 0 = with the plan (default 24h)',
  ],
  ['RETENTION_DAG_TTL_HOURS', 'the same in whole hours (older name; RETENTION_DAG_TTL wins when both are set)'],
  ['RETENTION_ORPHAN_DAYS', 'days before events of a plan with no plan.created are retired; 0 = never (default 90)'],
  ['RETENTION_BATCH_SIZE', 'plans per transaction at most, 1-50000, capped at 2000 on SQL Server (default 1000)'],
  [
    'RETENTION_MAX_ROWS',
    'rows per transaction at most, 100-1000000; a larger plan goes alone, in chunks of this many rows (default 5000)',
  ],
  [
    'RETENTION_REQUEST_TIMEOUT',
    "seconds a retention or erasure statement may run on SQL Server (the worker's is the DATABASE_URL's), 0-86400, 0 = no limit (default 300)",
  ],
  [
    'RETENTION_PAUSE_PERCENT',
    'rest after each transaction for this % of the time it worked, so reads and writes beside it keep their latency; 0-10000, 0 = no rest (default 300)',
  ],
  ['RETENTION_CRON', 'schedule, cron pattern in UTC, or off (default "0 3 * * *" = daily 03:00 UTC)'],
];

/**
 * A cron pattern BullMQ accepts: 5 fields (minute first) or 6 (seconds first). This catches typos
 * at start-up; the scheduler's cron parser has the last word when it is upserted.
 */
export function parseCron(raw: string): string | null {
  if (/^(off|none|disabled?)$/i.test(raw)) return null;
  const fields = raw.split(/\s+/);
  if (fields.length < 5 || fields.length > 6)
    throw new Error(
      `"${raw}" has ${fields.length} field${fields.length === 1 ? '' : 's'}; expected 5 (m h dom mon dow) or 6, or off`,
    );
  const bad = fields.find((f) => !/^[0-9A-Za-z*?/,#-]+$/.test(f));
  if (bad !== undefined) throw new Error(`"${raw}": field "${bad}" is not cron syntax`);
  return fields.join(' ');
}

/** A full policy from defaults plus overrides, range-checked (throws ConfigError). */
export function retentionPolicy(overrides: Partial<RetentionPolicy> = {}): Readonly<RetentionPolicy> {
  const policy = { ...DEFAULT_RETENTION_POLICY, ...overrides };
  const problems: string[] = [];
  const ranges: Array<[keyof RetentionPolicy, number, number]> = [
    ['completedDays', 1, 36_500],
    ['failedDays', 1, 36_500],
    ['cancelledDays', 1, 36_500],
    ['graceDays', 0, 3_650],
    ['dagTtlMinutes', 0, MAX_DAG_TTL_MINUTES],
    ['orphanDays', 0, 36_500],
    ['batchSize', 1, 50_000],
    ['maxRowsPerTransaction', MIN_ROWS, MAX_ROWS],
    ['requestTimeoutSeconds', 0, MAX_TIMEOUT_S],
    ['pausePercent', 0, MAX_PAUSE_PERCENT],
  ];
  for (const [key, min, max] of ranges) {
    const v = policy[key] as number;
    if (!Number.isInteger(v) || v < min || v > max) problems.push(`${key}: ${v} is not an integer in ${min}-${max}`);
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze(policy);
}

/** Reads and checks every RETENTION_* variable; throws one ConfigError naming every bad one. */
export function loadRetentionPolicy(env: Env = process.env): Readonly<RetentionPolicy> {
  const problems: string[] = [];
  const d = DEFAULT_RETENTION_POLICY;
  const { check, num } = readers(env, problems);
  const policy: RetentionPolicy = {
    completedDays: num('RETENTION_COMPLETED_DAYS', d.completedDays, 1, 36_500),
    failedDays: num('RETENTION_FAILED_DAYS', d.failedDays, 1, 36_500),
    cancelledDays: num('RETENTION_CANCELLED_DAYS', d.cancelledDays, 1, 36_500),
    graceDays: num('RETENTION_GRACE_DAYS', d.graceDays, 0, 3_650),
    dagTtlMinutes: check(
      'RETENTION_DAG_TTL',
      check('RETENTION_DAG_TTL_HOURS', d.dagTtlMinutes, (raw) => integer(raw, 0, MAX_DAG_TTL_MINUTES / 60) * 60),
      parseDagTtl,
    ),
    orphanDays: num('RETENTION_ORPHAN_DAYS', d.orphanDays, 0, 36_500),
    batchSize: num('RETENTION_BATCH_SIZE', d.batchSize, 1, 50_000),
    ...transactionLimits(num),
    pausePercent: num('RETENTION_PAUSE_PERCENT', d.pausePercent, 0, MAX_PAUSE_PERCENT),
    cron: check('RETENTION_CRON', d.cron, parseCron),
  };
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze(policy);
}

/** How big one transaction may be and how long one statement may run: what session erasure takes from retention. */
export type TransactionLimits = Pick<RetentionPolicy, 'maxRowsPerTransaction' | 'requestTimeoutSeconds'>;

/**
 * RETENTION_MAX_ROWS and RETENTION_REQUEST_TIMEOUT only, checked as loadRetentionPolicy checks
 * them: `sessions purge` bounds its transactions as retention does, whatever the rest of the policy.
 */
export function loadTransactionLimits(env: Env = process.env): TransactionLimits {
  const problems: string[] = [];
  const limits = transactionLimits(readers(env, problems).num);
  if (problems.length > 0) throw new ConfigError(problems);
  return limits;
}

function transactionLimits(num: Readers['num']): TransactionLimits {
  const d = DEFAULT_RETENTION_POLICY;
  return {
    maxRowsPerTransaction: num('RETENTION_MAX_ROWS', d.maxRowsPerTransaction, MIN_ROWS, MAX_ROWS),
    requestTimeoutSeconds: num('RETENTION_REQUEST_TIMEOUT', d.requestTimeoutSeconds, 0, MAX_TIMEOUT_S),
  };
}

interface Readers {
  check<T>(name: string, fallback: T, parse: (raw: string) => T): T;
  num(name: string, fallback: number, min: number, max: number): number;
}

/** Readers of `env` that note what is wrong with a variable in `problems` and fall back to its default. */
function readers(env: Env, problems: string[]): Readers {
  const check = <T>(name: string, fallback: T, parse: (raw: string) => T): T => {
    const raw = read(env, name);
    if (raw === undefined) return fallback;
    try {
      return parse(raw);
    } catch (err) {
      problems.push(`${name}: ${(err as Error).message}`);
      return fallback;
    }
  };
  return { check, num: (name, fallback, min, max) => check(name, fallback, (raw) => integer(raw, min, max)) };
}
