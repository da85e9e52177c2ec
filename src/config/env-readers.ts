/** Helpers shared by every module that reads its settings from the environment. */
export type Env = Record<string, string | undefined>;

/** The variable's trimmed value; unset and blank both mean "use the default". */
export function read(env: Env, name: string): string | undefined {
  const value = env[name];
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}

/** A whole number within [min, max], or an Error saying what is wrong with `raw`. */
export function integer(raw: string, min: number, max: number): number {
  if (!/^-?\d+$/.test(raw)) throw new Error(`"${raw}" is not an integer`);
  const n = Number(raw);
  if (n < min || n > max) throw new Error(`${n} is outside ${min}-${max}`);
  return n;
}

const DURATION_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `500ms`, `90s`, `15m`, `2h`, `1d` → milliseconds within [minMs, maxMs], or an Error saying what is wrong. */
export function durationMs(raw: string, minMs: number, maxMs: number): number {
  const m = /^(\d{1,9})\s*(ms|s|m|h|d)$/i.exec(raw);
  if (!m) throw new Error(`"${raw}" is not a duration; use a whole number and a unit ms, s, m, h or d (e.g. 15m)`);
  const ms = Number(m[1]) * DURATION_MS[m[2].toLowerCase()];
  if (ms < minMs || ms > maxMs) throw new Error(`${raw} is outside ${minMs} ms-${maxMs / 86_400_000} days`);
  return ms;
}
