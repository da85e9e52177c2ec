/**
 * A plan's transaction lane (micro-batcher): FNV-1a of its id. Any stable hash would do; this one
 * is cheap on short ASCII ids and spreads sequential ids (`plan-1`, `plan-2`) across lanes.
 */
export function planLane(planId: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < planId.length; i++) {
    h ^= planId.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}
