import { parsePlanEvent, type StepSpec } from '../contracts';
import { QueryArgumentError } from '../queries/query-errors';

/**
 * Steps to change or add in a fork, from the text of a file (`plans fork --edit-steps FILE`): the
 * file must be JSON; its value is checked by `checkEditSteps`, each problem reported with the file.
 */
export function parseEditSteps(text: string, file: string): StepSpec[] {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new QueryArgumentError('--edit-steps', `${file} is not JSON: ${(err as Error).message}`);
  }
  return checkEditSteps(json, '--edit-steps', file);
}

/**
 * Steps to change or add in a fork, as JSON already parsed (a file's content, or the `editSteps`
 * of `POST /v1/plans/{planId}/fork|replay`): an array of steps, or an object with `steps` (a
 * template as `plans export` writes it). Each step is checked by the contract's rules for a fork's step list (its
 * dependencies may name the parent's steps); the first violation is reported, as a problem of
 * `argument` (and of `source`, when given: the file it came from).
 */
export function checkEditSteps(value: unknown, argument: string, source?: string): StepSpec[] {
  const at = source === undefined ? '' : `${source}: `;
  const steps = Array.isArray(value)
    ? value
    : typeof value === 'object' && value !== null && Array.isArray((value as { steps?: unknown }).steps)
      ? (value as { steps: unknown[] }).steps
      : undefined;
  if (!steps)
    throw new QueryArgumentError(
      argument,
      `${source === undefined ? 'must be' : `${source} must hold`} a JSON array of steps, or an object with "steps"`,
    );
  const parsed = parsePlanEvent({
    specVersion: 1,
    eventId: '00000000-0000-4000-8000-000000000000',
    type: 'plan.created',
    planId: 'edit-steps',
    sessionId: 'edit-steps',
    seq: 0,
    occurredAt: '2000-01-01T00:00:00.000Z',
    // the fork sets every index (a changed step keeps its parent's): one given is not checked, none is needed
    payload: {
      query: 'edit-steps',
      steps: steps.map((step: unknown, i) =>
        typeof step === 'object' && step !== null && !Array.isArray(step) ? { ...step, index: i } : step,
      ),
      forkOf: { planId: 'edit-steps', kind: 'fork', layer: 0 },
    },
  });
  if (!parsed.ok) {
    const v = parsed.error.violations[0];
    throw new QueryArgumentError(argument, `${at}${v.message.replace(/^payload\./, '')}`);
  }
  return parsed.event.type === 'plan.created' ? parsed.event.payload.steps : [];
}
