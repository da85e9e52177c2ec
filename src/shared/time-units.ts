/** Milliseconds in a UTC day: the unit of the ledger's day rollups and retention windows. */
export const DAY_MS = 86_400_000;

/** Milliseconds of an instant as a row holds it (a Date, or the text or number a driver gave), without a new Date for a Date. */
export function msOf(value: Date | string | number): number {
  return value instanceof Date ? value.getTime() : new Date(value).getTime();
}
