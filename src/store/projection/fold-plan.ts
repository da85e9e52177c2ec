import type { PlanEvent } from '../../contracts';
import { canonicalOrder, definingCreated } from './event-order';
import { PlanReducer, PlanRows } from './plan-reducer';

export type { PlanRows } from './plan-reducer';

/**
 * Fold one plan's whole event log into its rows: the reference semantics of the store. Pure and
 * deterministic: the same set of events gives the same rows whatever order they arrived in and
 * however often (duplicates by eventId are dropped). The store applies new events to the stored
 * rows instead (PlanProjection over the same PlanReducer), and reads the whole log only for the rare events
 * that land behind a plan's watermark (docs/store.md#late-events-rebuild).
 *
 * Returns null while the plan has no `plan.created` (its other events wait in plan_events). The
 * defining `plan.created` is applied first whatever its seq; the others follow in canonical order.
 */
export function foldPlan(events: PlanEvent[]): PlanRows | null {
  const unique = [...new Map(events.map((e) => [e.eventId, e])).values()].sort(canonicalOrder);
  const created = definingCreated(unique);
  if (!created) return null;
  const plan = PlanReducer.create(created);
  for (const event of unique) if (event !== created) plan.apply(event);
  return plan.rows();
}
