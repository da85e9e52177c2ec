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
const UUID_PATTERN = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

export function isUuid(s: unknown): s is string {
  return typeof s === 'string' && UUID_PATTERN.test(s);
}

/**
 * ISO-8601 extended date-time in UTC: `YYYY-MM-DDTHH:MM:SS[.fraction](Z|+00:00)`. Offsets other than
 * zero are refused rather than converted: a non-UTC stamp means the executor's clock handling is off,
 * and `-00:00` means "offset unknown" in RFC 3339.
 */
const UTC_TIMESTAMP_PATTERN = /^(\d{4})-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d{1,9})?(Z|\+00:00)$/;
const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

export function isUtcTimestamp(s: unknown): s is string {
  const match = typeof s === 'string' ? UTC_TIMESTAMP_PATTERN.exec(s) : null;
  if (match === null) return false;
  // The pattern allows day 31 in every month; Date would silently roll 2023-02-29 over to March 1st.
  const year = Number(match[1]);
  const month = Number(match[2]);
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  return Number(match[3]) <= (month === 2 && leap ? 29 : DAYS_IN_MONTH[month - 1]);
}
