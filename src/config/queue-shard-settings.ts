/** QUEUE_SHARDS and WORKER_SHARDS as settings; what they mean is in src/queue/queue-shards.ts. */

/** Largest QUEUE_SHARDS. */
export const MAX_QUEUE_SHARDS = 64;

/** QUEUE_SHARDS: an integer from 1 to MAX_QUEUE_SHARDS. */
export function parseQueueShards(raw: string | undefined): number {
  if (raw === undefined) return 1;
  const n = /^\d+$/.test(raw.trim()) ? Number(raw.trim()) : NaN;
  if (!Number.isSafeInteger(n) || n < 1 || n > MAX_QUEUE_SHARDS)
    throw new Error(`"${raw}" must be a whole number from 1 to ${MAX_QUEUE_SHARDS} (the events queue's shard count)`);
  return n;
}

/**
 * WORKER_SHARDS: the shards of QUEUE_SHARDS this worker consumes, e.g. `0,2,4` or `0-2,5`; unset or
 * `all`: every shard (and the shards of other layouts that hold jobs, see consumedShards). Null = all.
 */
export function parseWorkerShards(raw: string | undefined, count: number): number[] | null {
  if (raw === undefined || raw.trim().toLowerCase() === 'all') return null;
  const picked = new Set<number>();
  for (const part of raw.split(',').map((s) => s.trim())) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part);
    if (!m) throw new Error(`"${raw}": "${part}" is not a shard number or range; expected e.g. 0,2,4 or 0-2 or all`);
    const from = Number(m[1]);
    const to = m[2] === undefined ? from : Number(m[2]);
    if (to < from) throw new Error(`"${raw}": range ${part} runs backwards`);
    if (to >= count)
      throw new Error(`"${raw}": shard ${to} does not exist with QUEUE_SHARDS=${count} (shards are 0-${count - 1})`);
    for (let i = from; i <= to; i++) picked.add(i);
  }
  return [...picked].sort((a, b) => a - b);
}
