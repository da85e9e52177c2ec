import { ForkOrigin, PlanEvent } from '../../src/contracts';
import { parsedEvent } from './parsed-event';

/** A plan of two steps: plan.created (a fork when `forkOf` is given), then `done` steps completed, then finalized if both are. */
export function planEvents(
  planId: string,
  sessionId: string,
  at: string,
  opts: { forkOf?: ForkOrigin; done?: number; tokens?: [number, number] } = {},
): PlanEvent[] {
  const start = Date.parse(at);
  let seq = 0;
  const ev = (type: string, payload: object): PlanEvent => {
    const event = parsedEvent({ planId, sessionId, seq, type, payload, occurredAt: new Date(start + seq * 1000) });
    seq++;
    return event;
  };
  const steps = ['s1', 's2'].map((stepId, index) => ({ stepId, index, agentId: 'a', task: `task ${stepId}` }));
  const events = [
    ev('plan.created', { query: `query of ${planId}`, steps, ...(opts.forkOf ? { forkOf: opts.forkOf } : {}) }),
  ];
  const [inputTokens, outputTokens] = opts.tokens ?? [1000, 234];
  for (const step of steps.slice(0, opts.done ?? 0)) {
    events.push(ev('step.started', { stepId: step.stepId }));
    events.push(ev('step.completed', { stepId: step.stepId, inputTokens, outputTokens }));
  }
  if ((opts.done ?? 0) === steps.length) events.push(ev('plan.finalized', { status: 'completed' }));
  return events;
}
