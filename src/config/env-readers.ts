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
