/** Milliseconds in a UTC day: the unit of the ledger's day rollups and retention windows. */
export const DAY_MS = 86_400_000;
