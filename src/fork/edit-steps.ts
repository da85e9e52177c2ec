import { parsePlanEvent, type StepSpec } from '../contracts';
import { QueryArgumentError } from '../queries/query-errors';

/**
 * Steps to change or add in a fork, from the text of a file: a JSON array of steps, or an object
 * with `steps` (a `plans export` template). Each step is checked by the contract's rules for a
 * fork's step list (its dependencies may name the parent's steps); the first violation is
 * reported with its place in the file.
 */
export function parseEditSteps(text: string, file: string): StepSpec[] {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new QueryArgumentError('--edit-steps', `${file} is not JSON: ${(err as Error).message}`);
  }
  const steps = Array.isArray(json)
    ? json
    : typeof json === 'object' && json !== null && Array.isArray((json as { steps?: unknown }).steps)
      ? (json as { steps: unknown[] }).steps
      : undefined;
  if (!steps)
    throw new QueryArgumentError('--edit-steps', `${file} must hold a JSON array of steps, or an object with "steps"`);
  const parsed = parsePlanEvent({
    specVersion: 1,
    eventId: '00000000-0000-4000-8000-000000000000',
    type: 'plan.created',
    planId: 'edit-steps',
    sessionId: 'edit-steps',
    seq: 0,
    occurredAt: '2000-01-01T00:00:00.000Z',
    payload: { query: 'edit-steps', steps, forkOf: { planId: 'edit-steps', kind: 'fork', layer: 0 } },
  });
  if (!parsed.ok) {
    const v = parsed.error.violations[0];
    throw new QueryArgumentError('--edit-steps', `${file}: ${v.message.replace(/^payload\./, '')}`);
  }
  return parsed.event.type === 'plan.created' ? parsed.event.payload.steps : [];
}
