/**
 * Which database errors are worth retrying, per driver. A retryable error means "the same
 * transaction may succeed later"; anything else raised by the database for a valid event is
 * permanent for that event.
 *
 * | database   | code                         | meaning                                        |
 * |------------|------------------------------|------------------------------------------------|
 * | SQL Server | 1205                         | chosen as deadlock victim                      |
 * | SQL Server | 1222                         | lock request time-out                          |
 * | SQL Server | ESOCKET, ETIMEOUT, ECONNCLOSED, ECONNRESET (tedious) | connection lost / timed out |
 * | PostgreSQL | 40001                        | serialization_failure                          |
 * | PostgreSQL | 40P01                        | deadlock_detected                              |
 * | PostgreSQL | 55P03                        | lock_not_available                             |
 * | PostgreSQL | 57P01, 57P02, 57P03          | admin shutdown, crash shutdown, cannot connect now (starting up) |
 * | PostgreSQL | 08000, 08001, 08003, 08004, 08006 | connection exceptions                     |
 * | PostgreSQL | 53300                        | too_many_connections                           |
 * | MySQL      | 1213 ER_LOCK_DEADLOCK        | deadlock                                       |
 * | MySQL      | 1205 ER_LOCK_WAIT_TIMEOUT    | lock wait timeout                              |
 * | MySQL      | PROTOCOL_CONNECTION_LOST, ER_CON_COUNT_ERROR (1040), ER_SERVER_SHUTDOWN (1053) | connection |
 * | SQLite     | SQLITE_BUSY, SQLITE_LOCKED   | another connection holds the lock              |
 * | any        | ECONNREFUSED, ECONNRESET, ETIMEDOUT, EPIPE, EHOSTUNREACH, ENOTFOUND, EAI_AGAIN | network |
 *
 * Duplicate keys are not failures at all for an idempotent insert (see isDuplicateKeyError).
 */
const RETRYABLE_CODES = new Set<string>([
  // network, any driver
  'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'ENETUNREACH',
  // tedious (SQL Server)
  'ESOCKET', 'ETIMEOUT', 'ECONNCLOSED', 'EINSTLOOKUP',
  // PostgreSQL SQLSTATE
  '40001', '40P01', '55P03', '57P01', '57P02', '57P03', '08000', '08001', '08003', '08004', '08006', '53300',
  // MySQL / MariaDB
  'ER_LOCK_DEADLOCK', 'ER_LOCK_WAIT_TIMEOUT', 'PROTOCOL_CONNECTION_LOST', 'ER_CON_COUNT_ERROR', 'ER_SERVER_SHUTDOWN',
  // SQLite
  'SQLITE_BUSY', 'SQLITE_LOCKED', 'SQLITE_BUSY_SNAPSHOT', 'SQLITE_BUSY_RECOVERY',
]);

const RETRYABLE_NUMBERS = new Set<number>([1205, 1222, 1213, 1040, 1053]);

/** Messages of connection failures that arrive without a code (pg pool, TypeORM wrappers). */
const RETRYABLE_MESSAGES = [
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
  if (f.errno !== undefined && RETRYABLE_NUMBERS.has(f.errno) && /mysql|maria/i.test(f.message + (f.code ?? ''))) return true;
  if (RETRYABLE_MESSAGES.some((re) => re.test(f.message))) return true;
  if (f.cause && depth < 3) return isRetryableDbError(f.cause, depth + 1);
  const errors = (err as { errors?: unknown[] })?.errors; // AggregateError from net.connect (IPv4 + IPv6)
  return Array.isArray(errors) && depth < 3 && errors.some((e) => isRetryableDbError(e, depth + 1));
}

/** A unique/primary key violation: for an idempotent insert, the row is already there. */
export function isDuplicateKeyError(err: unknown): boolean {
  const f = fields(err);
  return (
    f.code === '23505' || // PostgreSQL unique_violation
    f.code === 'ER_DUP_ENTRY' || f.errno === 1062 || // MySQL / MariaDB
    f.number === 2627 || f.number === 2601 || // SQL Server PK / unique index
    f.code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || f.code === 'SQLITE_CONSTRAINT_UNIQUE'
  );
}

/** The driver's code for logs and dead letters. */
export function dbErrorCode(err: unknown): string | undefined {
  const f = fields(err);
  return f.code ?? (f.number !== undefined ? String(f.number) : undefined);
}
