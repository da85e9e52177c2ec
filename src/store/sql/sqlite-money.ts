/**
 * Exact sums of SQLite's money columns. The column holds the amount as text with 12 decimals
 * (`formatMoney`; a total added with a default may hold `0`). SQLite sums integers exactly up to
 * 2^63, which as pico-dollars is only $9.2 million, and the driver returns an integer above 2^53
 * ($9,007 as pico-dollars) as an inexact JS number. So the whole dollars and the pico-dollars
 * after the point are summed apart (each stays far from 2^63), and both sums travel as text:
 * `<whole>:<fraction>`, which `summedSqliteMoney` adds exactly.
 */
export function sumSqliteMoney(column: string): string {
  const point = `instr(${column}, '.')`;
  const sign = `CASE WHEN ${column} LIKE '-%' THEN -1 ELSE 1 END`;
  const whole = `CAST(CASE WHEN ${point} > 0 THEN substr(${column}, 1, ${point} - 1) ELSE ${column} END AS INTEGER)`;
  const fraction = `CASE WHEN ${point} > 0 THEN ${sign} * CAST(substr(substr(${column}, ${point} + 1) || '000000000000', 1, 12) AS INTEGER) ELSE 0 END`;
  return `CAST(SUM(${whole}) AS TEXT) || ':' || CAST(SUM(${fraction}) AS TEXT)`;
}

/** The pico-dollars of a `sumSqliteMoney` value (0 for the NULL of no rows). */
export function summedSqliteMoney(value: unknown): bigint {
  if (value === null || value === undefined) return 0n;
  const m = /^(-?\d+):(-?\d+)$/.exec(String(value));
  if (!m) throw new Error(`not a money sum: ${JSON.stringify(String(value).slice(0, 40))}`);
  return BigInt(m[1]!) * 10n ** 12n + BigInt(m[2]!);
}
