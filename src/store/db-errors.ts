/**
 * Which database errors are worth retrying, per driver. A retryable error means "the same
 * transaction may succeed later"; anything else raised by the database for a valid event is
 * permanent for that event.
 *
 * | database   | code                         | meaning                                        |
 * |------------|------------------------------|------------------------------------------------|
 * | SQL Server | 1205, 1222, 1204, 701, 8645, 4060, 18456, 9002, 1105, Azure 40197 40501 40613 49918-49920 10928 10929 | see SQLSERVER_TRANSIENT below |
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

/**
 * SQL Server error numbers (tedious `number`) after which the same transaction may succeed: the
 * server is busy, recovering, or out of a resource an operator or autogrowth restores. Azure SQL's
 * are its documented transient errors (reconfiguration, throttling, failover).
 */
const SQLSERVER_TRANSIENT = new Map<number, string>([
  [1205, 'chosen as deadlock victim'],
  [1222, 'lock request time-out'],
  [1204, 'cannot obtain a lock resource (lock memory exhausted)'],
  [701, 'insufficient system memory to run this query'],
  [8645, 'timeout waiting for memory resources to run the query'],
  [4060, 'cannot open the database (still recovering after a restart or failover)'],
  [18456, 'login failed (the database is recovering; a bad password also gives this, and the retry budget bounds it)'],
  [9002, 'transaction log full (until a log backup or autogrowth frees space)'],
  [1105, 'filegroup full (until space is added)'],
  [40197, 'Azure SQL: service error while processing the request (reconfiguration)'],
  [40501, 'Azure SQL: service busy (throttling)'],
  [40613, 'Azure SQL: database not currently available (failover)'],
  [49918, 'Azure SQL: not enough resources to process the request'],
  [49919, 'Azure SQL: too many create or update operations in progress'],
  [49920, 'Azure SQL: too many operations in progress'],
  [10928, 'Azure SQL: resource limit reached (requests, sessions)'],
  [10929, 'Azure SQL: minimum resource guarantee not available'],
]);

/** MySQL / MariaDB error numbers (`errno`): deadlock, lock wait timeout, too many connections, shutdown. */
const MYSQL_RETRYABLE_ERRNOS = new Set<number>([1213, 1205, 1040, 1053]);

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
  if (f.number !== undefined && SQLSERVER_TRANSIENT.has(f.number)) return true;
  if (f.errno !== undefined && MYSQL_RETRYABLE_ERRNOS.has(f.errno) && /mysql|maria/i.test(f.message + (f.code ?? ''))) return true;
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
