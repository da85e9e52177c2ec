/**
 * The dead-letter queue's Lua scripts (lua/*.lua, each documents its KEYS, ARGV and reply), as
 * typed calls: arguments laid out and replies decoded here, one Redis call each. Paging (how many
 * ids a call carries) is the repository's business.
 */
import { LuaScript, ScriptClient } from './lua-script';

const SCRIPTS = {
  addSummaries: new LuaScript('add-summaries', 1),
  read: new LuaScript('read-entries', 1),
  stats: new LuaScript('count-stats', 1),
  depth: new LuaScript('count-depth', 2),
  claim: new LuaScript('claim-entries', 1),
  release: new LuaScript('release-claims', 1),
  remove: new LuaScript('remove-entries', 4),
};

/** Every script, for a check that each one loads (tests, the built package). */
export const DEAD_LETTER_SCRIPTS: readonly LuaScript[] = Object.values(SCRIPTS);

/** The keys of the dead-letter queue the scripts work on. */
export interface DeadLetterKeys {
  /** Job key prefix, `<prefix>:<queue>:` (a job's hash is this and its id). */
  jobPrefix: string;
  wait: string;
  delayed: string;
  prioritized: string;
}

/** An entry as read-entries returns it: id, job name, job timestamp (ms, as text), data. */
export type RawEntry = [id: string, name: string, timestamp: string, data: string];

/** An entry just written: its record's byte length and REPLAY_FIELD value, when the writer laid it out. */
export interface WrittenEntry {
  id: string;
  bytes?: number;
  replayField?: string;
}

/** One page of count-stats: counts by kind and by type ('' = none), and the entry dead-lettered longest ago. */
export interface StatsPage {
  total: number;
  byKind: Map<string, number>;
  byType: Map<string, number>;
  /** `at`: lastFailedAt, or `#<job timestamp ms>` for an entry without one. */
  oldest: { id: string; at: string } | null;
}

/** One page of count-depth: entries by job name, the smallest job timestamp, how many ids were looked at. */
export interface DepthPage {
  total: number;
  byKind: Map<string, number>;
  oldestAtMs: number | undefined;
  looked: number;
}

/** A claim-entries answer for one entry: REPLAY_FIELD and the event's bytes, or '' and the whole record. */
export interface ClaimedEntry {
  id: string;
  replayField: Buffer;
  payload: Buffer;
}

/** `name1, count1, name2, count2, ...` from `from` up to `to` (exclusive) into `into`. */
function addCounts(
  into: Map<string, number>,
  flat: ReadonlyArray<string | number>,
  from: number,
  to = flat.length,
): void {
  for (let j = from; j < to; j += 2) into.set(String(flat[j]), (into.get(String(flat[j])) ?? 0) + Number(flat[j + 1]));
}

/** The scripts bound to one queue's keys and connection. */
export class DeadLetterScripts {
  constructor(
    private readonly client: ScriptClient,
    private readonly keys: DeadLetterKeys,
  ) {}

  async addSummaries(entries: readonly WrittenEntry[]): Promise<void> {
    const args = entries.flatMap((e) => [e.id, e.bytes === undefined ? '' : String(e.bytes), e.replayField ?? '']);
    await SCRIPTS.addSummaries.run(this.client, [this.keys.jobPrefix], args);
  }

  /** The entries of `ids` that exist, in that order; in 'summary' mode with their summary as data. */
  async read(mode: 'summary' | 'full', ids: readonly string[]): Promise<RawEntry[]> {
    const flat = (await SCRIPTS.read.run(this.client, [this.keys.jobPrefix], [mode, ...ids])) as string[];
    const rows: RawEntry[] = [];
    for (let i = 0; i < flat.length; i += 4) rows.push([flat[i], flat[i + 1], flat[i + 2], flat[i + 3]]);
    return rows;
  }

  async countStats(ids: readonly string[]): Promise<StatsPage> {
    const out = (await SCRIPTS.stats.run(this.client, [this.keys.jobPrefix], ids)) as Array<string | number>;
    const byKind = new Map<string, number>();
    const byType = new Map<string, number>();
    // kinds, then '|' (at a name's place: counts are numbers), then types
    let bar = 3;
    while (bar < out.length && out[bar] !== '|') bar += 2;
    addCounts(byKind, out, 3, bar);
    addCounts(byType, out, bar + 1);
    return {
      total: Number(out[0]),
      byKind,
      byType,
      oldest: out[1] === '' ? null : { id: String(out[1]), at: String(out[2]) },
    };
  }

  /** count-depth over the wait list from index `start` to `end` (negative: from its tail), read inside Redis. */
  async countDepthRange(start: number, end: number): Promise<DepthPage> {
    return this.depth(['range', String(start), String(end)]);
  }

  async countDepthIds(ids: readonly string[]): Promise<DepthPage> {
    return this.depth(['ids', ...ids]);
  }

  private async depth(args: string[]): Promise<DepthPage> {
    const out = (await SCRIPTS.depth.run(this.client, [this.keys.jobPrefix, this.keys.wait], args)) as Array<
      string | number
    >;
    const total = Number(out[0]);
    const byKind = new Map<string, number>();
    addCounts(byKind, out, 3);
    return { total, byKind, oldestAtMs: total > 0 ? Number(out[1]) : undefined, looked: Number(out[2]) };
  }

  /**
   * Claims `ids` for `token` for `ttlMs`; the entries claimed, in order, as bytes (an event goes back to Redis as it
   * came).
   */
  async claim(token: string, ttlMs: number, ids: readonly string[]): Promise<ClaimedEntry[]> {
    const flat = (await SCRIPTS.claim.runBuffer(
      this.client,
      [this.keys.jobPrefix],
      [token, String(ttlMs), ...ids],
    )) as Buffer[];
    const claimed: ClaimedEntry[] = [];
    for (let i = 0; i < flat.length; i += 3)
      claimed.push({ id: flat[i].toString('utf8'), replayField: flat[i + 1], payload: flat[i + 2] });
    return claimed;
  }

  /** Gives up `token`'s claims on `ids`; returns how many it held. */
  async release(token: string, ids: readonly string[]): Promise<number> {
    return Number(await SCRIPTS.release.run(this.client, [this.keys.jobPrefix], [token, ...ids]));
  }

  /** Removes `ids` (absent ones are skipped); returns how many existed. */
  async remove(ids: readonly string[]): Promise<number> {
    const { jobPrefix, wait, delayed, prioritized } = this.keys;
    return Number(await SCRIPTS.remove.run(this.client, [jobPrefix, wait, delayed, prioritized], ids));
  }
}
