/**
 * Array helpers for data-sized arrays. `target.push(...items)` and `Math.max(...values)` pass every
 * element as a call argument, and V8 throws `RangeError: Maximum call stack size exceeded` past
 * ~120k of them; these loop instead (test/shared/no-spread-calls.unit.test.ts keeps such spreads out).
 */

/** Appends `items` to `target` in order, however many there are; returns `target`. */
export function pushAll<T>(target: T[], items: Iterable<T>): T[] {
  for (const item of items) target.push(item);
  return target;
}
