import type { EntityManager } from 'typeorm';
import type { PriceOverride } from '../../pricing';
import type { PlanEvent } from '../../contracts';
import { ENTITY, PlanHeadRow, type PlanStepRow } from '../entities';
import { LockedHead, writeHeads } from '../ledger/plan-heads';
import { canonicalOrder, definingCreated, SeqRun } from '../projection/event-order';
import { CreatedEvent, type PlanChanges, PlanProjection, type ProjectionNeeds } from '../projection/plan-projection';
import { isVoidedSeq } from '../projection/voided-seq';
import type { SqlDialect } from '../sql/sql-dialect';
import { LOG_PAGE, PlanReader } from './plan-reader';
import type { CachedPlanRows, CacheStage, PlanRowCache } from './plan-row-cache';
import { PlanWrites } from './plan-writes';
import { measureHandoffs, measurePlans } from '../rollups/rollup-measure';
import { RollupDelta, type RollupPlan, type RollupStep } from '../rollups/rollup-rows';
import { msOf } from '../../shared/time-units';

/**
 * What a plan's new events call for, given its head (docs/store.md#incremental-behind-a-watermark):
 * - `wait`: none can apply yet (a gap before them, or no plan.created so far); they stay in the log;
 * - `apply`: apply them to the plan's rows as they are, reading nothing of its log;
 * - `apply-with-log`: they fill the gap other stored events wait behind: apply those too, read
 *   from the log in order, up to the next gap;
 * - `rebuild`: one lands at or below the watermark (a seq used twice, or an event that arrives
 *   after its gap was skipped): rebuild the plan from its whole log.
 * `events` are the plan's new events in canonical order.
 */
export type PlanAction = 'wait' | 'apply' | 'apply-with-log' | 'rebuild';

export function actionFor(
  head: Pick<PlanHeadRow, 'appliedSeq' | 'pendingEvents'>,
  events: readonly PlanEvent[],
): PlanAction {
  const next = head.pendingEvents > 0 ? 'apply-with-log' : 'apply';
  if (head.appliedSeq === null) return definingCreated(events) ? next : 'wait';
  if (events[0].seq <= head.appliedSeq) return appliesInPlace(head, events) ? 'apply' : 'rebuild';
  return events[0].seq === head.appliedSeq + 1 ? next : 'wait';
}

/**
 * Approval events change no row of their plan but its `updatedAt`, which takes the latest
 * `occurredAt` whatever the order: at or below the watermark (an `approval.decided` carries its
 * request's seq) they apply to the rows as they are, and the fold of the whole log gives the
 * same rows.
 */
const APPLIES_IN_ANY_ORDER: ReadonlySet<string> = new Set(['approval.requested', 'approval.decided']);

/**
 * Whether a stored plan with nothing waiting can take `events` (canonical order, the first at or
 * below its watermark) without a rebuild: those at or below it are all approval events, and the
 * others, if any, start at the seq after it.
 */
function appliesInPlace(
  head: Pick<PlanHeadRow, 'appliedSeq' | 'pendingEvents'>,
  events: readonly PlanEvent[],
): boolean {
  const watermark = head.appliedSeq;
  if (watermark === null || head.pendingEvents > 0) return false;
  let i = 0;
  for (; i < events.length && events[i].seq <= watermark; i++)
    if (!APPLIES_IN_ANY_ORDER.has(events[i].type)) return false;
  return i === events.length || events[i].seq === watermark + 1;
}

export interface ApplyStats {
  /** Events applied to their plan's rows without a rebuild. */
  applied: number;
  /** Plans rebuilt from their whole log. */
  rebuilt: number;
  /** Plans that started waiting on a gap. */
  gapWaits: number;
  /** Plans whose overdue gap was skipped. */
  gapsSkipped: number;
  /** Stored plans whose rows came from the row cache instead of a read. */
  cacheHits: number;
}

/** What a PlanApplier applies with, besides its transaction, dialect and locked heads. */
export interface PlanApplierOptions {
  /** The transaction's time. */
  now: Date;
  /** Rows of plans this process wrote last, and where this transaction stages what it writes. */
  cache?: { rows: PlanRowCache; stage: CacheStage };
  /** Price overrides in force (price_overrides), for the steps this transaction prices. @defaultValue none */
  overrides?: readonly PriceOverride[];
  /** STALL_AFTER: how long a running plan with no deadline of its own may go without an event. @defaultValue 15 min */
  stallAfterMs?: number;
}

/** STALL_AFTER's default: 15 minutes. */
export const DEFAULT_STALL_AFTER_MS = 15 * 60_000;

/**
 * Applies one transaction's new events to the rows of their plans, whose heads the transaction
 * holds locked: collects the rows to write (PlanWrites) and each plan's new head, then writes
 * them all in `finish()`. Plans are handled in groups: those needing no log read share one read
 * and one write per table.
 */
export class PlanApplier {
  readonly stats: ApplyStats = { applied: 0, rebuilt: 0, gapWaits: 0, gapsSkipped: 0, cacheHits: 0 };
  private readonly writes = new PlanWrites();
  /** What this transaction's rows change in the analytics rollups (docs/store.md#analytics-rollups). */
  private readonly rollups = new RollupDelta();
  /** Stored plans whose steps and handoffs an edit replaces: their stored handoffs are measured before the writes. */
  private readonly replacedHandoffs = new Set<string>();
  /**
   * Handoffs of stored plans that this transaction's events record or record again, by id, with
   * their plan as it was: what a stored row of the id added to the rollups is taken out before the writes.
   */
  private readonly touchedHandoffs = new Map<string, RollupPlan>();
  private readonly reader: PlanReader;
  private readonly nextHeads = new Map<string, PlanHeadRow>();
  /** The cached rows each plan resumed from, which its rows update once this transaction commits. */
  private readonly cacheBases = new Map<string, CachedPlanRows>();
  /** The dialect updates only the columns that changed: it needs the rows as read. */
  private readonly keepStored: boolean;

  private readonly now: Date;
  private readonly cache?: { rows: PlanRowCache; stage: CacheStage };
  private readonly overrides: readonly PriceOverride[];
  /** What the stall deadlines need (docs/store.md#stalled-plans); see stallState(). */
  private readonly stall: StallFacts;

  constructor(
    private readonly manager: EntityManager,
    private readonly dialect: SqlDialect,
    private readonly heads: ReadonlyMap<string, LockedHead>,
    options: PlanApplierOptions,
  ) {
    this.now = options.now;
    this.cache = options.cache;
    this.overrides = options.overrides ?? [];
    this.stall = newStallFacts(options.stallAfterMs ?? DEFAULT_STALL_AFTER_MS);
    this.reader = new PlanReader(manager, dialect);
    this.keepStored = dialect.updatesChangedColumnsOnly;
  }

  /** Plans whose rows this transaction writes. */
  get plans(): number {
    return this.writes.plans;
  }

  /** New events (stored already, none a duplicate), of plans whose heads are locked. */
  async applyNew(fresh: PlanEvent[]): Promise<void> {
    const direct: Array<{ head: LockedHead; events: PlanEvent[] }> = [];
    const fillingGap: Array<{ head: LockedHead; events: PlanEvent[] }> = [];
    const rebuild: LockedHead[] = [];
    for (const [planId, all] of byPlan(fresh)) {
      const head = this.heads.get(planId)!;
      noteArrivals(this.stall, planId, all);
      // a voided seq behind the watermark is only recorded: it changes no row, so nothing to rebuild
      const events = head.appliedSeq === null ? all : withoutVoidedUpTo(all, head.appliedSeq);
      const lastSeq = all[all.length - 1].seq;
      this.setHead(head, {
        eventCount: head.eventCount + all.length,
        lastSeq: lastSeq > head.lastSeq ? lastSeq : head.lastSeq,
        pending: head.pendingEvents + events.length,
      });
      if (events.length === 0) continue;
      const action = actionFor(head, events);
      if (action === 'apply') direct.push({ head, events });
      else if (action === 'apply-with-log') fillingGap.push({ head, events });
      else if (action === 'rebuild') rebuild.push(head);
    }
    // the waiting events of plans whose gap this batch fills, read for all those plans at once
    // (a plan with very many waits is read page by page instead: memory stays bounded)
    const readTogether = fillingGap.filter((i) => i.head.pendingEvents <= LOG_PAGE);
    const waiting = await this.reader.waitingEvents(
      readTogether.map(({ head }) => ({ planId: head.planId, aboveSeq: head.appliedSeq })),
    );
    for (const { head } of readTogether) direct.push({ head, events: waiting.get(head.planId) ?? [] });
    for (const head of await this.applyDirect(direct)) rebuild.push(head);
    for (const { head } of fillingGap)
      if (head.pendingEvents > LOG_PAGE && !(await this.applyFromLog(head))) rebuild.push(head);
    for (const head of rebuild) await this.rebuild(head);
  }

  /**
   * Plans whose candidate events (new ones, and those waiting in the log) are all here, in
   * canonical order: new plans start from their plan.created, stored ones from their rows, and
   * take the events their watermark admits. Returns the stored plans found without rows (rebuilt
   * instead).
   */
  private async applyDirect(items: Array<{ head: LockedHead; events: PlanEvent[] }>): Promise<LockedHead[]> {
    const cached = new Map<string, CachedPlanRows>();
    const toRead: string[] = [];
    for (const { head } of items) {
      if (head.appliedSeq === null) continue;
      const hit = this.cache?.rows.get(head);
      if (hit) cached.set(head.planId, hit);
      else toRead.push(head.planId);
    }
    this.stats.cacheHits += cached.size;
    const rows = toRead.length > 0 ? await this.reader.plans(toRead) : new Map();
    const missing: LockedHead[] = [];
    // `admitted`: the events the watermark takes (for a new plan, its plan.created too); `events`: those to apply;
    // `needs`: what the events need read, when worked out already (a cached plan)
    const resumed: Array<{
      head: LockedHead;
      run: SeqRun;
      projection: PlanProjection;
      events: PlanEvent[];
      admitted: number;
      needs?: ProjectionNeeds;
    }> = [];
    for (const { head, events } of items) {
      if (head.appliedSeq === null) {
        const created = definingCreated(events)!;
        const run = new SeqRun(created.seq);
        const admitted = events.filter((e) => run.admits(e.seq));
        const projection = PlanProjection.create(created).usePrices(this.overrides);
        this.stall.planDeadlines.set(head.planId, created.payload.deadlineMs ?? null);
        const toApply = admitted.filter((e) => e !== created);
        resumed.push({ head, run, projection, events: toApply, admitted: admitted.length });
        continue;
      }
      const row = rows.get(head.planId);
      const hit = cached.get(head.planId);
      const needs = hit ? PlanProjection.needs(events) : undefined;
      const projection = hit
        ? this.resumeCached(head.planId, hit, needs!)
        : row
          ? PlanProjection.resume(row, this.keepStored).usePrices(this.overrides)
          : undefined;
      if (!projection) {
        missing.push(head);
        continue;
      }
      const run = new SeqRun(head.appliedSeq);
      const admitted = events.filter((e) => run.admits(e.seq));
      // the needs worked out above are those of `admitted` when the watermark takes every event
      const known = admitted.length === events.length ? needs : undefined;
      resumed.push({ head, run, projection, events: admitted, admitted: admitted.length, needs: known });
    }
    // the stored steps the events need, and a fork's steps among its ancestors' (new forks too)
    await this.reader.provide(resumed);
    for (const { head, run, projection, events, admitted } of resumed) {
      for (const e of events) projection.apply(e);
      this.recordApplied(head, projection, admitted, run.watermark);
    }
    return missing;
  }

  /**
   * A stored plan from copies of its cached plan row and of the cached steps its events need
   * (`needs`; the cache's own rows are never changed; steps it lacks are read as usual).
   */
  private resumeCached(planId: string, hit: CachedPlanRows, needs: ProjectionNeeds): PlanProjection {
    const { plan, steps, read } = this.cache!.rows.copyOf(hit, needs.stepKeys);
    // the cached rows are never changed: they are the rows as read, without another copy
    const projection = PlanProjection.resume(plan, this.keepStored, hit.plan).usePrices(this.overrides);
    projection.provide(
      steps,
      steps.map((s) => s.stepKey),
      undefined,
      read,
    );
    this.cacheBases.set(planId, hit);
    return projection;
  }

  /**
   * New events fill the gap stored ones wait behind: apply them all in order from the log. False: the plan has no
   * rows.
   */
  private async applyFromLog(head: LockedHead, skipGaps = false): Promise<boolean> {
    let projection: PlanProjection;
    let created: CreatedEvent | undefined;
    let run: SeqRun;
    if (head.appliedSeq === null) {
      created = await this.definingCreated(head.planId);
      projection = PlanProjection.create(created).usePrices(this.overrides);
      this.stall.planDeadlines.set(head.planId, created.payload.deadlineMs ?? null);
      run = new SeqRun(created.seq, skipGaps);
    } else {
      const row = (await this.reader.plans([head.planId])).get(head.planId);
      if (!row) return false;
      projection = PlanProjection.resume(row, this.keepStored).usePrices(this.overrides);
      run = new SeqRun(head.appliedSeq, skipGaps);
    }
    const replayed = await this.replay(projection, run, created, head.appliedSeq ?? undefined);
    if (skipGaps && replayed.tail.length > 0) {
      // voided seqs past the plan's last event opened this gap rather than filled one (a refused
      // event with a seq far ahead): applied past it, they would put the watermark where no event
      // will follow. They leave the log (their refusals stay in the dead-letter queue).
      await this.dialect.rows(this.manager).deleteWhereIn(
        ENTITY.event,
        'eventId',
        replayed.tail.map((e) => e.eventId),
      );
      const watermark = replayed.lastReal ?? head.appliedSeq!;
      this.recordApplied(head, projection, replayed.admitted, watermark, {
        events: replayed.tail.length,
        lastSeq: watermark,
      });
      return true;
    }
    this.recordApplied(head, projection, replayed.admitted, run.watermark);
    return true;
  }

  /**
   * Rebuild a plan from its whole log: its rows become the fold of every stored event up to its watermark and any run
   * after it, except that a step whose usage its stored row already holds keeps the stored cost.
   */
  async rebuild(head: LockedHead): Promise<void> {
    const created = await this.definingCreated(head.planId);
    const run = new SeqRun(head.appliedSeq ?? created.seq);
    // each step keeps the cost stored for it while its usage stays the same: only a reprice changes it
    const projection = PlanProjection.create(created)
      .usePrices(this.overrides)
      .keepPrices(await this.reader.stepPrices(head.planId));
    const applied = (await this.replay(projection, run, created)).admitted;
    const rows = projection.rows();
    this.stall.planDeadlines.set(head.planId, created.payload.deadlineMs ?? null);
    this.stall.statuses.set(head.planId, rows.plan.status);
    this.writes.addRebuilt(rows, head.deletedAt);
    if (!head.deletedAt) {
      // the stored rows are replaced whole: out goes what they added, in what the new ones add
      await measurePlans(this.manager, [head.planId], this.rollups, -1);
      this.rollups.addPlan(rows.plan, rows.steps, 1);
      this.rollups.addHandoffs(rows.plan, rows.handoffs, 1);
    }
    this.cache?.stage.forget(head.planId);
    this.stats.rebuilt++;
    const next = this.nextHeads.get(head.planId) ?? head;
    this.setHead(head, {
      eventCount: next.eventCount,
      lastSeq: next.lastSeq,
      pending: next.eventCount - applied,
      applied: run.watermark,
    });
  }

  /**
   * Apply the waiting events of a plan whose gap waited too long, as if no seq were missing. A
   * plan whose rows are gone (its head says they exist) gets them back from its log instead.
   */
  async skipGap(head: LockedHead): Promise<void> {
    this.setHead(head, { eventCount: head.eventCount, lastSeq: head.lastSeq, pending: head.pendingEvents });
    if (await this.applyFromLog(head, true)) this.stats.gapsSkipped++;
    else await this.rebuild(head);
  }

  /**
   * Feed the plan's stored events (all, or those above `aboveSeq`) to the projection in canonical
   * order while the run admits them, a page at a time. Returns how many it admitted, the seq of the
   * last admitted event that is not a voided seq, and the voided seqs admitted after it (`tail`).
   */
  private async replay(
    projection: PlanProjection,
    run: SeqRun,
    created: CreatedEvent | undefined,
    aboveSeq?: number,
  ): Promise<{ admitted: number; lastReal: number | undefined; tail: PlanEvent[] }> {
    let admitted = 0;
    let lastReal: number | undefined;
    let tail: PlanEvent[] = [];
    let gap = false;
    for await (const page of this.reader.log(projection.plan.id, aboveSeq)) {
      const toApply: PlanEvent[] = [];
      for (const e of page) {
        if (!run.admits(e.seq)) {
          gap = true;
          break;
        }
        if (e.eventId !== created?.eventId) toApply.push(e);
        admitted++;
        if (isVoidedSeq(e)) tail.push(e);
        else {
          lastReal = e.seq;
          tail = [];
        }
      }
      await this.reader.provide([{ projection, events: toApply }]);
      for (const e of toApply) projection.apply(e);
      if (gap) break;
    }
    return { admitted, lastReal, tail };
  }

  private async definingCreated(planId: string): Promise<CreatedEvent> {
    const created = await this.reader.definingCreated(planId);
    if (created?.type !== 'plan.created')
      throw new Error(`plan ${planId}: its head says rows exist, but its log has no plan.created`);
    return created;
  }

  /**
   * Record what applying `admitted` more events to a plan changed; `removed`: of those, log entries deleted (the
   * plan's highest).
   */
  private recordApplied(
    head: LockedHead,
    projection: PlanProjection,
    admitted: number,
    watermark: number,
    removed?: { events: number; lastSeq: number },
  ): void {
    const changes = projection.changes();
    this.stall.statuses.set(head.planId, projection.plan.status);
    this.writes.add(changes, head.deletedAt);
    if (!head.deletedAt) this.rollupChanges(projection, changes);
    this.stats.applied += admitted - (removed?.events ?? 0);
    const next = this.nextHeads.get(head.planId)!;
    const eventCount = next.eventCount - (removed?.events ?? 0);
    this.setHead(head, {
      eventCount,
      lastSeq: removed ? removed.lastSeq : next.lastSeq,
      pending: next.pendingEvents - admitted,
      applied: watermark,
    });
    // the rows as written, read when the transaction commits (nothing changes them after finish())
    // after an edit the steps held are the plan's whole list: the entry starts again from them, or
    // the cached steps the edit dropped would be found by a later event (and written again)
    const base = projection.stepsReplaced ? undefined : this.cacheBases.get(head.planId);
    this.cache?.stage.put(this.nextHeads.get(head.planId)!, () => projection.held(), base);
  }

  /**
   * What applied events changed in the rollups: after minus before, for the plan row and the steps
   * they touched (all of them for a new plan or an edit). Plans of a soft-deleted head add nothing.
   */
  private rollupChanges(projection: PlanProjection, changes: PlanChanges): void {
    const before = projection.before;
    if (changes.isNew || !before) {
      this.rollups.addHandoffs(changes.plan, changes.handoffs, 1);
      return this.rollups.addPlan(changes.plan, changes.steps, 1);
    }
    // the handoffs as written next (every one of the plan's after an edit, else the ones recorded),
    // as a read of the stored rows would count them: soft-deleted ones left out
    this.rollups.addHandoffs(changes.plan, liveRows(changes.handoffs), 1);
    if (changes.stepsReplaced) this.replacedHandoffs.add(changes.plan.id);
    else {
      // a handoff the cached rows say is not stored has no row to measure
      const stored = this.cacheBases.get(changes.plan.id)?.handoffIds ?? null;
      for (const h of changes.handoffs) if (!stored || stored.has(h.id)) this.touchedHandoffs.set(h.id, before.plan);
    }
    if (changes.stepsReplaced) {
      this.rollups.addPlan(before.plan, before.steps.values(), -1);
      return this.rollups.addPlan(changes.plan, changes.steps, 1);
    }
    // a row whose summed columns and key are as they were adds as much as it took away: left out
    const sameKey = sameRollupKey(before.plan, changes.plan);
    if (!sameKey) {
      this.rollups.addPlan(before.plan, [], -1);
      this.rollups.addPlan(changes.plan, [], 1);
    } else if (!samePlanSums(before.plan, changes.plan)) this.rollups.movePlan(before.plan, changes.plan);
    const was: PlanStepRow[] = [];
    const now: PlanStepRow[] = [];
    for (const s of changes.steps) {
      const old = before.steps.get(s.stepKey);
      if (old && sameKey && sameStepSums(old, s)) continue;
      if (old) was.push(old);
      now.push(s);
    }
    this.rollups.addSteps(before.plan, was, -1);
    this.rollups.addSteps(changes.plan, now, 1);
    this.rollups.addSteps(changes.plan, changes.newSteps, 1);
  }

  private setHead(
    head: LockedHead,
    s: { eventCount: number; lastSeq: number; pending: number; applied?: number },
  ): void {
    const applied = s.applied ?? head.appliedSeq;
    // the wait starts when the watermark stops moving with events left behind it
    const waiting = s.pending > 0 && applied !== null;
    const gapSince = waiting ? (applied === head.appliedSeq && head.gapSince ? head.gapSince : this.now) : null;
    // spelled out: object rest and spread cost a runtime call per plan on the hot path
    this.nextHeads.set(head.planId, {
      planId: head.planId,
      sessionId: head.sessionId,
      version: head.version,
      eventCount: s.eventCount,
      lastSeq: s.lastSeq,
      appliedSeq: applied,
      pendingEvents: s.pending,
      gapSince,
      updatedAt: this.now,
      restoredAt: head.restoredAt,
      deadlineMs: head.deadlineMs,
      stallDueAt: head.stallDueAt,
      stallCheckAt: head.stallCheckAt,
      stalledAt: head.stalledAt,
      deletedAt: head.deletedAt,
    });
  }

  /** Write every collected row, then the heads. */
  async finish(): Promise<void> {
    for (const [planId, next] of this.nextHeads) {
      const before = this.heads.get(planId)!;
      if (next.gapSince && next.gapSince !== before.gapSince) this.stats.gapWaits++;
      setStallState(this.stall, before, next, this.now);
    }
    // out goes what the stored handoffs these writes replace added (those they add came in with the changes)
    const replaced = [...this.replacedHandoffs].sort();
    this.replacedHandoffs.clear();
    await measurePlans(this.manager, replaced, this.rollups, -1, 'handoffs');
    await measureHandoffs(this.manager, this.touchedHandoffs, this.rollups, -1);
    this.touchedHandoffs.clear();
    await this.writes.write(this.dialect.rows(this.manager));
    await writeHeads(
      this.manager,
      this.dialect,
      [...this.nextHeads.values()].sort((a, b) => (a.planId < b.planId ? -1 : a.planId > b.planId ? 1 : 0)),
    );
    // last: rollup rows are shared by every writer of a day, so their locks are held the shortest
    await this.rollups.write(this.dialect.rows(this.manager));
  }
}

/** The rows not soft-deleted (the same array when none is). */
function liveRows<T extends { deletedAt: Date | null }>(rows: T[]): T[] {
  return rows.some((r) => r.deletedAt) ? rows.filter((r) => !r.deletedAt) : rows;
}

/** The plan columns that place its rows in the rollups (day, session, retirement) are as they were. */
function sameRollupKey(a: RollupPlan, b: RollupPlan): boolean {
  return a.sessionId === b.sessionId && msOf(a.createdAt) === msOf(b.createdAt) && !a.deletedAt === !b.deletedAt;
}

/** The plan row adds the same to the rollups as before (its key being the same: sameRollupKey). */
function samePlanSums(a: RollupPlan, b: RollupPlan): boolean {
  return (
    a.status === b.status &&
    Number(a.totalInputTokens) === Number(b.totalInputTokens) &&
    Number(a.totalOutputTokens) === Number(b.totalOutputTokens)
  );
}

/** The step row adds the same to the rollups as before (its plan's key being the same). */
function sameStepSums(a: RollupStep, b: RollupStep): boolean {
  return (
    a.agentId === b.agentId &&
    (a.model ?? null) === (b.model ?? null) &&
    a.status === b.status &&
    !a.deletedAt === !b.deletedAt &&
    Number(a.inputTokens) === Number(b.inputTokens) &&
    Number(a.outputTokens) === Number(b.outputTokens) &&
    Number(a.cacheReadTokens ?? 0) === Number(b.cacheReadTokens ?? 0) &&
    Number(a.cacheWriteTokens ?? 0) === Number(b.cacheWriteTokens ?? 0) &&
    Number(a.reasoningTokens ?? 0) === Number(b.reasoningTokens ?? 0) &&
    (a.costSource ?? null) === (b.costSource ?? null) &&
    (a.cost ?? null) === (b.cost ?? null)
  );
}

/** `events` without the voided seqs at or below `watermark` (the same array when there is none). */
function withoutVoidedUpTo(events: PlanEvent[], watermark: number): PlanEvent[] {
  if (!events.some((e) => e.seq <= watermark && isVoidedSeq(e))) return events;
  return events.filter((e) => !(e.seq <= watermark && isVoidedSeq(e)));
}

/**
 * Events grouped by plan, each group in canonical order. The order of the plans does not matter:
 * their heads are locked already, and the rows are written table by table (writeHeads sorts).
 */
function byPlan(events: PlanEvent[]): Map<string, PlanEvent[]> {
  const groups = new Map<string, PlanEvent[]>();
  for (const e of events) {
    const list = groups.get(e.planId);
    if (list) list.push(e);
    else groups.set(e.planId, [e]);
  }
  for (const list of groups.values()) if (list.length > 1) list.sort(canonicalOrder);
  return groups;
}

/** What one transaction learns about its plans' stall deadlines while it applies their events. */
interface StallFacts {
  stallAfterMs: number;
  /** Plans with new events in this transaction: each is running again (no longer stalled). */
  arrived: Set<string>;
  /** The longest `deadlineMs` of a step.started among a plan's new events. */
  stepDeadlines: Map<string, number>;
  /** A plan's own deadlineMs, from the plan.created this transaction applied. */
  planDeadlines: Map<string, number | null>;
  /** Each applied plan's status once its events are applied. */
  statuses: Map<string, string>;
  /** The due time setStallState gave last. */
  lastDue?: Date;
}

function newStallFacts(stallAfterMs: number): StallFacts {
  return { stallAfterMs, arrived: new Set(), stepDeadlines: new Map(), planDeadlines: new Map(), statuses: new Map() };
}

function noteArrivals(stall: StallFacts, planId: string, events: readonly PlanEvent[]): void {
  stall.arrived.add(planId);
  let longest = 0;
  for (const e of events)
    if (e.type === 'step.started' && e.payload.deadlineMs !== undefined && e.payload.deadlineMs > longest)
      longest = e.payload.deadlineMs;
  if (longest > 0) stall.stepDeadlines.set(planId, Math.max(longest, stall.stepDeadlines.get(planId) ?? 0));
}

/**
 * A plan's stall columns after this transaction (docs/store.md#stalled-plans). Running means
 * `executing` (a plan whose events only wait behind a gap keeps what it was). With an event, the
 * plan is due `now` + its deadline (plan.created's deadlineMs, else STALL_AFTER), or later: a
 * step.started with a longer deadlineMs, or an earlier due still ahead (a step's deadline holds the
 * plan until it passes, whatever events come meanwhile). An event clears `stalledAt`. The check
 * time moves only when the plan starts running or comes back from stalled: later events push the
 * due time alone, and the stall check moves the check time up to it when it gets there.
 */
function setStallState(stall: StallFacts, before: PlanHeadRow, next: PlanHeadRow, now: Date): void {
  const planId = next.planId;
  if (stall.planDeadlines.has(planId)) next.deadlineMs = stall.planDeadlines.get(planId)!;
  const status = stall.statuses.get(planId);
  const running = status === undefined ? before.stallDueAt !== null : status === 'executing';
  if (!running) {
    next.stallDueAt = null;
    next.stallCheckAt = null;
    next.stalledAt = null;
    return;
  }
  if (!stall.arrived.has(planId)) return; // a gap skipped by the sweeper: no event came
  let due = now.getTime() + (next.deadlineMs ?? stall.stallAfterMs);
  const step = stall.stepDeadlines.get(planId);
  if (step !== undefined) due = Math.max(due, now.getTime() + step);
  const earlier = before.stallDueAt ? msOf(before.stallDueAt) : 0;
  if (earlier > due) due = earlier;
  // the plans of a transaction mostly fall due at the same instant: one Date for them all (never changed in place)
  if (stall.lastDue?.getTime() !== due) stall.lastDue = new Date(due);
  next.stallDueAt = stall.lastDue;
  if (before.stallCheckAt === null || before.stalledAt !== null) next.stallCheckAt = next.stallDueAt;
  next.stalledAt = null;
}
