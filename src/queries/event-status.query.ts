import { DataSource } from 'typeorm';
import { inIds } from '../store/sql/id-lists';
import { isUuid } from '../contracts/field-formats';
import { pushAll } from '../shared/arrays';
import { chunk, valuesPerInList } from '../store/sql/batch-limits';
import { sqlDialectOf } from '../store/sql/dialects';
import { ENTITY, PlanEventRow, PlanHeadRow } from '../store/entities';
import { isVoidedSeq, voidedSeqIdOf } from '../store/projection/voided-seq';
import { QueryArgumentError } from './query-errors';
import { toNum } from './row-normalize';

/**
 * Where each event an executor published is now, for read-your-writes:
 * - `applied`: in its plan's rows (every read shows it);
 * - `waiting`: stored in the log, behind a seq of its plan still missing (see
 *   docs/store.md#incremental-behind-a-watermark);
 * - `refused`: dead-lettered, its seq voided (`dlq list --plan <planId>` shows why);
 * - `unknown`: not stored (yet): still on its way, or never published.
 * Ids are given back lower-case, as stored.
 */
export interface EventStatuses {
  applied: string[];
  waiting: string[];
  refused: string[];
  unknown: string[];
}

/** Most ids one call takes. @defaultValue 10000 */
export const MAX_STATUS_IDS = 10_000;

/** Checks the ids of a status request: UUIDs (the contract's eventId), at most MAX_STATUS_IDS. */
export function parseEventIds(raw: unknown): string[] {
  if (!Array.isArray(raw)) throw new QueryArgumentError('eventIds', 'must be an array of event ids');
  if (raw.length > MAX_STATUS_IDS)
    throw new QueryArgumentError('eventIds', `at most ${MAX_STATUS_IDS} ids per request (got ${raw.length})`);
  const bad = raw.findIndex((id) => !isUuid(id));
  if (bad >= 0) throw new QueryArgumentError(`eventIds[${bad}]`, 'must be an event id (a UUID)');
  return [...new Set((raw as string[]).map((id) => id.toLowerCase()))];
}

/** The status of each event id (lower-case UUIDs, see parseEventIds). */
export async function eventStatuses(ds: DataSource, eventIds: readonly string[]): Promise<EventStatuses> {
  const voidOf = new Map(eventIds.map((id) => [voidedSeqIdOf(id), id]));
  const found = new Map<string, { planId: string; seq: number }>();
  const refused = new Set<string>();
  for (const part of chunk([...eventIds, ...voidOf.keys()], valuesPerInList(sqlDialectOf(ds)))) {
    const rows = await ds.getRepository<PlanEventRow>(ENTITY.event).find({
      select: { eventId: true, planId: true, seq: true, type: true },
      where: { eventId: inIds(sqlDialectOf(ds), part) },
      withDeleted: true,
    });
    for (const r of rows) {
      const id = r.eventId.toLowerCase();
      if (isVoidedSeq(r) && voidOf.has(id)) refused.add(voidOf.get(id)!);
      else found.set(id, { planId: r.planId, seq: toNum(r.seq) });
    }
  }
  const watermarks = await appliedSeqs(ds, [...new Set([...found.values()].map((f) => f.planId))]);
  const out: EventStatuses = { applied: [], waiting: [], refused: [], unknown: [] };
  for (const id of eventIds) {
    const stored = found.get(id);
    // a refusal wins: the id may be stored for another event (a conflict), which is not this one
    if (refused.has(id)) out.refused.push(id);
    else if (!stored) out.unknown.push(id);
    else {
      const applied = watermarks.get(stored.planId);
      (applied !== undefined && applied !== null && stored.seq <= applied ? out.applied : out.waiting).push(id);
    }
  }
  return out;
}

async function appliedSeqs(ds: DataSource, planIds: string[]): Promise<Map<string, number | null>> {
  const out = new Map<string, number | null>();
  for (const part of chunk(planIds, valuesPerInList(sqlDialectOf(ds)))) {
    const rows = await ds.getRepository<PlanHeadRow>(ENTITY.head).find({
      select: { planId: true, appliedSeq: true },
      where: { planId: inIds(sqlDialectOf(ds), part) },
      withDeleted: true,
    });
    for (const r of rows) out.set(r.planId, r.appliedSeq === null ? null : toNum(r.appliedSeq));
  }
  return out;
}

/**
 * `eventStatuses` until no id is `waiting` or `unknown`, or `waitMs` has passed (then the answer
 * as it stands). Looks every `pollMs`; `signal` ends the wait early (the server is closing).
 */
export async function awaitEventStatuses(
  ds: DataSource,
  eventIds: readonly string[],
  waitMs: number,
  signal?: AbortSignal,
  pollMs = 100,
): Promise<EventStatuses> {
  const deadline = Date.now() + waitMs;
  let pending = [...eventIds];
  const settled: EventStatuses = { applied: [], waiting: [], refused: [], unknown: [] };
  for (;;) {
    const now = await eventStatuses(ds, pending);
    pushAll(settled.applied, now.applied);
    pushAll(settled.refused, now.refused);
    pending = [...now.waiting, ...now.unknown];
    if (pending.length === 0 || Date.now() + pollMs > deadline || signal?.aborted) {
      return { applied: settled.applied, waiting: now.waiting, refused: settled.refused, unknown: now.unknown };
    }
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}
