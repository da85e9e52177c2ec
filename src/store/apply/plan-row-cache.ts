import type { ExecutionPlanRow, PlanHeadRow, PlanStepRow } from '../entities';
import { planEnded } from '../projection/plan-projection';
import { msOf } from '../../shared/time-units';

/** Default budget of the row cache: enough for the plans of a busy worker's in-flight window. */
export const DEFAULT_ROW_CACHE_BYTES = 64 * 1024 * 1024;

/** What a plan's head said when its rows were cached: any writer since changes one of these. */
type HeadStamp = Pick<PlanHeadRow, 'version' | 'appliedSeq' | 'eventCount' | 'updatedAt'>;

/**
 * A plan's rows as this process last committed them: the plan row and the steps it knows, by
 * step key. Readers copy what they change; only the cache itself updates an entry, when a
 * transaction that started from it commits.
 */
export interface CachedPlanRows {
  readonly plan: Readonly<ExecutionPlanRow>;
  readonly steps: ReadonlyMap<string, Readonly<PlanStepRow>>;
  /** Ids of every handoff row the plan has, or null when this process does not know them all. */
  readonly handoffIds: ReadonlySet<string> | null;
}

interface Entry {
  head: HeadStamp;
  plan: ExecutionPlanRow;
  steps: Map<string, PlanStepRow>;
  handoffIds: ReadonlySet<string> | null;
  bytes: number;
}

/** The rows a transaction wrote for a plan: its plan row and the steps it holds (PlanProjection.held). */
export interface WrittenRows {
  plan: ExecutionPlanRow;
  steps: PlanStepRow[];
  /** Ids of the handoff rows written; `all`: they are every handoff of the plan. Absent: not known. */
  handoffIds?: { ids: string[]; all: boolean };
}

/** The handoff ids of a plan that has none: shared, never changed. */
const NO_HANDOFFS: ReadonlySet<string> = new Set();

/**
 * The rows of the plans this process wrote last, so that the next events of a plan apply without
 * reading its plan row and steps back (docs/store.md#rows-cached-between-transactions). An entry is
 * used only while the plan's head, locked by the reading transaction, is exactly the one the
 * caching transaction wrote: every writer of a plan's rows bumps the head's version under its lock
 * (the store, retention, restore; a purge or an erasure deletes the head), so a write by any other
 * transaction or process, committed or not seen here, makes the entry unusable rather than wrong.
 * Entries are staged by a transaction and kept only once it commits. A transaction that started
 * from an entry adds the steps it wrote to it, so the cost stays that of the steps touched, however
 * long the plan. Only plans still running are kept. Least recently used first out (roughly: two
 * generations), within a budget of estimated bytes.
 */
export class PlanRowCache {
  // Two generations instead of a strict LRU list: a hit moves an entry into the young one, and
  // when the young one fills half the budget the old one is dropped whole. O(1) per call, no
  // scan (a Map used as an LRU list degrades as deletions pile up at its front).
  private young = new Map<string, Entry>();
  private old = new Map<string, Entry>();
  private youngBytes = 0;
  hits = 0;
  misses = 0;
  /** Step rows handed out by copyOf (a transaction pays for the steps it touches, not for the plan). */
  stepsCopied = 0;

  constructor(private readonly budgetBytes: number = DEFAULT_ROW_CACHE_BYTES) {}

  /** Plans held now. */
  get size(): number {
    return this.young.size + this.old.size;
  }

  /**
   * The plan's cached rows if nobody wrote the plan since they were cached. `head` is the head as
   * locked by the asking transaction (LockedHead: its `version` is already the one it will write).
   */
  get(head: HeadStamp & { planId: string }): CachedPlanRows | undefined {
    let entry = this.young.get(head.planId);
    if (!entry) {
      entry = this.old.get(head.planId);
      if (entry) {
        this.old.delete(head.planId);
        this.add(head.planId, entry);
      }
    }
    if (entry && sameStamp(entry.head, head.version - 1, head)) {
      this.hits++;
      return entry;
    }
    this.misses++;
    return undefined;
  }

  /**
   * Copies of the plan row and of the cached steps among `stepKeys`, for a transaction to change;
   * `read`: the cached steps copied, in the same order (the rows as read, never changed).
   */
  copyOf(hit: CachedPlanRows, stepKeys: Iterable<string>): WrittenRows & { read: Readonly<PlanStepRow>[] } {
    const steps: PlanStepRow[] = [];
    const read: Readonly<PlanStepRow>[] = [];
    for (const key of stepKeys) {
      const step = hit.steps.get(key);
      if (step) {
        steps.push({ ...step });
        read.push(step);
      }
    }
    this.stepsCopied += steps.length;
    return { plan: { ...hit.plan }, steps, read };
  }

  /** A transaction's entries, kept only if it commits (`commit()`). */
  stage(): CacheStage {
    return new CacheStage(this);
  }

  /**
   * @internal CacheStage.commit: the rows a committed transaction wrote under `head`; `base`, the
   * entry it started from (its steps not written stay as they are), or undefined (a new entry).
   */
  keep(planId: string, head: HeadStamp | null, rows?: WrittenRows, base?: CachedPlanRows): void {
    const current = this.drop(planId);
    // a plan that ended is not kept: its events are over (a late one reads the rows back), and a
    // worker draining a backlog of whole plans would otherwise fill the cache with finished ones
    if (!head || !rows || this.budgetBytes <= 0 || planEnded(rows.plan)) return;
    const stamp = {
      version: head.version,
      appliedSeq: head.appliedSeq,
      eventCount: head.eventCount,
      updatedAt: head.updatedAt,
    };
    let entry: Entry;
    if (current && current === base) {
      entry = current;
      entry.head = stamp;
      entry.bytes += planBytes(rows.plan) - planBytes(entry.plan);
      entry.plan = rows.plan;
      for (const s of rows.steps) {
        const old = entry.steps.get(s.stepKey);
        if (old === s) continue;
        entry.bytes += stepBytes(s) - (old ? stepBytes(old) : 0);
        entry.steps.set(s.stepKey, s);
      }
      entry.handoffIds = withHandoffs(entry.handoffIds, rows.handoffIds?.ids);
    } else {
      const steps = new Map<string, PlanStepRow>();
      let bytes = planBytes(rows.plan);
      for (const s of rows.steps) {
        steps.set(s.stepKey, s);
        bytes += stepBytes(s);
      }
      const handoffIds = rows.handoffIds?.all ? withHandoffs(NO_HANDOFFS, rows.handoffIds.ids) : null;
      entry = { head: stamp, plan: rows.plan, steps, handoffIds, bytes };
    }
    // one huge plan must not flush everybody else's
    if (entry.bytes <= this.budgetBytes / 8) this.add(planId, entry);
  }

  private add(planId: string, entry: Entry): void {
    this.young.set(planId, entry);
    this.youngBytes += entry.bytes;
    if (this.youngBytes <= this.budgetBytes / 2) return;
    this.old = this.young;
    this.young = new Map();
    this.youngBytes = 0;
  }

  private drop(planId: string): Entry | undefined {
    const young = this.young.get(planId);
    if (young) {
      this.young.delete(planId);
      this.youngBytes -= young.bytes;
      return young;
    }
    const old = this.old.get(planId);
    if (old) this.old.delete(planId);
    return old;
  }
}

/** Rows one transaction wrote, for the cache once it commits. */
export class CacheStage {
  private readonly staged = new Map<
    string,
    { head: HeadStamp | null; rows?: () => WrittenRows; base?: CachedPlanRows }
  >();

  constructor(private readonly cache: PlanRowCache) {}

  /**
   * The plan's rows as this transaction writes them (read when it commits), under its new head;
   * `base`: the cached rows it started from.
   */
  put(head: PlanHeadRow, rows: () => WrittenRows, base?: CachedPlanRows): void {
    this.staged.set(head.planId, head.deletedAt ? { head: null } : { head, rows, base });
  }

  /** This transaction wrote the plan in a way not staged: forget it. */
  forget(planId: string): void {
    this.staged.set(planId, { head: null });
  }

  commit(): void {
    for (const [planId, { head, rows, base }] of this.staged) this.cache.keep(planId, head, rows?.(), base);
    this.staged.clear();
  }
}

/**
 * Known handoff ids and `added` (written since): null stays null (not known); the set is copied,
 * not changed, when there are new ids (a transaction's copy of an entry may still read it).
 */
function withHandoffs(
  known: ReadonlySet<string> | null,
  added: readonly string[] | undefined,
): ReadonlySet<string> | null {
  if (known === null) return null;
  if (added === undefined) return null;
  let out: Set<string> | undefined;
  for (const id of added) if (!known.has(id)) (out ??= new Set(known)).add(id);
  return out ?? known;
}

function sameStamp(a: HeadStamp, version: number, b: HeadStamp): boolean {
  return (
    a.version === version &&
    a.appliedSeq === b.appliedSeq &&
    a.eventCount === b.eventCount &&
    msOf(a.updatedAt) === msOf(b.updatedAt)
  );
}

/** Rough heap bytes of a row: its long text (UTF-16) and a fixed cost for the object, short strings and Dates. */
const ROW_BYTES = 600;

function planBytes(p: ExecutionPlanRow): number {
  return ROW_BYTES + text(p.query) + text(p.summary) + text(p.failureReason);
}

function stepBytes(s: PlanStepRow): number {
  return (
    ROW_BYTES +
    text(s.task) +
    text(s.title) +
    text(s.expectedOutput) +
    text(s.dependsOn) +
    text(s.result) +
    text(s.error) +
    text(s.outputContent)
  );
}

function text(value: string | null | undefined): number {
  return value ? 2 * value.length : 0;
}
