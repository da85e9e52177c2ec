import { checkStoredEvent } from '../contracts';
import type { ContractLimits, Violation } from '../contracts';
import type { PlanEventPublisher } from '../publisher';

/** One answer per event of a batch, in the batch's order. */
export type EventResult =
  | { index: number; status: 'accepted'; eventId: string; seq: number }
  | { index: number; status: 'invalid'; violations: Violation[] }
  | { index: number; status: 'dropped'; eventId: string; reason: string };

export interface BatchAnswer {
  accepted: number;
  invalid: number;
  dropped: number;
  results: EventResult[];
}

/**
 * Checks each event of a batch against the contract (`checkStoredEvent`: `parsePlanEvent`'s verdict
 * and wording, every stamp required so a retried POST carries the same eventId and seq) and hands
 * the valid ones to the publisher. An invalid event never holds back its valid neighbours.
 */
export function ingestBatch(events: readonly unknown[], publisher: PlanEventPublisher, limits?: Partial<ContractLimits>): BatchAnswer {
  const answer: BatchAnswer = { accepted: 0, invalid: 0, dropped: 0, results: new Array(events.length) };
  for (let index = 0; index < events.length; index++) {
    const parsed = checkStoredEvent(events[index], { limits });
    if (!parsed.ok) {
      answer.invalid++;
      answer.results[index] = { index, status: 'invalid', violations: parsed.error.violations };
      continue;
    }
    const result = publisher.publish(parsed.event);
    if (result.ok) {
      answer.accepted++;
      answer.results[index] = { index, status: 'accepted', eventId: result.eventId, seq: result.seq };
    } else if (result.reason === 'invalid') {
      answer.invalid++;
      answer.results[index] = { index, status: 'invalid', violations: result.violations };
    } else {
      answer.dropped++;
      answer.results[index] = { index, status: 'dropped', eventId: parsed.event.eventId, reason: result.reason === 'closed' ? 'the server is shutting down' : 'the spill journal is full' };
    }
  }
  return answer;
}
