/**
 * Which dead letters an operator means: parsing of the CLI's selection flags (pure, no I/O) and
 * the predicate the service applies while it scans the dead-letter queue. Every parse error is one
 * sentence naming the flag, so the CLI can print it as is (a usage error: exit 2).
 */
import { PlanLedgerError } from '../shared/errors';
import { parseInstant } from '../shared/iso-instant';
import { DEAD_LETTER_KINDS, DeadLetter, DeadLetterKind } from './dead-letter';
import { shardOfPlan } from '../queue/queue-shards';

/** Bad input from the caller (a malformed flag, conflicting flags): nothing was done. */
export class DeadLetterInputError extends PlanLedgerError {
  override readonly name: string = 'DeadLetterInputError';
  readonly kind = 'usage';
}

/** One or more ids named explicitly do not exist on the dead-letter queue: nothing was done. */
export class DeadLetterNotFoundError extends PlanLedgerError {
  override readonly name = 'DeadLetterNotFoundError';
  readonly kind = 'not-found';
  constructor(readonly ids: string[]) {
    super(ids.length === 1 ? `dead letter ${ids[0]} not found` : `dead letters not found: ${ids.join(', ')}`);
  }
}

/**
 * Conditions a dead letter must meet; absent fields do not filter. Times compare against
 * `lastFailedAt` (when the event was dead-lettered): `since` inclusive, `until` exclusive.
 */
export interface DeadLetterFilter {
  /** Event types (`step.completed`); any of them. */
  types?: string[];
  kinds?: DeadLetterKind[];
  planId?: string;
  since?: Date;
  until?: Date;
  /**
   * With QUEUE_SHARDS: only dead letters of this shard, i.e. whose plan id routes there (shardOfPlan;
   * an event without a plan id counts as shard 0, where the publisher sends it).
   */
  shard?: { index: number; count: number };
  /** Stop after this many matches, oldest first. @defaultValue unlimited */
  limit?: number;
}

/** Either explicit ids (all must exist) or a filter (`{}` = every dead letter, i.e. `--all`). */
export type DeadLetterSelection = { ids: string[] } | { filter: DeadLetterFilter };

/** The flags as commander hands them over: raw strings, validated here. */
export interface RawFilterOptions {
  type?: string;
  kind?: string;
  plan?: string;
  since?: string;
  until?: string;
  limit?: string;
  shard?: string;
}

export interface RawSelectionOptions extends RawFilterOptions {
  ids?: string[];
  all?: boolean;
  olderThan?: string;
}

/** An instant (src/shared/iso-instant.ts: the grammar every time argument shares). */
export function parseIsoInstant(flag: string, raw: string): Date {
  const parsed = parseInstant(raw);
  if (!parsed.ok) throw new DeadLetterInputError(`${flag}: ${parsed.problem}`);
  return parsed.date;
}

const DURATION_UNITS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/** `90s`, `45m`, `12h`, `30d`, `2w` → milliseconds. */
export function parseDuration(flag: string, raw: string): number {
  const m = /^(\d{1,6})([smhdw])$/.exec(raw.trim());
  if (!m || Number(m[1]) === 0) {
    throw new DeadLetterInputError(
      `${flag}: "${raw}" is not a positive duration; use a number and a unit s, m, h, d or w, e.g. 30d`,
    );
  }
  return Number(m[1]) * DURATION_UNITS[m[2]];
}

/** A whole number in [min, max]; `flag` names it in the error. */
export function parsePositiveInt(flag: string, raw: string, max = 1_000_000_000): number {
  const value = /^\d+$/.test(raw.trim()) ? Number(raw.trim()) : NaN;
  if (!Number.isSafeInteger(value) || value < 1 || value > max) {
    throw new DeadLetterInputError(`${flag}: "${raw}" must be a whole number from 1 to ${max}`);
  }
  return value;
}

function splitList(raw: string): string[] {
  return raw
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

function parseKinds(raw: string): DeadLetterKind[] {
  const kinds = splitList(raw);
  const unknown = kinds.filter((k) => !(DEAD_LETTER_KINDS as readonly string[]).includes(k));
  if (kinds.length === 0 || unknown.length > 0) {
    throw new DeadLetterInputError(
      `--kind: "${raw}" is not one of ${DEAD_LETTER_KINDS.join(', ')} (comma-separate several)`,
    );
  }
  return kinds as DeadLetterKind[];
}

/** The filter flags shared by list, replay and purge; `queueShards` is QUEUE_SHARDS (what --shard refers to). */
export function parseFilter(raw: RawFilterOptions, queueShards = 1): DeadLetterFilter {
  const filter: DeadLetterFilter = {};
  if (raw.shard !== undefined) {
    const index = /^\d+$/.test(raw.shard.trim()) ? Number(raw.shard.trim()) : NaN;
    if (!Number.isSafeInteger(index) || index >= queueShards)
      throw new DeadLetterInputError(
        `--shard: "${raw.shard}" is not a shard of QUEUE_SHARDS=${queueShards}; give 0${queueShards > 1 ? `-${queueShards - 1}` : ''}`,
      );
    filter.shard = { index, count: queueShards };
  }
  if (raw.type !== undefined) {
    filter.types = splitList(raw.type);
    if (filter.types.length === 0) throw new DeadLetterInputError('--type: give an event type, e.g. step.completed');
  }
  if (raw.kind !== undefined) filter.kinds = parseKinds(raw.kind);
  if (raw.plan !== undefined) {
    if (raw.plan.trim() === '') throw new DeadLetterInputError('--plan: give a plan id');
    filter.planId = raw.plan.trim();
  }
  if (raw.since !== undefined) filter.since = parseIsoInstant('--since', raw.since);
  if (raw.until !== undefined) filter.until = parseIsoInstant('--until', raw.until);
  if (filter.since && filter.until && filter.since >= filter.until) {
    throw new DeadLetterInputError(`--since ${raw.since} is not before --until ${raw.until}`);
  }
  if (raw.limit !== undefined) filter.limit = parsePositiveInt('--limit', raw.limit);
  return filter;
}

function hasFilterFlag(raw: RawSelectionOptions, withLimit = true): boolean {
  return [
    raw.type,
    raw.kind,
    raw.plan,
    raw.shard,
    raw.since,
    raw.until,
    raw.olderThan,
    withLimit ? raw.limit : undefined,
  ].some((v) => v !== undefined);
}

/**
 * Ids, `--all`, or filters (with `--older-than` as one more filter, for purge): exactly one of the
 * three, else a usage error. `now` anchors `--older-than`.
 */
export function parseSelection(
  raw: RawSelectionOptions,
  verb: string,
  now: Date = new Date(),
  queueShards = 1,
): DeadLetterSelection {
  const ids = [...new Set((raw.ids ?? []).map((id) => id.trim()).filter((id) => id.length > 0))];
  const filtered = hasFilterFlag(raw);
  if (ids.length > 0 && raw.all) throw new DeadLetterInputError(`${verb}: give dead-letter ids or --all, not both`);
  if (ids.length > 0 && filtered)
    throw new DeadLetterInputError(
      `${verb}: give dead-letter ids or filters (--type, --kind, --plan, --shard, --since, --until, --limit, --older-than), not both`,
    );
  // `--all --limit 10` reads naturally ("the first 10 of all"); --all with a real filter does not
  if (raw.all && hasFilterFlag(raw, false))
    throw new DeadLetterInputError(`${verb}: --all selects every dead letter; drop it or drop the filters`);
  if (ids.length > 0) return { ids };
  if (!raw.all && !filtered)
    throw new DeadLetterInputError(`${verb}: say which dead letters: ids, --all, or filters (see --help)`);
  const filter = parseFilter(raw, queueShards);
  if (raw.olderThan !== undefined) {
    const cutoff = new Date(now.getTime() - parseDuration('--older-than', raw.olderThan));
    filter.until = filter.until && filter.until < cutoff ? filter.until : cutoff;
    if (filter.since && filter.since >= filter.until)
      throw new DeadLetterInputError(
        `--since ${raw.since} is not before the --older-than cutoff ${filter.until.toISOString()}`,
      );
  }
  return { filter };
}

/** When the dead letter was written: its `lastFailedAt`, else when its job was added. */
export function deadLetteredAt(dl: Pick<DeadLetter, 'lastFailedAt'>, fallbackMs = 0): number {
  const t = Date.parse(dl.lastFailedAt);
  return Number.isNaN(t) ? fallbackMs : t;
}

/** Whether `dl` passes every condition of `filter` (the limit is the caller's business). */
export function matchesFilter(
  dl: Pick<DeadLetter, 'kind' | 'type' | 'planId' | 'lastFailedAt'>,
  filter: DeadLetterFilter,
  fallbackMs = 0,
): boolean {
  if (filter.kinds && !filter.kinds.includes(dl.kind)) return false;
  if (filter.types && (dl.type === null || !filter.types.includes(dl.type))) return false;
  if (filter.planId !== undefined && dl.planId !== filter.planId) return false;
  if (filter.shard && shardOfPlan(dl.planId ?? '', filter.shard.count) !== filter.shard.index) return false;
  if (filter.since || filter.until) {
    const at = deadLetteredAt(dl, fallbackMs);
    if (filter.since && at < filter.since.getTime()) return false;
    if (filter.until && at >= filter.until.getTime()) return false;
  }
  return true;
}
