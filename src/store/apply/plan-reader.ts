import type { EntityManager } from 'typeorm';
import type { PlanEvent } from '../../contracts';
import { ENTITY, ExecutionPlanRow, PlanEventRow, PlanHandoffRow, PlanStepRow } from '../entities';
import { definingCreatedStatement, LogCursor, logPageStatement } from '../ledger/log-statements';
import { derivedId } from '../projection/derived-id';
import { PlanProjection, type ProjectionNeeds } from '../projection/plan-projection';
import type { StoredStepPrice } from '../projection/plan-reducer';
import type { RowStore, SqlDialect } from '../sql/sql-dialect';

const STEP_PRICE_COLUMNS: Record<keyof StoredStepPrice, true> = {
  stepKey: true,
  model: true,
  provider: true,
  inputTokens: true,
  outputTokens: true,
  cacheReadTokens: true,
  cacheWriteTokens: true,
  reasoningTokens: true,
  reportedCost: true,
  completedAt: true,
  cost: true,
  costSource: true,
  priceRef: true,
};

/** Events per page when a plan's log is read (a gap filled after a long wait, a rebuild). */
export const LOG_PAGE = 1_000;

/** How many generations of ancestors a fork's steps are looked up in before the search gives up. */
export const MAX_FORK_DEPTH = 100;

/** What the store reads of stored plans inside its transaction: rows to apply events to, and logs. */
export class PlanReader {
  private readonly rows: RowStore;

  constructor(
    private readonly m: EntityManager,
    private readonly dialect: SqlDialect,
  ) {
    this.rows = dialect.rows(m);
  }

  async plans(planIds: string[]): Promise<Map<string, ExecutionPlanRow>> {
    const rows = await this.rows.findIn<ExecutionPlanRow>(ENTITY.plan, 'id', planIds);
    return new Map(rows.map((r) => [r.id, r]));
  }

  /** The pricing columns of a plan's stored steps (soft-deleted ones included): what a rebuild keeps. */
  async stepPrices(planId: string): Promise<StoredStepPrice[]> {
    return this.m.getRepository<PlanStepRow>(ENTITY.step).find({
      select: STEP_PRICE_COLUMNS,
      where: { planId },
      withDeleted: true,
    });
  }

  /**
   * Give each resumed plan the stored rows its next `events` need (PlanProjection.needs, or
   * `needs` when the caller has it already), for all the plans in one read per table.
   */
  async provide(
    items: Array<{ projection: PlanProjection; events: PlanEvent[]; needs?: ProjectionNeeds }>,
  ): Promise<void> {
    const stepIds: string[] = [];
    const whole = new Map<string, PlanProjection>();
    const lookedUp = new Map<PlanProjection, string[]>();
    // what each incomplete plan's events need, worked out once for the reads here and the fork's references
    const open: Array<{ projection: PlanProjection; needs: ProjectionNeeds }> = [];
    for (const item of items) {
      const projection = item.projection;
      if (projection.complete) continue;
      const needs = item.needs ?? PlanProjection.needs(item.events);
      open.push({ projection, needs });
      const need = projection.missing(needs);
      if (need.everyStep) whole.set(projection.plan.id, projection);
      else if (need.stepKeys.length > 0) {
        lookedUp.set(projection, need.stepKeys);
        for (const key of need.stepKeys) stepIds.push(derivedId(projection.plan.id, 'step', key));
      }
    }
    if (stepIds.length > 0) {
      const found = groupBy(await this.rows.findIn<PlanStepRow>(ENTITY.step, 'id', stepIds), (s) => s.planId);
      for (const [projection, keys] of lookedUp) projection.provide(found.get(projection.plan.id) ?? [], keys);
    }
    if (whole.size > 0) {
      const ids = [...whole.keys()];
      const steps = groupBy(await this.rows.findIn<PlanStepRow>(ENTITY.step, 'planId', ids), (s) => s.planId);
      const handoffs = groupBy(await this.rows.findIn<PlanHandoffRow>(ENTITY.handoff, 'planId', ids), (h) => h.planId);
      for (const [planId, projection] of whole)
        projection.provide(steps.get(planId) ?? [], [], handoffs.get(planId) ?? []);
    }
    await this.provideReferences(open);
  }

  /**
   * A fork's steps it has no row of, looked up among its ancestors: its parent's rows first, then
   * the parent's parent's for the keys still missing, and so on (PlanProjection.reference). One
   * read per generation for all the forks at once.
   */
  private async provideReferences(items: Array<{ projection: PlanProjection; needs: ProjectionNeeds }>): Promise<void> {
    type Search = { projection: PlanProjection; keys: string[]; ancestor: string; found: PlanStepRow[] };
    const searches: Search[] = [];
    for (const { projection, needs } of items) {
      const keys = projection.missingReferences(needs);
      const parent = projection.plan.parentPlanId;
      if (keys.length > 0) {
        if (parent) searches.push({ projection, keys, ancestor: parent, found: [] });
        else projection.reference([], keys);
      }
    }
    if (searches.length === 0) return;
    const lookedUp = searches.map((s) => ({ search: s, keys: s.keys }));
    let open = searches;
    const seen = new Set<string>();
    for (let depth = 0; open.length > 0 && depth < MAX_FORK_DEPTH; depth++) {
      const ids = open.flatMap((s) => s.keys.map((k) => derivedId(s.ancestor, 'step', k)));
      const rows = new Map(
        (await this.rows.findIn<PlanStepRow>(ENTITY.step, 'id', ids)).map((r) => [`${r.planId}\u0000${r.stepKey}`, r]),
      );
      const next: Search[] = [];
      for (const s of open) {
        const rest: string[] = [];
        for (const k of s.keys) {
          const row = rows.get(`${s.ancestor}\u0000${k}`);
          if (row) s.found.push(row);
          else rest.push(k);
        }
        seen.add(`${s.projection.plan.id}\u0000${s.ancestor}`);
        if (rest.length > 0) next.push({ ...s, keys: rest });
      }
      open = [];
      if (next.length === 0) break;
      const parents = await this.plans([...new Set(next.map((s) => s.ancestor))]);
      for (const s of next) {
        const up = parents.get(s.ancestor)?.parentPlanId;
        // no further ancestor, or one already searched for this fork (a cycle of forkOf ids): the
        // rest no ancestor has
        if (up && !seen.has(`${s.projection.plan.id}\u0000${up}`)) open.push({ ...s, ancestor: up });
      }
    }
    for (const { search, keys } of lookedUp) search.projection.reference(search.found, keys);
  }

  /**
   * The stored events of these plans above their `aboveSeq` (all of them for null), each plan's in
   * canonical order: one statement for every plan where the dialect has one, else a read per plan.
   */
  async waitingEvents(plans: Array<{ planId: string; aboveSeq: number | null }>): Promise<Map<string, PlanEvent[]>> {
    const out = new Map<string, PlanEvent[]>();
    if (plans.length === 0) return out;
    if (this.dialect.waitingEventRows) {
      for (const r of await this.dialect.waitingEventRows(this.m, plans)) push(out, r.planId, fromEventRow(r));
      return out;
    }
    for (const { planId, aboveSeq } of plans) {
      const events: PlanEvent[] = [];
      for await (const page of this.log(planId, aboveSeq ?? undefined)) for (const e of page) events.push(e);
      out.set(planId, events);
    }
    return out;
  }

  async definingCreated(planId: string): Promise<PlanEvent | undefined> {
    const row = await definingCreatedStatement(this.m, planId).getOne();
    return row ? fromEventRow(row as PlanEventRow) : undefined;
  }

  /** A plan's stored events in canonical order, a page at a time: all of them, or those with a seq above `aboveSeq`. */
  async *log(planId: string, aboveSeq?: number): AsyncGenerator<PlanEvent[]> {
    let after: LogCursor | undefined;
    for (;;) {
      const rows = (await logPageStatement(
        this.m,
        planId,
        after ? { after } : { aboveSeq },
        LOG_PAGE,
      ).getMany()) as PlanEventRow[];
      if (rows.length === 0) return;
      const page = rows.map(fromEventRow);
      yield page;
      if (rows.length < LOG_PAGE) return;
      const last = page[page.length - 1];
      after = { seq: last.seq, eventId: rows[rows.length - 1].eventId };
    }
  }
}

export function fromEventRow(r: PlanEventRow): PlanEvent {
  return {
    specVersion: r.specVersion,
    eventId: r.eventId.toLowerCase(),
    type: r.type,
    planId: r.planId,
    sessionId: r.sessionId,
    seq: r.seq,
    occurredAt: new Date(r.occurredAt).toISOString(),
    payload: JSON.parse(r.payload),
  } as PlanEvent;
}

function push<T>(map: Map<string, T[]>, key: string, item: T): void {
  const list = map.get(key);
  if (list) list.push(item);
  else map.set(key, [item]);
}

function groupBy<T>(items: T[], key: (item: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const list = out.get(k);
    if (list) list.push(item);
    else out.set(k, [item]);
  }
  return out;
}
