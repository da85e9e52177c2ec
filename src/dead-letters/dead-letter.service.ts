/**
 * The dead-letter operations: what the CLI, the tests and the demo call. It receives its queues and
 * store lookup; it opens nothing itself (see dead-letter-connections.ts for the CLI's wiring).
 */
import type { JobsOptions, Queue } from 'bullmq';
import { DEFAULT_JOB_OPTIONS } from '../queue/batch-job-options';
import { pushAll } from '../shared/arrays';
import type { Logger } from '../shared/logger';
import { DEAD_LETTER_KINDS, DeadLetter, DeadLetterKind } from './dead-letter';
import { DeadLetterFilter, DeadLetterNotFoundError, DeadLetterSelection, matchesFilter } from './dead-letter-filter';
import { DeadLetterSummary, toSummary } from './dead-letter-codec';
import { DeadLetterRepository, SCAN_PAGE_SIZE, atMs } from './dead-letter.repository';
import {
  ReplayOptions,
  ReplayPage,
  ReplaySource,
  ReplaySummary,
  StoredEventLookup,
  replayDeadLetters,
} from './dead-letter-replayer';

export type { DeadLetterSummary };

/**
 * Options of the EVENTS_QUEUE jobs a replay creates: the publisher's, so a replayed event is
 * treated exactly like a live one (the worker's retry budget applies to it the same way).
 */
export const DEFAULT_REPLAY_JOB_OPTIONS: Readonly<JobsOptions> = DEFAULT_JOB_OPTIONS;

export interface DeadLetterServiceDeps {
  /** The DEAD_LETTER_QUEUE queue (with the deployment's prefix). */
  deadLetters: Queue;
  /** The EVENTS_QUEUE queue; needed by `replay` only. */
  events?: Queue;
  /**
   * With QUEUE_SHARDS above 1: the events queue of each shard, shard 0 first; a replayed event goes to
   * the shard of its plan id. @defaultValue [events]
   */
  eventShards?: Queue[];
  /** Lets `replay` report events already stored; without it `alreadyStored` is null. */
  storedEvents?: StoredEventLookup;
  logger: Logger;
  /** @defaultValue DEFAULT_REPLAY_JOB_OPTIONS */
  replayJobOptions?: JobsOptions;
  /** Clock, for `--older-than` ages and stats. @defaultValue `() => new Date()` */
  now?: () => Date;
}

export interface DeadLetterList<T = DeadLetter> {
  /** Entries matching the filter, before the limit. */
  total: number;
  /** The first `limit` of them, oldest first. */
  deadLetters: T[];
}

export interface PurgeOptions {
  /** Only list what would be removed. @defaultValue false */
  dryRun?: boolean;
  /**
   * Only entries dead-lettered longer ago than this (ms); ignored for an id selection. @defaultValue no age condition
   */
  olderThanMs?: number;
}

export interface PurgeResult {
  dryRun: boolean;
  /** How many entries were removed (in a dry run: would be). */
  matched: number;
  /**
   * The first PURGE_LISTED_MAX of them, oldest first (all when `matched` is not above it): a purge
   * by filter removes a page at a time and keeps no more than this of what it removed.
   */
  deadLetters: DeadLetterSummary[];
}

/** Summaries a purge result lists at most; `matched` counts them all. */
export const PURGE_LISTED_MAX = 1_000;

/** Counts entries and keeps the first PURGE_LISTED_MAX of them. */
class CappedList {
  matched = 0;
  readonly listed: DeadLetterSummary[] = [];

  add(entries: readonly DeadLetterSummary[]): void {
    this.matched += entries.length;
    pushAll(this.listed, entries.slice(0, Math.max(0, PURGE_LISTED_MAX - this.listed.length)));
  }
}

export interface DeadLetterStats {
  total: number;
  byKind: Record<string, number>;
  byType: Record<string, number>;
  /** The entry dead-lettered longest ago; null when the queue is empty. */
  oldest: { id: string; lastFailedAt: string; ageSeconds: number } | null;
}

export function summarize(dl: DeadLetter): DeadLetterSummary {
  return toSummary(dl);
}

function isUnfiltered(filter: DeadLetterFilter): boolean {
  return (
    !filter.types && !filter.kinds && filter.planId === undefined && !filter.shard && !filter.since && !filter.until
  );
}

/** Stats key for an entry whose event carried no usable type. */
export const NO_TYPE = '(none)';

export class DeadLetterService {
  private readonly repository: DeadLetterRepository;
  private readonly now: () => Date;

  constructor(private readonly deps: DeadLetterServiceDeps) {
    this.repository = new DeadLetterRepository(deps.deadLetters);
    this.now = deps.now ?? (() => new Date());
  }

  /**
   * Entries matching `filter`, oldest first, at most `filter.limit` of them, in full (events
   * included). Matching reads summaries only; only the entries returned are read whole.
   */
  async list(filter: DeadLetterFilter = {}): Promise<DeadLetterList> {
    const { total, deadLetters } = await this.listSummaries(filter);
    const full = await this.repository.getMany(deadLetters.map((s) => s.id));
    return { total, deadLetters: full.filter((dl): dl is DeadLetter => dl !== undefined) };
  }

  /**
   * Like `list`, without events, stacks or violations (what a table shows): no payload is read.
   * Unfiltered, the total is the queue's length and only the entries shown are read. `page`: the
   * newest first (what an operator on call looks for) and an offset into the matches.
   */
  async listSummaries(
    filter: DeadLetterFilter = {},
    page: { newestFirst?: boolean; offset?: number } = {},
  ): Promise<DeadLetterList<DeadLetterSummary>> {
    const offset = page.offset ?? 0;
    const end = filter.limit === undefined ? Infinity : offset + filter.limit;
    const ids = await this.repository.ids();
    if (page.newestFirst) ids.reverse();
    if (isUnfiltered(filter)) {
      const shown = ids.slice(offset, end);
      const deadLetters: DeadLetterSummary[] = [];
      for (let i = 0; i < shown.length; i += 1_000)
        pushAll(deadLetters, await this.repository.summaries(shown.slice(i, i + 1_000)));
      return { total: ids.length, deadLetters };
    }
    const deadLetters: DeadLetterSummary[] = [];
    let total = 0;
    for await (const scanned of this.repository.scanIds(ids)) {
      for (const dl of scanned) {
        if (!matchesFilter(dl, filter)) continue;
        if (total >= offset && total < end) deadLetters.push(dl);
        total += 1;
      }
    }
    return { total, deadLetters };
  }

  /** One entry in full; DeadLetterNotFoundError if there is none with that id. */
  async show(id: string): Promise<DeadLetter> {
    const dl = await this.repository.get(id);
    if (!dl) throw new DeadLetterNotFoundError([id]);
    return dl;
  }

  /** The entries a selection names, oldest first. Ids must all exist, or nothing is returned. */
  async select(selection: DeadLetterSelection): Promise<DeadLetterSummary[]> {
    if ('ids' in selection) {
      const found = await this.repository.getMany(selection.ids);
      const missing = selection.ids.filter((_, i) => found[i] === undefined);
      if (missing.length > 0) throw new DeadLetterNotFoundError(missing);
      return (found as DeadLetter[]).map(summarize);
    }
    const picked: DeadLetterSummary[] = [];
    for await (const page of this.selectPages(selection.filter)) for (const dl of page.matched) picked.push(dl);
    return picked;
  }

  /** The summaries a filter selects, oldest first, a page at a time (never all in memory). */
  private async *selectPages(filter: DeadLetterFilter, ids?: string[]): AsyncGenerator<ReplayPage<DeadLetterSummary>> {
    const limit = filter.limit ?? Infinity;
    let picked = 0;
    for await (const page of this.repository.scanIds(ids ?? (await this.repository.ids()))) {
      const matched: DeadLetterSummary[] = [];
      for (const dl of page) {
        if (picked >= limit) break;
        if (matchesFilter(dl, filter)) {
          matched.push(dl);
          picked += 1;
        }
      }
      yield { matched, scanned: page.length };
      if (picked >= limit) return;
    }
  }

  /** Puts the selected events back on EVENTS_QUEUE; see dead-letter-replayer.ts for the guarantees. */
  async replay(selection: DeadLetterSelection, opts: ReplayOptions = {}): Promise<ReplaySummary> {
    if (!this.deps.events) throw new Error('DeadLetterService.replay needs the events queue (deps.events)');
    let source: ReplaySource;
    if ('ids' in selection) {
      const picked = await this.select(selection);
      source = { total: picked.length, pages: oncePage({ matched: picked, scanned: picked.length }) };
    } else {
      const ids = await this.repository.ids();
      const { filter } = selection;
      // nothing to match (`--all`, maybe `--limit`): a replay goes by ids and reads each entry
      // once, whole; a dry run still reads summaries, for the event ids it checks in the database
      const byIds = isUnfiltered(filter) && !opts.dryRun;
      source = {
        total: ids.length,
        pages: byIds
          ? idPages(filter.limit === undefined ? ids : ids.slice(0, filter.limit))
          : this.selectPages(filter, ids),
      };
    }
    return replayDeadLetters(
      {
        repository: this.repository,
        deadLetters: this.deps.deadLetters,
        events: this.deps.events,
        eventShards: this.deps.eventShards,
        storedEvents: this.deps.storedEvents,
        jobOptions: this.deps.replayJobOptions ?? DEFAULT_REPLAY_JOB_OPTIONS,
        logger: this.deps.logger,
      },
      source,
      opts,
    );
  }

  /**
   * Removes the selected entries for good (the events are not replayed). A filter's matches are
   * removed a page of the scan at a time (SCAN_PAGE_SIZE entries read per page), never all held at
   * once; the result counts them all and lists the first PURGE_LISTED_MAX.
   */
  async purge(selection: DeadLetterSelection, opts: PurgeOptions = {}): Promise<PurgeResult> {
    const dryRun = opts.dryRun ?? false;
    const found = new CappedList();
    if ('ids' in selection) {
      const picked = await this.select(selection);
      if (!dryRun) await this.repository.remove(picked.map((s) => s.id));
      found.add(picked);
    } else {
      let filter = selection.filter;
      if (opts.olderThanMs !== undefined) {
        const cutoff = new Date(this.now().getTime() - opts.olderThanMs);
        filter = { ...filter, until: filter.until && filter.until < cutoff ? filter.until : cutoff };
      }
      for await (const page of this.selectPages(filter)) {
        if (!dryRun && page.matched.length > 0) await this.repository.remove(page.matched.map((s) => s.id));
        found.add(page.matched);
      }
    }
    this.deps.logger.info(
      { dryRun, removed: dryRun ? 0 : found.matched, matched: found.matched },
      dryRun ? 'dead-letter purge dry run' : 'dead letters purged',
    );
    return { dryRun, matched: found.matched, deadLetters: found.listed };
  }

  /**
   * Removes (dry run: lists) every entry of a session, for erasure: its sessionId is `sessionId`
   * or its planId is one of `planIds` (an invalid event may carry only one of them). One pass over
   * a snapshot of the ids, a page removed at a time; other sessions' entries are not touched. The
   * result counts them all and lists the first PURGE_LISTED_MAX.
   */
  async purgeSession(
    sessionId: string,
    planIds: ReadonlySet<string>,
    opts: { dryRun?: boolean } = {},
  ): Promise<PurgeResult> {
    const dryRun = opts.dryRun ?? false;
    const found = new CappedList();
    for await (const page of this.repository.scanIds(await this.repository.ids())) {
      const mine = page.filter((dl) => dl.sessionId === sessionId || (dl.planId !== null && planIds.has(dl.planId)));
      if (mine.length > 0 && !dryRun) await this.repository.remove(mine.map((dl) => dl.id));
      found.add(mine);
    }
    this.deps.logger.info(
      { dryRun, sessionId, removed: dryRun ? 0 : found.matched },
      dryRun ? 'session dead letters dry run' : 'session dead letters purged',
    );
    return { dryRun, matched: found.matched, deadLetters: found.listed };
  }

  /** Counted inside Redis (see DeadLetterRepository.countAll): no entry crosses the wire. */
  async stats(): Promise<DeadLetterStats> {
    const counted = await this.repository.countAll();
    const byKind: Record<DeadLetterKind | string, number> = {};
    const byType: Record<string, number> = {};
    // as toDeadLetter reads them: a kind no writer uses counts as unprocessable
    for (const [raw, n] of counted.byKind) {
      const kind = (DEAD_LETTER_KINDS as readonly string[]).includes(raw) ? raw : 'unprocessable';
      byKind[kind] = (byKind[kind] ?? 0) + n;
    }
    for (const [type, n] of counted.byType) byType[type === '' ? NO_TYPE : type] = n;
    const nowMs = this.now().getTime();
    const oldest = counted.oldest;
    return {
      total: counted.total,
      byKind,
      byType,
      oldest: oldest
        ? {
            id: oldest.id,
            lastFailedAt: oldest.at.startsWith('#') ? new Date(atMs(oldest.at)).toISOString() : oldest.at,
            ageSeconds: Math.max(0, Math.round((nowMs - atMs(oldest.at)) / 1000)),
          }
        : null,
    };
  }
}

async function* oncePage(page: ReplayPage): AsyncGenerator<ReplayPage> {
  yield page;
}

/** Ids as pages of candidates that all match (their event ids are read with the entries). */
async function* idPages(ids: string[]): AsyncGenerator<ReplayPage> {
  for (let i = 0; i < ids.length; i += SCAN_PAGE_SIZE) {
    const matched = ids.slice(i, i + SCAN_PAGE_SIZE).map((id) => ({ id, eventId: null }));
    yield { matched, scanned: matched.length };
  }
}
