import { DIALECTS } from './sql/dialects';
import type { StandingFaultKind } from './sql/sql-dialect';

/**
 * Which database errors are worth retrying. A retryable error means "the same transaction may
 * succeed later"; anything else raised by the database for a valid event is permanent for that
 * event. Each dialect lists its own codes (`transient` in sql/<database>.ts: SQLSTATEs, driver
 * codes, SQL Server error numbers, MySQL errnos); the network's are here. An error is classified
 * by any database's table: the error itself says which driver raised it.
 *
 * Duplicate keys are not failures at all for an idempotent insert (see isDuplicateKeyError).
 */
const NETWORK_CODES = [
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ENETUNREACH',
];

const dialects = Object.values(DIALECTS);
const RETRYABLE_CODES = new Set<string>([...NETWORK_CODES, ...dialects.flatMap((d) => d.transient.codes)]);
/** Numbered server errors (SQL Server's) after which the same transaction may succeed. */
const RETRYABLE_NUMBERS = new Set<number>(dialects.flatMap((d) => [...(d.transient.numbers?.keys() ?? [])]));
/** MySQL / MariaDB errnos (only for errors that say MySQL or MariaDB: other drivers reuse the numbers). */
const RETRYABLE_ERRNOS = new Set<number>(dialects.flatMap((d) => [...(d.transient.errnos ?? [])]));

/** Messages of connection failures that arrive without a code (pg pool, TypeORM wrappers), and the dialects' own. */
const RETRYABLE_MESSAGES = [
  ...dialects.flatMap((d) => d.transient.messages ?? []),
  /Connection terminated/i,
  /connection (?:is )?(?:closed|lost|ended)/i,
  /timeout exceeded when trying to connect/i,
  /Failed to connect/i,
  /the database system is (?:starting up|shutting down)/i,
  /Cannot enqueue Query after fatal error/i,
  /Pool is closed/i,
  /Can't add new command when connection is in closed state/i,
  /read ECONNRESET/i,
];

function fields(err: unknown): { code?: string; number?: number; errno?: number; message: string; cause?: unknown } {
  const e = (err ?? {}) as Record<string, unknown>;
  const driverError = (e.driverError ?? e.originalError ?? {}) as Record<string, unknown>;
  const code = (e.code ?? driverError.code) as string | number | undefined;
  return {
    code: code === undefined ? undefined : String(code),
    number: (e.number ?? driverError.number) as number | undefined,
    errno: (e.errno ?? driverError.errno) as number | undefined,
    message: String(e.message ?? err),
    cause: e.cause,
  };
}

/** True when retrying the same transaction later may succeed. */
export function isRetryableDbError(err: unknown, depth = 0): boolean {
  const f = fields(err);
  if (f.code && RETRYABLE_CODES.has(f.code)) return true;
  if (f.number !== undefined && RETRYABLE_NUMBERS.has(f.number)) return true;
  if (f.errno !== undefined && RETRYABLE_ERRNOS.has(f.errno) && /mysql|maria/i.test(f.message + (f.code ?? '')))
    return true;
  if (RETRYABLE_MESSAGES.some((re) => re.test(f.message))) return true;
  if (f.cause && depth < 3) return isRetryableDbError(f.cause, depth + 1);
  const errors = (err as { errors?: unknown[] })?.errors; // AggregateError from net.connect (IPv4 + IPv6)
  return Array.isArray(errors) && depth < 3 && errors.some((e) => isRetryableDbError(e, depth + 1));
}

/** A standing fault: what it is about, and the database's own words (one line). */
export interface StandingFault {
  kind: StandingFaultKind;
  code?: string;
  message: string;
}

const STANDING_FAULTS = dialects.flatMap((d) => d.standingFaults);

/**
 * The standing fault `err` is, if it is one: an error that cannot depend on the event (a missing
 * table, column or function, a permission denied, a collation conflict), so writing the events
 * one by one would only dead-letter each of them. Each dialect lists its own (`standingFaults`).
 */
export function standingFault(err: unknown, depth = 0): StandingFault | undefined {
  const f = fields(err);
  const mysql = /mysql|maria|^ER_/i.test(f.message + (f.code ?? ''));
  const match = STANDING_FAULTS.find(
    (s) =>
      (f.code !== undefined && s.codes?.includes(f.code)) ||
      (f.number !== undefined && s.numbers?.has(f.number)) ||
      (f.errno !== undefined && mysql && s.errnos?.has(f.errno)) ||
      s.messages?.some((re) => re.test(f.message)),
  );
  if (match) {
    const code = f.number !== undefined ? String(f.number) : f.code;
    return { kind: match.kind, code, message: f.message.split('\n')[0] };
  }
  return f.cause !== undefined && depth < 3 ? standingFault(f.cause, depth + 1) : undefined;
}

/** Codes, server errors (SQL Server numbers) and MySQL errnos saying a transaction holds more locks than the server can keep. */
const TOO_MANY_LOCK_CODES = new Set<string>(dialects.flatMap((d) => d.transient.tooManyLocks?.codes ?? []));
const TOO_MANY_LOCK_NUMBERS = new Set<number>(dialects.flatMap((d) => [...(d.transient.tooManyLocks?.numbers ?? [])]));
const TOO_MANY_LOCK_ERRNOS = new Set<number>(dialects.flatMap((d) => [...(d.transient.tooManyLocks?.errnos ?? [])]));

/**
 * The transaction took more locks than the server can keep (SQL Server 1204, InnoDB's lock table
 * full): running it again as it was fails again; a transaction over fewer rows may succeed.
 */
export function isTooManyLocksError(err: unknown, depth = 0): boolean {
  const f = fields(err);
  if (f.code && TOO_MANY_LOCK_CODES.has(f.code)) return true;
  if (f.number !== undefined && TOO_MANY_LOCK_NUMBERS.has(f.number)) return true;
  if (f.errno !== undefined && TOO_MANY_LOCK_ERRNOS.has(f.errno) && /mysql|maria/i.test(f.message + (f.code ?? '')))
    return true;
  return f.cause !== undefined && depth < 3 && isTooManyLocksError(f.cause, depth + 1);
}

/** A unique/primary key violation: for an idempotent insert, the row is already there. */
export function isDuplicateKeyError(err: unknown): boolean {
  const f = fields(err);
  return dialects.some((d) => d.isDuplicateKey(f));
}

/** The driver's code for logs and dead letters. */
export function dbErrorCode(err: unknown): string | undefined {
  const f = fields(err);
  return f.code ?? (f.number !== undefined ? String(f.number) : undefined);
}
