/**
 * The one grammar of an instant typed by a person or a client: the read commands' `--from` /
 * `--to` (and the HTTP API's `from` / `to`), and `dlq --since` / `--until`.
 *
 * - `2026-02-04`: midnight UTC;
 * - `2026-02-04T10:00`, `2026-02-04 10:00:30.5`: a date and a time, `T` or a space between them;
 * - with `Z` or an offset (`+02:00`, `-0530`) the time is in that offset; without one it is UTC,
 *   so an operator's laptop time zone never shifts what a command selects.
 *
 * Impossible calendar fields (2026-02-30, 25:00) are refused rather than rolled over as `Date`
 * does, and so are years before 1970: nothing in the ledger is that old, so `0202-01-01` is a typo.
 */
const ISO_INSTANT =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}:?\d{2})?)?$/i;
const OFFSET = /^([+-])(\d{2}):?(\d{2})$/;
const FIRST_YEAR = 1970;

export const ISO_INSTANT_EXAMPLES = '2026-02-04, 2026-02-04T10:00:00Z or 2026-02-04 10:00+02:00';

export type ParsedInstant = { ok: true; date: Date } | { ok: false; problem: string };

/** `raw` as an instant, or the problem with it in words (the caller names the argument). */
export function parseInstant(raw: string): ParsedInstant {
  const text = raw.trim();
  const m = ISO_INSTANT.exec(text);
  const invalid: ParsedInstant = {
    ok: false,
    problem: `"${raw}" is not an ISO-8601 date or time, e.g. ${ISO_INSTANT_EXAMPLES}`,
  };
  if (!m) return invalid;
  const [, year, month, day, hour = '0', minute = '0', second = '0', fraction, offset] = m;
  const o = offset && offset.toUpperCase() !== 'Z' ? OFFSET.exec(offset) : null;
  if (
    +month < 1 ||
    +month > 12 ||
    +day < 1 ||
    +hour > 23 ||
    +minute > 59 ||
    +second > 59 ||
    (o && (+o[2] > 23 || +o[3] > 59))
  )
    return invalid;
  // the calendar day must exist: Date.UTC rolls 2026-02-30 over to March 2nd
  const midnight = new Date(Date.UTC(+year, +month - 1, +day));
  if (midnight.getUTCMonth() !== +month - 1 || midnight.getUTCDate() !== +day) return invalid;
  if (+year < FIRST_YEAR)
    return { ok: false, problem: `"${raw}" is before ${FIRST_YEAR}: nothing in the ledger is that old (a typo?)` };
  // the first three digits, as text: 0.57 * 1000 is 569.999... in floating point
  const ms = fraction ? Number(fraction.padEnd(3, '0').slice(0, 3)) : 0;
  const offsetMs = o ? (o[1] === '-' ? -1 : 1) * (+o[2] * 60 + +o[3]) * 60_000 : 0;
  const date = new Date(Date.UTC(+year, +month - 1, +day, +hour, +minute, +second, ms) - offsetMs);
  return { ok: true, date };
}
