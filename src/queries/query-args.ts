import type { PlanStatus } from '../store/entities';
import { parseInstant } from '../shared/iso-instant';
import { QueryArgumentError } from './query-errors';

/**
 * Validation of read-side arguments, shared by the library and the CLI so both refuse the same
 * inputs with the same one-line message.
 */

export const PLAN_STATUS_VALUES: readonly PlanStatus[] = ['planning', 'executing', 'completed', 'failed', 'cancelled'];

/** What `--status` / `status` may name: a stored status, or `stalled` (derived: executing plans the stall check marked). */
export const PLAN_LIST_STATUS_VALUES: readonly string[] = [...PLAN_STATUS_VALUES, 'stalled'];
/** The breakdowns of `analytics tokens` (`--by`). */
export const TOKEN_DIMENSIONS = ['session', 'plan', 'agent', 'model'] as const;
export type TokenDimension = (typeof TOKEN_DIMENSIONS)[number];
export const COST_DIMENSIONS = ['model', 'agent', 'session', 'plan'] as const;
export type CostDimension = (typeof COST_DIMENSIONS)[number];

/** `--by` of `analytics cost` (`by` over HTTP): model, agent, session or plan. */
export function parseCostDimension(raw: string, argument = '--by'): CostDimension {
  const value = raw.trim().toLowerCase();
  if (!(COST_DIMENSIONS as readonly string[]).includes(value))
    throw new QueryArgumentError(argument, `"${raw}" is not one of ${COST_DIMENSIONS.join(', ')}`);
  return value as CostDimension;
}

export const ACTIVE_STATUSES: readonly PlanStatus[] = ['planning', 'executing'];
/** Statuses of a finished plan (a session's plan history). */
export const FINISHED_STATUSES: readonly PlanStatus[] = ['completed', 'failed', 'cancelled'];

/** An instant (src/shared/iso-instant.ts: the grammar every time argument shares). */
export function parseIsoInstant(argument: string, raw: string): Date {
  const parsed = parseInstant(raw);
  if (!parsed.ok) throw new QueryArgumentError(argument, parsed.problem);
  return parsed.date;
}

/** Plans created in `[from, to)`; either end may be open. */
export interface DateRange {
  from?: Date;
  to?: Date;
}

export function parseDateRange(from?: string, to?: string): DateRange {
  const range: DateRange = {};
  if (from !== undefined) range.from = parseIsoInstant('--from', from);
  if (to !== undefined) range.to = parseIsoInstant('--to', to);
  if (range.from && range.to && range.from.getTime() >= range.to.getTime()) {
    throw new QueryArgumentError('--to', `"${to}" must be after --from "${from}" (--to is exclusive)`);
  }
  return range;
}

/** A whole number within [min, max]; `undefined` gives the default. */
export function parseCount(
  argument: string,
  raw: string | number | undefined,
  bounds: { min: number; max: number; default: number },
): number {
  if (raw === undefined) return bounds.default;
  const text = String(raw).trim();
  const value = /^-?\d+$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(value) || value < bounds.min || value > bounds.max) {
    const range =
      bounds.max === Number.MAX_SAFE_INTEGER ? `${bounds.min} or more` : `from ${bounds.min} to ${bounds.max}`;
    throw new QueryArgumentError(argument, `"${raw}" must be a whole number ${range}`);
  }
  return value;
}

/** Page size of lists. @defaultValue 20, at most 1000 */
export const parseLimit = (raw: string | number | undefined, def = 20): number =>
  parseCount('--limit', raw, { min: 1, max: 1000, default: def });
/** Rows to skip before the page. @defaultValue 0 */
export const parseOffset = (raw: string | number | undefined): number =>
  parseCount('--offset', raw, { min: 0, max: Number.MAX_SAFE_INTEGER, default: 0 });

export function parsePlanStatus(raw: string): PlanStatus {
  const value = raw.trim().toLowerCase();
  if (!(PLAN_STATUS_VALUES as readonly string[]).includes(value)) {
    throw new QueryArgumentError('--status', `"${raw}" is not one of ${PLAN_STATUS_VALUES.join(', ')}`);
  }
  return value as PlanStatus;
}

/** A plan/session id as the executor wrote it; refuse blanks early rather than query for them. */
export function requireId(argument: string, raw: string): string {
  const value = (raw ?? '').trim();
  if (value === '' || value.length > 64)
    throw new QueryArgumentError(argument, `"${raw}" is not an id (1-64 characters)`);
  return value;
}
