/**
 * Drivers hand back the same stored value in different shapes: PostgreSQL returns COUNT/SUM as
 * bigint strings, MariaDB returns SUM as DECIMAL strings, SQLite returns raw timestamps as text
 * (`2026-02-04 10:00:00.000`, UTC), PostgreSQL and mysql2 as Date. Every query result passes through
 * these so `--json` is byte-identical on every database.
 */

const SQLITE_UTC_TEXT = /^\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/;

/** An instant as `toISOString()` (UTC, milliseconds), or null. */
export function toIso(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  if (value instanceof Date) return value.toISOString();
  const text = String(value);
  // SQLite text without an offset is UTC (TypeORM writes it so); `new Date` would read it as local
  const date = new Date(SQLITE_UTC_TEXT.test(text) ? `${text.replace(' ', 'T')}Z` : text);
  if (Number.isNaN(date.getTime())) throw new Error(`unreadable timestamp "${text}" from the database`);
  return date.toISOString();
}

/** A calendar day `YYYY-MM-DD` from a DATE/Date/text bucket. */
export function toDay(value: unknown): string {
  if (value instanceof Date) return value.toISOString().slice(0, 10);
  return String(value).slice(0, 10);
}

/** A number from number / numeric string / bigint; null and undefined count as 0 (empty SUM). */
export function toNum(value: unknown): number {
  if (value === null || value === undefined) return 0;
  const n = typeof value === 'number' ? value : Number(value);
  if (!Number.isFinite(n)) throw new Error(`unreadable number "${String(value)}" from the database`);
  return n;
}

/** Round to `digits` decimals so float noise never differs between databases. */
export function round(value: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

/** `part / whole` rounded, or null when there is nothing to divide by. */
export function ratio(part: number, whole: number, digits = 4): number | null {
  return whole > 0 ? round(part / whole, digits) : null;
}

/** Milliseconds between two ISO instants, or null when either is missing. */
export function durationMs(start: string | null, end: string | null): number | null {
  if (!start || !end) return null;
  return Date.parse(end) - Date.parse(start);
}

export function parseJson<T>(text: string | null | undefined, fallback: T): T {
  if (text === null || text === undefined || text === '') return fallback;
  try {
    return JSON.parse(text) as T;
  } catch {
    return fallback;
  }
}

/**
 * Deterministic text order (UTF-16 code units). Database collations disagree (MariaDB's
 * utf8mb4_unicode_ci ignores case, glibc locales ignore punctuation), so ties and groupings are
 * ordered here rather than by ORDER BY on text.
 */
export function compareText(a: string | null, b: string | null): number {
  if (a === b) return 0;
  if (a === null) return 1;
  if (b === null) return -1;
  return a < b ? -1 : 1;
}
