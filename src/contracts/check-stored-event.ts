/**
 * The worker's check of an event read from the queue: `parsePlanEvent`'s verdict, identical for
 * every input, for a fraction of its cost on the common case, a valid event.
 *
 * 1. the contract's raw-input guard (size, JSON only, prototype keys, NUL characters and lone
 *    surrogates, nesting), which also gives a fresh tree the caller does not share;
 * 2. the fast rules (fast-check/), the contract's rules without class-transformer and
 *    class-validator, with every stamp required: a stored event must carry specVersion, eventId,
 *    seq and occurredAt (the publisher's own use of these rules skips absent stamps, which it fills);
 * 3. no violation: accepted, normalised as `parsePlanEvent` normalises;
 *    anything else (guard failure, a violation, an exception): `parsePlanEvent` decides and words
 *    the error, so a reject costs one more guard pass and the mirror's wording never reaches a
 *    dead letter. The fast rules may be stricter than the DTOs, never more lenient
 *    (test/contracts/check-stored-event.unit.test.ts holds them to that).
 */
import { checkEventRules } from './fast-check/event-rules';
import type { Violation } from './invalid-event.error';
import { ContractLimits, resolveLimits } from './limits';
import { normaliseAccepted, parsePlanEvent, ParsePlanEventOptions, ParseResult } from './parse-plan-event';
import { guardRawInput } from './raw-input.guard';
import type { PlanEvent } from './types';

/**
 * Same contract, same result as `parsePlanEvent(input, options)` (deep-equal events, identical
 * violations), for an event that must carry its stamps. Synchronous, never throws.
 */
export function checkStoredEvent(input: unknown, options?: ParsePlanEventOptions): ParseResult {
  try {
    const event = acceptFast(input, resolveLimits(options?.limits));
    if (event !== undefined) return { ok: true, event };
  } catch {
    // Not expected on guarded JSON; the authority below gives the verdict and the wording.
  }
  return parsePlanEvent(input, options);
}

/** The normalised event when the guard and every fast rule pass; undefined otherwise. */
function acceptFast(input: unknown, limits: Readonly<ContractLimits>): PlanEvent | undefined {
  const guarded = guardRawInput(input, limits);
  if (!guarded.ok) return undefined;
  const out: Violation[] = [];
  checkEventRules(guarded.root, { limits, out }, 'required');
  return out.length === 0 ? normaliseAccepted(guarded.root) : undefined;
}
