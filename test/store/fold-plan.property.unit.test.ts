import * as fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import type { PlanEvent } from '../../src/contracts';
import { actionFor } from '../../src/store/apply/plan-applier';
import { DagNode, dagLayers } from '../../src/store/projection/dag-layers';
import { SeqRun } from '../../src/store/projection/event-order';
import { foldPlan } from '../../src/store/projection/fold-plan';
import { arrivalArb, planLifeArb, schedule, toEvents } from './plan-events.arbitrary';

// Pure: the fold alone must not depend on the order its input arrives in (the database happens to
// return a plan's log in seq order; the fold must not rely on that).
describe('foldPlan', () => {
  it('gives the same rows for any permutation of a plan log, with duplicates (500 runs)', () => {
    fc.assert(
      fc.property(
        planLifeArb.chain((drafts) => fc.tuple(fc.constant(drafts), arrivalArb(drafts.length))),
        ([drafts, arrival]) => {
          const events = toEvents(drafts, 'plan_pure', 'sess_pure');
          const shuffled = schedule(events, arrival).flat();
          expect(foldPlan(shuffled)).toEqual(foldPlan(events));
        },
      ),
      { numRuns: 500 },
    );
  });

  it('returns nothing until plan.created is in the log', () => {
    const events = toEvents(
      [
        {
          type: 'plan.created',
          payload: { query: 'q', steps: [{ stepId: 'a', index: 0, agentId: 'coder', task: 't' }] },
        },
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
        {
          type: 'plan.created',
          payload: {
            query: 'q',
            requiresApproval: true,
            steps: [
              { stepId: 'a', index: 0, agentId: 'coder', task: 'old' },
              { stepId: 'b', index: 1, agentId: 'coder', task: 'old b' },
            ],
          },
        },
        { type: 'step.completed', payload: { stepId: 'a', inputTokens: 3, outputTokens: 4 } },
        {
          type: 'plan.decision',
          payload: { decision: 'edit', steps: [{ stepId: 'c', index: 0, agentId: 'tester', task: 'new' }] },
        },
      ],
      'plan_e',
      'sess_e',
    );
    const rows = foldPlan(events)!;
    expect(rows.steps.map((s) => [s.stepKey, s.stepIndex, s.status])).toEqual([
      ['c', 0, 'pending'],
      ['a', 1, 'completed'],
    ]);
    expect(rows.plan).toMatchObject({
      approvalStatus: 'edited',
      status: 'executing',
      totalSteps: 2,
      totalInputTokens: 3,
    });
  });
});

describe('foldPlan at scale', () => {
  it('folds a 200k-event plan (no argument spread of the log anywhere)', () => {
    const planId = 'plan_huge';
    const at = (seq: number) => new Date(Date.UTC(2026, 0, 1) + seq * 10).toISOString();
    const steps = Array.from({ length: 500 }, (_, i) => ({
      stepId: `s${i}`,
      index: i,
      agentId: `a${i % 7}`,
      task: 't',
      dependsOn: i ? [`s${i - 1}`] : [],
    }));
    const events: PlanEvent[] = [
      {
        specVersion: 1,
        eventId: randomUUID(),
        type: 'plan.created',
        planId,
        sessionId: 'sess_huge',
        seq: 0,
        occurredAt: at(0),
        payload: { query: 'q', steps },
      },
    ];
    for (let seq = 1; events.length < 200_000; seq++) {
      const stepId = `s${seq % 500}`;
      const [type, payload] =
        seq % 3 === 0
          ? ['step.completed', { stepId, inputTokens: 1, outputTokens: 2 }]
          : seq % 3 === 1
            ? ['step.started', { stepId }]
            : [
                'handoff.recorded',
                { handoffId: `h${seq % 1000}`, stepId, fromAgentId: 'x', toAgentId: 'y', reason: 'r' },
              ];
      events.push({
        specVersion: 1,
        eventId: randomUUID(),
        type,
        planId,
        sessionId: 'sess_huge',
        seq,
        occurredAt: at(seq),
        payload,
      } as PlanEvent);
    }
    const rows = foldPlan(events)!;
    expect(rows.plan).toMatchObject({
      totalSteps: 500,
      completedSteps: 500,
      totalInputTokens: 500,
      totalOutputTokens: 1000,
      updatedAt: new Date(at(199_999)),
    });
    expect(rows.handoffs).toHaveLength(1000);
    expect(JSON.parse(rows.dag.dag).layers).toHaveLength(500);
  });
});

/** The layering rule as first written (quadratic): the reference for the linear one. */
function naiveLayers(nodes: DagNode[]): string[][] {
  const ordered = [...nodes].sort((a, b) => a.index - b.index);
  const known = new Set(ordered.map((n) => n.stepId));
  const placed = new Set<string>();
  const layers: string[][] = [];
  let remaining = ordered;
  while (remaining.length > 0) {
    const layer = remaining.filter((n) => n.dependsOn.every((d) => !known.has(d) || placed.has(d)));
    if (layer.length === 0) {
      layers.push(remaining.map((n) => n.stepId));
      break;
    }
    layers.push(layer.map((n) => n.stepId));
    for (const n of layer) placed.add(n.stepId);
    remaining = remaining.filter((n) => !placed.has(n.stepId));
  }
  return layers;
}

describe('dagLayers', () => {
  it('gives the layers of the first-written rule for any graph: cycles, unknown and repeated dependencies (500 runs)', () => {
    const graph = fc.integer({ min: 0, max: 12 }).chain((n) =>
      fc.tuple(
        fc.shuffledSubarray(
          Array.from({ length: n }, (_, i) => i),
          { minLength: n, maxLength: n },
        ),
        fc.array(fc.array(fc.nat(n + 1), { maxLength: 4 }), { minLength: n, maxLength: n }),
      ),
    );
    fc.assert(
      fc.property(graph, ([indexes, deps]) => {
        const nodes = indexes.map((index, i) => ({ stepId: `n${i}`, index, dependsOn: deps[i].map((d) => `n${d}`) }));
        expect(dagLayers(nodes)).toEqual(naiveLayers(nodes));
      }),
      { numRuns: 500 },
    );
  });

  it('lays out a chain of 10,000 steps, one per layer', () => {
    const nodes = Array.from({ length: 10_000 }, (_, i) => ({
      stepId: `s${i}`,
      index: i,
      dependsOn: i ? [`s${i - 1}`] : [],
    }));
    expect(dagLayers(nodes)).toHaveLength(10_000);
  });
});

describe('SeqRun and actionFor', () => {
  it('admits up to the first missing seq, then nothing; with skipGaps, everything', () => {
    const run = new SeqRun(4);
    expect([3, 4, 5, 5, 6, 8, 9].map((s) => run.admits(s))).toEqual([true, true, true, true, true, false, false]);
    expect(run.watermark).toBe(6);
    const skipping = new SeqRun(4, true);
    expect([5, 8, 9].map((s) => skipping.admits(s))).toEqual([true, true, true]);
    expect(skipping.watermark).toBe(9);
  });

  it('waits, applies, reads the log or rebuilds as the head says', () => {
    const created = { type: 'plan.created', seq: 3 } as PlanEvent;
    const at = (seq: number) => ({ type: 'step.started', seq }) as PlanEvent;
    expect(actionFor({ appliedSeq: null, pendingEvents: 0 }, [at(1)])).toBe('wait');
    expect(actionFor({ appliedSeq: null, pendingEvents: 0 }, [at(1), created])).toBe('apply');
    expect(actionFor({ appliedSeq: null, pendingEvents: 2 }, [created])).toBe('apply-with-log');
    expect(actionFor({ appliedSeq: 5, pendingEvents: 0 }, [at(6), at(7)])).toBe('apply');
    expect(actionFor({ appliedSeq: 5, pendingEvents: 3 }, [at(6)])).toBe('apply-with-log');
    expect(actionFor({ appliedSeq: 5, pendingEvents: 0 }, [at(7)])).toBe('wait');
    expect(actionFor({ appliedSeq: 5, pendingEvents: 0 }, [at(5), at(6)])).toBe('rebuild');
  });
});
