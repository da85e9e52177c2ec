import { MESSAGES, say } from './messages';

/**
 * String formats of the contract, as plain predicates (own regexes rather than validator.js ones, so
 * the accepted set cannot shift under a dependency upgrade).
 */

/**
 * External ids are the executor's own identifiers (`plan_abc123`, `session_123`, UUIDs). Short and
 * printable so they are safe as database keys, BullMQ job-id parts and log fields.
 */
export const EXTERNAL_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$/;

export function isExternalId(s: unknown): s is string {
  return typeof s === 'string' && EXTERNAL_ID_PATTERN.test(s);
}

/** Any UUID version (v4 and v7 are both in use by publishers), either case. */
export const UUID_PATTERN = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

export function isUuid(s: unknown): s is string {
  return typeof s === 'string' && UUID_PATTERN.test(s);
}

/**
 * ISO-8601 extended date-time in UTC: `YYYY-MM-DDTHH:MM:SS[.fraction](Z|+00:00)`. Offsets other than
 * zero are refused rather than converted: a non-UTC stamp means the executor's clock handling is off,
 * and `-00:00` means "offset unknown" in RFC 3339.
 */
export const UTC_TIMESTAMP_PATTERN =
  /^(\d{4})-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d{1,9})?(Z|\+00:00)$/;
const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

export function isUtcTimestamp(s: unknown): s is string {
  return typeof s === 'string' && utcTimestampProblem(s) === undefined;
}

/**
 * The instants every supported database stores alike, and the contract's range for every
 * timestamp: MySQL/MariaDB `datetime(3)` holds 1000-01-01 to 9999-12-31 23:59:59.999 (the
 * narrowest); SQL Server `datetime2(3)` (0001-9999), PostgreSQL `timestamptz(3)` (4713 BC-294276
 * AD) and SQLite's text hold more. Outside it one database refuses what another stores (PostgreSQL
 * refuses year 0000, which SQLite keeps), so the event would be stored here and dead-lettered
 * there. The 4-digit year of the pattern bounds the top: a fraction past milliseconds is
 * truncated, so 9999-12-31T23:59:59.9999Z is stored as ...59.999Z.
 */
export const EARLIEST_TIMESTAMP = '1000-01-01T00:00:00.000Z';
export const LATEST_TIMESTAMP = '9999-12-31T23:59:59.999Z';
export const EARLIEST_YEAR = 1000;

const TIMESTAMP_FORMAT_RULE = MESSAGES.timestampFormat;
const TIMESTAMP_RANGE_RULE = say('timestampRange', { earliest: EARLIEST_TIMESTAMP, latest: LATEST_TIMESTAMP });

/**
 * What is wrong with a timestamp string, or undefined: the one place that decides, for the
 * contract's decorator and the fast rules alike.
 */
export function utcTimestampProblem(s: string): string | undefined {
  const match = UTC_TIMESTAMP_PATTERN.exec(s);
  if (match === null) return TIMESTAMP_FORMAT_RULE;
  // The pattern allows day 31 in every month; Date would silently roll 2023-02-29 over to March 1st.
  const year = Number(match[1]);
  const month = Number(match[2]);
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  if (Number(match[3]) > (month === 2 && leap ? 29 : DAYS_IN_MONTH[month - 1])) return TIMESTAMP_FORMAT_RULE;
  return year < EARLIEST_YEAR ? TIMESTAMP_RANGE_RULE : undefined;
}

/** A non-negative amount of money as a decimal string: up to 12 digits before and after the point. */
export const DECIMAL_AMOUNT_PATTERN = /^[0-9]{1,12}(\.[0-9]{1,12})?$/;
