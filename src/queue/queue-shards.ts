import clusterKeySlot from 'cluster-key-slot';
import type { RedisClient } from './connect-redis';
import { EVENTS_QUEUE } from './queue-names';
import { MAX_QUEUE_SHARDS } from '../config/queue-shard-settings';
import { fnv1a32 } from '../shared/fnv1a';

/**
 * Queue shards (QUEUE_SHARDS=N): the events queue split into N BullMQ queues, each under a prefix of
 * its own, so that on Redis Cluster each shard hashes to its own slot and the shards spread over the
 * masters. An event goes to the shard of its plan id (shardOfPlan), so one plan's events stay on one
 * queue and in one of the store's lanes. Shard 0 is always QUEUE_PREFIX itself: with N = 1 the
 * key layout is exactly the unsharded one, and going from 1 to N keeps the old queue as shard 0.
 */

export { MAX_QUEUE_SHARDS, parseQueueShards, parseWorkerShards } from '../config/queue-shard-settings';

/** Redis Cluster's slot count. */
const SLOTS = 16_384;

/** One events-queue shard: its position in a layout of `count` shards and its BullMQ prefix. */
export interface QueueShard {
  index: number;
  count: number;
  prefix: string;
}

/**
 * The shard of a plan id: 32-bit FNV-1a over its UTF-16 code units, modulo `count`. Stable across
 * processes and versions (the publisher, the HTTP server and `dlq replay` must agree).
 */
export function shardOfPlan(planId: string, count: number): number {
  if (count <= 1) return 0;
  return fnv1a32(planId) % count;
}

/** Redis Cluster's slot of a hash tag's text: CLUSTER KEYSLOT of `{text}` (CRC16-XMODEM modulo 16384). */
export function slotOfTag(text: string): number {
  return clusterKeySlot(`{${text}}`);
}

function circularDistance(a: number, b: number): number {
  const d = Math.abs(a - b);
  return Math.min(d, SLOTS - d);
}

/**
 * The prefix of shard `index` of `count`. Shard 0 is `prefix` unchanged. For a prefix with a hash
 * tag `{T}`, shard i's tag is `{T-s<i>of<N>-<k>}` with the smallest k whose slot lies within
 * 16384/(16N) slots of slot(T) + i*16384/N: the N shards sit at even distances around the slot
 * ring, so on a cluster whose masters own equal contiguous ranges (what `redis-cli --cluster create`
 * and rebalance make) the shards divide about evenly over the masters: a shard whose even spot lies
 * within that tolerance of a range boundary may land on the neighbouring master (with N = 2M
 * shards over M masters, every master gets one to three). Without a tag (one Redis) shard i
 * is `<prefix>-s<i>of<N>`.
 */
export function shardPrefix(prefix: string, index: number, count: number): string {
  if (index === 0) return prefix;
  const open = prefix.indexOf('{');
  const close = open < 0 ? -1 : prefix.indexOf('}', open + 1);
  if (close <= open + 1) return `${prefix}-s${index}of${count}`;
  const tag = prefix.slice(open + 1, close);
  const target = (slotOfTag(tag) + Math.round((index * SLOTS) / count)) % SLOTS;
  const tolerance = Math.max(1, Math.floor(SLOTS / (16 * count)));
  let k = 0;
  while (circularDistance(slotOfTag(`${tag}-s${index}of${count}-${k}`), target) > tolerance) k++;
  return `${prefix.slice(0, open + 1)}${tag}-s${index}of${count}-${k}${prefix.slice(close)}`;
}

const layoutCache = new Map<string, QueueShard[]>();

/** The `count` shards of `prefix`, shard 0 first. */
export function queueShards(prefix: string, count: number): QueueShard[] {
  const key = `${count}\n${prefix}`;
  let shards = layoutCache.get(key);
  if (!shards) {
    shards = Array.from({ length: count }, (_, index) => ({ index, count, prefix: shardPrefix(prefix, index, count) }));
    layoutCache.set(key, shards);
  }
  return shards;
}

/**
 * Which shard a prefix found in Redis or in a dead letter's provenance is, relative to the
 * deployment's QUEUE_PREFIX: `{ index: 0, count: 1 }` for the prefix itself (shard 0 of every
 * layout), null for a prefix that is no shard of it.
 */
export function shardOfPrefix(basePrefix: string, prefix: string): { index: number; count: number } | null {
  if (prefix === basePrefix) return { index: 0, count: 1 };
  const m = /-s(\d+)of(\d+)(?:-\d+)?(?=}|$)/.exec(prefix);
  if (!m) return null;
  const index = Number(m[1]);
  const count = Number(m[2]);
  if (count < 2 || count > MAX_QUEUE_SHARDS || index < 1 || index >= count) return null;
  return shardPrefix(basePrefix, index, count) === prefix ? { index, count } : null;
}

/** The set of shard counts publishers have used under a prefix (in shard 0's slot). */
export function layoutsKey(prefix: string): string {
  return `${prefix}:${EVENTS_QUEUE}-shard-layouts`;
}

/** Records that a publisher sends with `count` shards, so workers of another count drain these shards too. */
export async function registerLayout(redis: RedisClient, prefix: string, count: number): Promise<void> {
  await redis.sadd(layoutsKey(prefix), String(count));
}

/** Every shard count registered under `prefix` (1 always included). */
export async function registeredLayouts(redis: RedisClient, prefix: string): Promise<number[]> {
  const members = await redis.smembers(layoutsKey(prefix));
  const counts = new Set([1]);
  for (const m of members) {
    const n = Number(m);
    if (Number.isSafeInteger(n) && n >= 1 && n <= MAX_QUEUE_SHARDS) counts.add(n);
  }
  return [...counts].sort((a, b) => a - b);
}

/**
 * The shards a worker consumes: those of WORKER_SHARDS when set, else every shard of its own layout
 * plus every shard of each other registered layout (what publishers with an older QUEUE_SHARDS
 * left), deduplicated by prefix (shard 0 is shared by all layouts).
 */
export function consumedShards(
  prefix: string,
  count: number,
  pinned: number[] | null,
  layouts: number[],
): QueueShard[] {
  const own = queueShards(prefix, count);
  if (pinned) return pinned.map((i) => own[i]);
  const byPrefix = new Map<string, QueueShard>(own.map((s) => [s.prefix, s]));
  for (const n of layouts)
    for (const s of queueShards(prefix, n)) if (!byPrefix.has(s.prefix)) byPrefix.set(s.prefix, s);
  return [...byPrefix.values()];
}

/** `3` for shard 3 of the current layout, `3/6` for a shard of another layout: metrics labels and tables. */
export function shardLabel(shard: Pick<QueueShard, 'index' | 'count'>, currentCount: number): string {
  return shard.count === currentCount || shard.index === 0 ? String(shard.index) : `${shard.index}/${shard.count}`;
}
