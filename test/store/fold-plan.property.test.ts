import * as fc from 'fast-check';
import { foldPlan } from '../../src/store/projection/fold-plan';
import { arrivalArb, planLifeArb, schedule, toEvents } from './plan-events.arbitrary';

// Pure: the fold alone must not depend on the order its input arrives in (the database happens to
// return a plan's log in seq order; the fold must not rely on that).
describe('foldPlan', () => {
  it('gives the same rows for any permutation of a plan log, with duplicates (500 runs)', () => {
    fc.assert(
      fc.property(planLifeArb.chain((drafts) => fc.tuple(fc.constant(drafts), arrivalArb(drafts.length))), ([drafts, arrival]) => {
        const events = toEvents(drafts, 'plan_pure', 'sess_pure');
        const shuffled = schedule(events, arrival).flat();
        expect(foldPlan(shuffled)).toEqual(foldPlan(events));
      }),
      { numRuns: 500 },
    );
  });

  it('returns nothing until plan.created is in the log', () => {
    const events = toEvents(
      [
        { type: 'plan.created', payload: { query: 'q', steps: [{ stepId: 'a', index: 0, agentId: 'coder', task: 't' }] } },
        { type: 'step.started', payload: { stepId: 'a' } },
      ],
      'plan_x',
      'sess_x',
    );
    expect(foldPlan(events.slice(1))).toBeNull();
    expect(foldPlan(events)?.steps[0].status).toBe('in_progress');
  });

  it('keeps a step that already ran when an edit drops it, after the new steps', () => {
    const events = toEvents(
      [
        { type: 'plan.created', payload: { query: 'q', requiresApproval: true, steps: [{ stepId: 'a', index: 0, agentId: 'coder', task: 'old' }, { stepId: 'b', index: 1, agentId: 'coder', task: 'old b' }] } },
        { type: 'step.completed', payload: { stepId: 'a', inputTokens: 3, outputTokens: 4 } },
        { type: 'plan.decision', payload: { decision: 'edit', steps: [{ stepId: 'c', index: 0, agentId: 'tester', task: 'new' }] } },
      ],
      'plan_e',
      'sess_e',
    );
    const rows = foldPlan(events)!;
    expect(rows.steps.map((s) => [s.stepKey, s.stepIndex, s.status])).toEqual([
      ['c', 0, 'pending'],
      ['a', 1, 'completed'],
    ]);
    expect(rows.plan).toMatchObject({ approvalStatus: 'edited', status: 'executing', totalSteps: 2, totalInputTokens: 3 });
  });
});
