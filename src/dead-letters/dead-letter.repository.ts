import type { JobType, Queue } from 'bullmq';
import type IORedis from 'ioredis';
import type { DeadLetter } from './dead-letter';
import { ClaimedLetter, DeadLetterSummary, decodeClaimed, toSummary } from './dead-letter-codec';
import { claimedFromRecord, decodeEntry } from './dead-letter-compat';
import { DeadLetterScripts, DepthPage, RawEntry, StatsPage, WrittenEntry } from './dead-letter-scripts';

/**
 * Dead letters are jobs on DEAD_LETTER_QUEUE that no worker ever consumes, so they sit in BullMQ's
 * waiting list (where BullMQ 6 also keeps the jobs of a paused queue) until `dlq replay` or
 * `dlq purge` removes them. Delayed and prioritized are read too, in case a writer ever sets those
 * job options. The queue is the only store: nothing here caches.
 */
export const DEAD_LETTER_STATES: readonly JobType[] = ['waiting', 'delayed', 'prioritized'];

/** Entries read per Redis round trip while scanning. @defaultValue 1000 */
export const SCAN_PAGE_SIZE = 1_000;

/**
 * Entries a claim or removal script handles per call. Each call blocks Redis for its length, and a
 * live queue on the same Redis waits behind it: 50 is the size at which a 100k replay beside one
 * kept it above half its throughput; 25 cost the replay more round trips than it gave back
 * (BENCHMARKS.md, "Dead letters").
 */
export const WRITE_PAGE_SIZE = 50;

/** How long a replay's claim on a dead letter lasts if the replay dies holding it. @defaultValue 10 min */
export const CLAIM_TTL_MS = 600_000;

/** Calls `fn` on `ids` a page at a time: a script's arguments are spread into one call, whose size is bounded. */
async function paged<T>(
  ids: readonly string[],
  size: number,
  fn: (page: readonly string[]) => Promise<T>,
): Promise<T[]> {
  const out: T[] = [];
  for (let p = 0; p < ids.length; p += size) out.push(await fn(ids.slice(p, p + size)));
  return out;
}

/**
 * Reads and removes dead letters with Lua scripts (dead-letter-scripts.ts), a page of ids per round
 * trip. A scan first takes a snapshot of the ids (one LRANGE, the ids alone), so entries
 * removed or added meanwhile never shift what a page holds: none is seen twice, and removed ones
 * are skipped.
 */
export class DeadLetterRepository {
  constructor(
    private readonly queue: Queue,
    private readonly pageSize = SCAN_PAGE_SIZE,
    private readonly writePageSize = WRITE_PAGE_SIZE,
  ) {}

  /** The queue's own ioredis client (BullMQ's type for it leaves out `eval`). */
  private async redis(): Promise<IORedis> {
    return (await this.queue.backend.client) as unknown as IORedis;
  }

  private async scripts(): Promise<DeadLetterScripts> {
    const { wait, delayed, prioritized } = this.queue.keys;
    return new DeadLetterScripts(await this.redis(), { jobPrefix: this.queue.toKey(''), wait, delayed, prioritized });
  }

  /** Every id, oldest first (the wait list's tail first, then delayed and prioritized entries). */
  async ids(): Promise<string[]> {
    const client = await this.redis();
    const [waiting, delayed, prioritized] = await Promise.all([
      client.lrange(this.queue.keys.wait, 0, -1),
      client.zrange(this.queue.keys.delayed, 0, -1),
      client.zrange(this.queue.keys.prioritized, 0, -1),
    ]);
    waiting.reverse();
    const seen = new Set(waiting);
    for (const id of [...delayed, ...prioritized]) {
      if (!seen.has(id)) {
        waiting.push(id);
        seen.add(id);
      }
    }
    return waiting;
  }

  private async read(mode: 'summary' | 'full', ids: readonly string[]): Promise<RawEntry[]> {
    const scripts = await this.scripts();
    return (await paged(ids, this.pageSize, (page) => scripts.read(mode, page))).flat();
  }

  /**
   * Stores the summary fields of entries just written (see SUMMARY_FIELD) and, for those stored as
   * encodeDeadLetter laid them out, their REPLAY_FIELD.
   */
  async addSummaries(letters: readonly WrittenEntry[]): Promise<void> {
    if (letters.length === 0) return;
    const scripts = await this.scripts();
    for (let p = 0; p < letters.length; p += this.pageSize)
      await scripts.addSummaries(letters.slice(p, p + this.pageSize));
  }

  /** Summaries of `ids` that still exist, in that order. */
  async summaries(ids: string[]): Promise<DeadLetterSummary[]> {
    return (await this.read('summary', ids)).map(([id, name, ts, data]) => toSummary(decodeEntry(id, name, ts, data)));
  }

  /** Every entry's summary, oldest first, a page at a time (see the class comment). */
  async *scan(): AsyncGenerator<DeadLetterSummary[]> {
    yield* this.scanIds(await this.ids());
  }

  /** The summaries of a snapshot of ids, a page at a time; each page may be empty (all removed meanwhile). */
  async *scanIds(ids: string[]): AsyncGenerator<DeadLetterSummary[]> {
    for (let i = 0; i < ids.length; i += this.pageSize) {
      yield await this.summaries(ids.slice(i, i + this.pageSize));
    }
  }

  async get(id: string): Promise<DeadLetter | undefined> {
    return (await this.getMany([id]))[0];
  }

  /** The entries of `ids` in that order, events included; `undefined` where one no longer exists. */
  async getMany(ids: string[]): Promise<Array<DeadLetter | undefined>> {
    const found = new Map(
      (await this.read('full', ids)).map(([id, name, ts, data]) => [id, decodeEntry(id, name, ts, data)]),
    );
    return ids.map((id) => found.get(id));
  }

  /**
   * Claims the entries for `token` (for CLAIM_TTL_MS): a second replay running at the same time
   * skips them, so no event is sent twice and no dead letter is written twice. Returns the entries
   * claimed (existing and not claimed by someone else), what a replay needs of each, in the order
   * of `ids`.
   */
  async claim(ids: string[], token: string, ttlMs = CLAIM_TTL_MS): Promise<ClaimedLetter[]> {
    const scripts = await this.scripts();
    const claimed: ClaimedLetter[] = [];
    for (let p = 0; p < ids.length; p += this.writePageSize) {
      for (const e of await scripts.claim(token, ttlMs, ids.slice(p, p + this.writePageSize))) {
        // an empty REPLAY_FIELD: the entry came back whole, as an older writer laid it out
        claimed.push(
          e.replayField.length > 0 ? decodeClaimed(e.id, e.replayField, e.payload) : claimedFromRecord(e.id, e.payload),
        );
      }
    }
    return claimed;
  }

  /** Gives up `token`'s claims on `ids` (entries read but not sent), so the next replay may take them at once. */
  async release(ids: string[], token: string): Promise<number> {
    const scripts = await this.scripts();
    return (await paged(ids, this.writePageSize, (page) => scripts.release(token, page))).reduce((a, b) => a + b, 0);
  }

  /** Removes the given entries (absent ones are ignored). Returns how many went. */
  async remove(ids: string[]): Promise<number> {
    const scripts = await this.scripts();
    return (await paged(ids, this.writePageSize, (page) => scripts.remove(page))).reduce((a, b) => a + b, 0);
  }

  /**
   * Counts by kind and by type (type '' = none) and the entry dead-lettered longest ago, computed
   * inside Redis a page at a time. `oldest.at` is an ISO time, or `#<job timestamp ms>` for an entry
   * without one.
   */
  async countAll(): Promise<StatsPage> {
    const scripts = await this.scripts();
    const all: StatsPage = { total: 0, byKind: new Map(), byType: new Map(), oldest: null };
    for (const page of await paged(await this.ids(), this.pageSize, (ids) => scripts.countStats(ids))) {
      all.total += page.total;
      if (page.oldest && (!all.oldest || atMs(page.oldest.at) < atMs(all.oldest.at))) all.oldest = page.oldest;
      for (const [kind, n] of page.byKind) all.byKind.set(kind, (all.byKind.get(kind) ?? 0) + n);
      for (const [type, n] of page.byType) all.byType.set(type, (all.byType.get(type) ?? 0) + n);
    }
    return all;
  }

  /**
   * Dead letters by kind and the time (ms) the oldest was dead-lettered, for the worker's /metrics:
   * reads each entry's job name and time only (no event, no JSON), a page of the wait list per
   * round trip, paged from its tail by negative index inside Redis, so entries added meanwhile (at
   * the head) shift nothing; during a replay or purge the figures are approximate.
   */
  async depth(): Promise<{ total: number; byKind: Map<string, number>; oldestAtMs: number | undefined }> {
    const scripts = await this.scripts();
    const all = { total: 0, byKind: new Map<string, number>(), oldestAtMs: undefined as number | undefined };
    const add = (page: DepthPage): void => {
      all.total += page.total;
      if (page.oldestAtMs !== undefined && (all.oldestAtMs === undefined || page.oldestAtMs < all.oldestAtMs))
        all.oldestAtMs = page.oldestAtMs;
      for (const [kind, n] of page.byKind) all.byKind.set(kind, (all.byKind.get(kind) ?? 0) + n);
    };
    for (let end = -1; ; end -= this.pageSize) {
      const page = await scripts.countDepthRange(end - this.pageSize + 1, end);
      add(page);
      if (page.looked < this.pageSize) break;
    }
    const client = await this.redis();
    const [delayed, prioritized] = await Promise.all([
      client.zrange(this.queue.keys.delayed, 0, -1),
      client.zrange(this.queue.keys.prioritized, 0, -1),
    ]);
    for (const page of await paged([...new Set([...delayed, ...prioritized])], this.pageSize, (ids) =>
      scripts.countDepthIds(ids),
    ))
      add(page);
    return all;
  }

  /** How many entries the queue holds, without reading them. */
  async count(): Promise<number> {
    const counts = await this.queue.getJobCounts(...DEAD_LETTER_STATES);
    return Object.values(counts).reduce((a, b) => a + b, 0);
  }
}

/** Milliseconds of an `oldest.at` from countAll. */
export function atMs(at: string): number {
  if (at.startsWith('#')) return Number(at.slice(1));
  const t = Date.parse(at);
  return Number.isNaN(t) ? 0 : t;
}
