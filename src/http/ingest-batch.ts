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
 * the valid ones to the publisher. An invalid event never holds back its valid neighbours; it is
 * answered `invalid` and forwarded to the worker as it came, which dead-letters it (reason and
 * content, as any refused event) and voids its plan's seq, so the plan's later events apply at once.
 */
export function ingestBatch(
  events: readonly unknown[],
  publisher: PlanEventPublisher,
  limits?: Partial<ContractLimits>,
): BatchAnswer {
  const answer: BatchAnswer = { accepted: 0, invalid: 0, dropped: 0, results: new Array(events.length) };
  const refuse = (index: number, violations: Violation[]) => {
    answer.invalid++;
    answer.results[index] = { index, status: 'invalid', violations };
    publisher.forwardRefused(JSON.stringify(events[index]) ?? 'null');
  };
  for (let index = 0; index < events.length; index++) {
    const parsed = checkStoredEvent(events[index], { limits });
    if (!parsed.ok) {
      refuse(index, parsed.error.violations);
      continue;
    }
    const result = publisher.publish(parsed.event);
    if (result.ok) {
      answer.accepted++;
      answer.results[index] = { index, status: 'accepted', eventId: result.eventId, seq: result.seq };
    } else if (result.reason === 'invalid') {
      refuse(index, result.violations);
    } else {
      answer.dropped++;
      answer.results[index] = {
        index,
        status: 'dropped',
        eventId: parsed.event.eventId,
        reason: result.reason === 'closed' ? 'the server is shutting down' : 'the spill journal is full',
      };
    }
  }
  return answer;
}
