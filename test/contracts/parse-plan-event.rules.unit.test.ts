/** Cross-field rules (step graph, decision vs steps) and the configurable limits. */
import { DEFAULT_LIMITS } from '../../src/contracts';
import { findCycle } from '../../src/contracts/step-graph.check';
import {
  accepted,
  chain,
  checkpoint,
  completed,
  created,
  decision,
  envelope,
  nested,
  pairs,
  step,
} from './plan-event.fixtures';

describe('parsePlanEvent: step lists', () => {
  it.each<[string, unknown, [string, string][]]>([
    [
      'duplicate stepId',
      created({ steps: [step(0), step(1), step(2, { stepId: 's0' })] }),
      [
        [
          'payload.steps[2].stepId',
          'payload.steps[2].stepId must be unique within the step list (steps[0] has the same stepId)',
        ],
      ],
    ],
    [
      'duplicate index',
      created({ steps: [step(0), step(1, { index: 0 })] }),
      [
        [
          'payload.steps[1].index',
          'payload.steps[1].index must be unique within the step list (steps[0] has the same index)',
        ],
      ],
    ],
    [
      'dependsOn an unknown step',
      created({ steps: [step(0), step(1, { dependsOn: ['s0', 'nope'] })] }),
      [['payload.steps[1].dependsOn[1]', 'payload.steps[1].dependsOn[1] must name a step of the same list']],
    ],
    [
      'a cycle through three steps',
      created({
        steps: [step(0, { dependsOn: ['s2'] }), step(1, { dependsOn: ['s0'] }), step(2, { dependsOn: ['s1'] })],
      }),
      [
        [
          'payload.steps[1].dependsOn',
          'payload.steps[1].dependsOn forms a cycle: steps[1] -> steps[0] -> steps[2] -> steps[1]',
        ],
      ],
    ],
    [
      'a step depending on itself',
      created({ steps: [step(0), step(1, { dependsOn: ['s0', 's1'] })] }),
      [['payload.steps[1].dependsOn', 'payload.steps[1].dependsOn forms a cycle: steps[1] -> steps[1]']],
    ],
    [
      'an edit whose steps form a cycle',
      decision({ decision: 'edit', steps: [step(0, { dependsOn: ['s1'] }), step(1, { dependsOn: ['s0'] })] }),
      [['payload.steps[1].dependsOn', 'payload.steps[1].dependsOn forms a cycle: steps[1] -> steps[0] -> steps[1]']],
    ],
    [
      'edit without steps',
      decision({ decision: 'edit' }),
      [['payload.steps', 'payload.steps is required when decision is edit']],
    ],
    [
      'edit with no steps',
      decision({ decision: 'edit', steps: [] }),
      [['payload.steps', 'payload.steps must contain at least 1 step when decision is edit']],
    ],
    [
      'approve with steps',
      decision({ decision: 'approve', steps: chain(1) }),
      [['payload.steps', 'payload.steps must be absent unless decision is edit']],
    ],
    [
      'reject with steps',
      decision({ decision: 'reject', steps: [] }),
      [['payload.steps', 'payload.steps must be absent unless decision is edit']],
    ],
  ])('%s', (_name, input, expected) => {
    expect(pairs(input)).toEqual(expected);
  });

  it('accepts a diamond (a DAG with two paths to one step)', () => {
    const steps = [
      step(0),
      step(1, { dependsOn: ['s0'] }),
      step(2, { dependsOn: ['s0'] }),
      step(3, { dependsOn: ['s1', 's2'] }),
    ];
    expect(accepted(created({ steps })).payload).toMatchObject({ steps });
  });

  it('reports field and graph violations together', () => {
    const input = created({ steps: [step(0, { agentId: '' }), step(1, { stepId: 's0', dependsOn: ['zz'] })] });
    expect(pairs(input).map(([path]) => path)).toEqual([
      'payload.steps[0].agentId',
      'payload.steps[1].stepId',
      'payload.steps[1].dependsOn[0]',
    ]);
  });

  it("a fork's steps may depend on its parent's steps; its origin is checked field by field", () => {
    const forkOf = { planId: 'plan_parent', kind: 'fork', layer: 2, checkpointId: 'cp_1' };
    const steps = [step(7, { dependsOn: ['parent_step', 's8'] }), step(8)];
    expect(accepted(created({ steps, forkOf })).payload).toMatchObject({ forkOf, steps });
    expect(accepted(created({ steps: [], forkOf: { planId: 'p', kind: 'replay', layer: 0 } })).type).toBe(
      'plan.created',
    );
    // a cycle among the fork's own steps is still one
    expect(pairs(created({ steps: [step(0, { dependsOn: ['s1'] }), step(1, { dependsOn: ['s0'] })], forkOf }))).toEqual(
      [['payload.steps[1].dependsOn', 'payload.steps[1].dependsOn forms a cycle: steps[1] -> steps[0] -> steps[1]']],
    );
    expect(pairs(created({ forkOf: { planId: '', kind: 'copy', layer: -1, extra: 1 } })).map(([p]) => p)).toEqual([
      'payload.forkOf.extra',
      'payload.forkOf.planId',
      'payload.forkOf.kind',
      'payload.forkOf.layer',
    ]);
    // without forkOf, an unknown dependency stays an error
    expect(pairs(created({ steps: [step(0, { dependsOn: ['parent_step'] })] }))).toEqual([
      ['payload.steps[0].dependsOn[0]', 'payload.steps[0].dependsOn[0] must name a step of the same list'],
    ]);
  });

  it('checks a 500-step chain without recursion trouble', () => {
    expect(accepted(created({ steps: chain(500) })).type).toBe('plan.created');
  });
});

describe('findCycle', () => {
  it.each<[string, number[][], number[] | undefined]>([
    ['empty', [], undefined],
    ['chain', [[], [0], [1]], undefined],
    ['self loop', [[0]], [0, 0]],
    ['two-cycle after an acyclic prefix', [[], [0, 2], [1]], [2, 1, 2]],
  ])('%s', (_name, edges, expected) => {
    expect(findCycle(edges)).toEqual(expected);
  });

  it('walks a 100k-long chain iteratively', () => {
    const edges = Array.from({ length: 100_000 }, (_, i) => (i > 0 ? [i - 1] : []));
    expect(findCycle(edges)).toBeUndefined();
  });
});

describe('parsePlanEvent: limits', () => {
  it('has the documented defaults', () => {
    expect(DEFAULT_LIMITS).toEqual({
      maxEventBytes: 1_048_576,
      maxJobBytes: 16_777_216,
      maxSteps: 500,
      maxLongText: 200_000,
      maxStateDepth: 32,
      maxDependsOn: 100,
    });
  });

  it.each<[string, unknown, object, [string, string][]]>([
    [
      'long text',
      completed({ outputContent: 'x'.repeat(11) }),
      { maxLongText: 10 },
      [['payload.outputContent', 'payload.outputContent must be at most 10 characters long']],
    ],
    [
      'task text',
      created({ query: 'q', steps: [step(0, { task: 'x'.repeat(11) })] }),
      { maxLongText: 10 },
      [['payload.steps[0].task', 'payload.steps[0].task must be at most 10 characters long']],
    ],
    [
      'dependsOn count',
      created({ steps: [step(0), step(1), step(2, { dependsOn: ['s0', 's1'] })] }),
      { maxDependsOn: 1 },
      [['payload.steps[2].dependsOn', 'payload.steps[2].dependsOn must contain at most 1 items']],
    ],
    [
      'state depth',
      checkpoint(nested(4)),
      { maxStateDepth: 3 },
      [['payload.state', 'payload.state must not be nested more than 3 levels deep']],
    ],
    [
      'state depth through arrays',
      checkpoint({ a: [[{}]] }),
      { maxStateDepth: 3 },
      [['payload.state', 'payload.state must not be nested more than 3 levels deep']],
    ],
    // An oversized list is reported alone: validating its items one by one is what it would cost.
    [
      'step count, alone',
      created({ steps: [step(0, { agentId: 1 }), step(1), step(2)] }),
      { maxSteps: 2 },
      [['payload.steps', 'payload.steps must contain at most 2 items']],
    ],
  ])('%s', (_name, input, limits, expected) => {
    expect(pairs(input, limits)).toEqual(expected);
  });

  it('accepts values exactly at the limits', () => {
    expect(accepted(completed({ outputContent: 'x'.repeat(10) }), { maxLongText: 10 }).type).toBe('step.completed');
    expect(accepted(checkpoint(nested(3)), { maxStateDepth: 3 }).type).toBe('checkpoint.saved');
    expect(accepted(created({ steps: chain(2) }), { maxSteps: 2 }).type).toBe('plan.created');
    expect(accepted(checkpoint(nested(32))).type).toBe('checkpoint.saved');
  });

  it('keeps step lists valid even when state depth is set very low', () => {
    expect(accepted(created({ steps: chain(3) }), { maxStateDepth: 1 }).type).toBe('plan.created');
  });

  it('bounds nesting outside state too', () => {
    const input = envelope('step.started', { stepId: 's1' }, { junk: [nested(40)] });
    expect(pairs(input)).toEqual([['junk[0]', 'junk[0] must not be nested more than 32 levels deep']]);
  });
});
