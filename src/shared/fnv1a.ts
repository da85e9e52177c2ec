/**
 * 32-bit FNV-1a over a string's UTF-16 code units, unsigned. Stable across processes and versions:
 * queue shards and the worker's transaction lanes are chosen by it. Cheap on short ASCII ids, and it
 * spreads sequential ids (`plan-1`, `plan-2`) apart.
 */
export function fnv1a32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}
