import { parsePlanEvent, type PlanEvent } from '../../src/contracts';
import { displayMoney, formatMoney, parseMoney } from '../../src/pricing';
import { rng, stableUuid } from './event-factory';

/** A plan whose steps each report a cost, and the amounts it must read back. */
export interface MoneyPlan {
  planId: string;
  sessionId: string;
  /** Each step's reported cost in the column form (12 decimals), by step key. */
  costs: Record<string, string>;
  /** The exact sum of the costs, in the column form. */
  total: string;
  /** The plan.created event first, then one step.completed per step. */
  events: PlanEvent[];
}

/** The extremes of the range, then random amounts below $10^9 with all 12 decimals drawn. */
function amounts(seed: number, count: number): string[] {
  const random = rng(seed);
  const digits = (n: number) => String(Math.floor(random() * 10 ** n)).padStart(n, '0');
  const drawn = Array.from({ length: count }, () => `${Math.floor(random() * 1e9)}.${digits(6)}${digits(6)}`);
  return ['999999999.999999999999', '0.000000000001', ...drawn].slice(0, count);
}

/**
 * A plan of `steps` steps (at least 2), each completed with a reported cost: $999,999,999.999999999999,
 * $0.000000000001, then random amounts below $10^9 with 12 decimals, which no double holds exactly.
 */
export function moneyPlan(planId: string, seed: number, steps = 6): MoneyPlan {
  const sessionId = `sess_${planId}`;
  const keys = Array.from({ length: steps }, (_, i) => `s${i}`);
  const reported = amounts(seed, steps);
  let seq = 0;
  const ev = (type: string, payload: object) => {
    const parsed = parsePlanEvent({
      specVersion: 1,
      eventId: stableUuid(`${planId}#${seq}`),
      type,
      planId,
      sessionId,
      seq: seq++,
      occurredAt: new Date(Date.UTC(2026, 0, 5, 9, 0, seq)).toISOString(),
      payload,
    });
    if (!parsed.ok) throw parsed.error;
    return parsed.event;
  };
  const events = [
    ev('plan.created', {
      query: 'q',
      steps: keys.map((stepId, index) => ({ stepId, index, agentId: 'a', task: 't' })),
    }),
  ];
  keys.forEach((stepId, i) =>
    events.push(
      ev('step.completed', { stepId, inputTokens: 1, outputTokens: 1, model: 'in-house', reportedCost: reported[i] }),
    ),
  );
  const costs = Object.fromEntries(keys.map((k, i) => [k, formatMoney(parseMoney(reported[i]!)!)]));
  const total = formatMoney(reported.reduce((t, c) => t + parseMoney(c)!, 0n));
  return { planId, sessionId, costs, total, events };
}

/** The amount as the reads show it to people. */
export const shown = (column: string) => displayMoney(parseMoney(column)!);
