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
   * RETENTION_BATCH_SIZE: plans per transaction (each statement carries at most this many ids);
   * capped per database: SQL Server 2,000 (2,100 parameters per statement). 1,000 plans of 10
   * steps keep every statement near 0.25 s on PostgreSQL (BENCHMARKS.md); lower it for much longer
   * plans. SQL Server escalates a statement's row locks to a table lock past ~5,000 rows, blocking
   * the workers meanwhile: there keep batch x steps per plan under that (e.g. 400). @defaultValue 1000
   */
  batchSize: number;
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
  cron: '0 3 * * *',
});

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
  ['RETENTION_BATCH_SIZE', 'plans per transaction, 1-50000, capped at 2000 on SQL Server (default 1000)'],
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
  const num = (name: string, fallback: number, min: number, max: number) =>
    check(name, fallback, (raw) => integer(raw, min, max));
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
    cron: check('RETENTION_CRON', d.cron, parseCron),
  };
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze(policy);
}
