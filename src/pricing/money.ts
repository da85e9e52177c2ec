/**
 * Money as an exact decimal: a bigint count of pico-dollars (10^-12 USD), the scale of the cost
 * columns (DECIMAL(24,12)). Sums are bigint sums, so a total is the same on every database and in
 * every process to the last digit; no float ever holds an amount.
 */
export const MONEY_SCALE = 12;
const UNIT = 10n ** BigInt(MONEY_SCALE);
/** Largest amount a cost column holds: 10^12 - 10^-12 (DECIMAL(24,12)). */
export const MAX_MONEY = 10n ** 24n - 1n;

const DECIMAL = /^(\d{1,12})(?:\.(\d{1,12}))?$/;

/** Pico-dollars of a decimal string with at most 12 digits on each side of the point, or undefined. */
export function parseMoney(text: string): bigint | undefined {
  const m = DECIMAL.exec(text);
  if (!m) return undefined;
  return BigInt(m[1]!) * UNIT + BigInt((m[2] ?? '').padEnd(MONEY_SCALE, '0'));
}

/**
 * Pico-dollars of a value read back from a database: a decimal string (PostgreSQL, MySQL drivers),
 * possibly with fewer or more zero decimals, a plain decimal string (SQLite keeps text), or a JS
 * number (SQL Server's driver reads DECIMAL so: exact to about 15 significant digits, rounded to 12
 * decimals here).
 */
export function moneyFromColumn(value: unknown): bigint | null {
  if (value === null || value === undefined) return null;
  const text = typeof value === 'number' ? value.toFixed(MONEY_SCALE) : String(value).trim();
  const m = /^(-)?(\d+)(?:\.(\d*))?$/.exec(text);
  if (!m) throw new Error(`not a decimal amount: ${JSON.stringify(text.slice(0, 40))}`);
  const decimals = (m[3] ?? '').replace(/0+$/, '');
  if (decimals.length > MONEY_SCALE) throw new Error(`more than ${MONEY_SCALE} decimals: ${text.slice(0, 40)}`);
  const units = BigInt(m[2]!) * UNIT + BigInt(decimals.padEnd(MONEY_SCALE, '0') || '0');
  return m[1] ? -units : units;
}

/** The column form: always 12 decimals ("0.006000000000"), so text compares and sums alike everywhere. */
export function formatMoney(units: bigint): string {
  const negative = units < 0n;
  const abs = negative ? -units : units;
  const whole = abs / UNIT;
  const frac = (abs % UNIT).toString().padStart(MONEY_SCALE, '0');
  return `${negative ? '-' : ''}${whole}.${frac}`;
}

/** For people: trailing zeros dropped, at least 2 decimals ("0.006", "12.50", "0.00"). */
export function displayMoney(units: bigint): string {
  const full = formatMoney(units);
  const [whole, frac] = full.split('.') as [string, string];
  const trimmed = frac.replace(/0+$/, '');
  return `${whole}.${trimmed.length >= 2 ? trimmed : trimmed.padEnd(2, '0')}`;
}

/**
 * A price in USD per million tokens as the price table gives it (a JS number) in pico-dollars per
 * token: the number's shortest decimal form, rounded half-up at the sixth decimal (a millionth of a
 * dollar per million tokens is one pico-dollar per token). Table prices have at most six decimals,
 * except a few that are binary fractions of such a price (0.18000000000000002), which this restores.
 */
export function picoPerTokenOfMtokPrice(price: number): bigint {
  let pico = PICO_PER_TOKEN.get(price);
  if (pico === undefined) {
    if (!Number.isFinite(price) || price < 0) throw new Error(`not a price: ${price}`);
    pico = decimalToScaled(price, 6);
    if (PICO_PER_TOKEN.size >= 10_000) PICO_PER_TOKEN.clear();
    PICO_PER_TOKEN.set(price, pico);
  }
  return pico;
}

/** A price table has a few hundred distinct prices: each is converted once. */
const PICO_PER_TOKEN = new Map<number, bigint>();

/** A non-negative finite number's decimal value scaled by 10^scale, rounded half-up. */
export function decimalToScaled(value: number, scale: number): bigint {
  const [mantissa, exponentText] = value.toExponential().split('e') as [string, string];
  const exponent = Number(exponentText);
  const [intPart, fracPart = ''] = mantissa.split('.') as [string, string?];
  const digits = BigInt(intPart + fracPart);
  const shift = exponent - fracPart.length + scale; // value * 10^scale = digits * 10^shift
  if (shift >= 0) return digits * 10n ** BigInt(shift);
  const divisor = 10n ** BigInt(-shift);
  const q = digits / divisor;
  return (digits % divisor) * 2n >= divisor ? q + 1n : q;
}
