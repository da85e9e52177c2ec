import * as fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import { parsePlanEvent, PlanEvent } from '../../src/contracts';

/**
 * fast-check generator of one plan's whole life as events in `seq` order: creation (with or
 * without approval), decisions (approve, edit replacing the steps, reject), step lifecycles with
 * tokens, handoffs, per-layer checkpoints and a final status. Every event passes the contract.
 */
const AGENTS = ['planner', 'coder', 'reviewer', 'tester'];

interface StepPlan {
  stepId: string;
  index: number;
  agentId: string;
  task: string;
  dependsOn: string[];
}

const stepsArb = (prefix: string, min: number, max: number) =>
  fc.integer({ min, max }).chain((n) =>
    fc
      .tuple(
        ...Array.from({ length: n }, (_, i) =>
          fc.record({
            agentId: fc.constantFrom(...AGENTS),
            deps: fc.subarray(
              Array.from({ length: i }, (_, j) => `${prefix}${j}`),
              { maxLength: Math.min(2, i) },
            ),
          }),
        ),
      )
      .map((parts): StepPlan[] =>
        parts.map((p, i) => ({
          stepId: `${prefix}${i}`,
          index: i,
          agentId: p.agentId,
          task: `task ${prefix}${i}`,
          dependsOn: p.deps,
        })),
      ),
  );

type Draft = { type: string; payload: Record<string, unknown> };

/**
 * A step.started, half the time naming an agent (often another than the plan's: the executor
 * reassigned the step), `coder ` among them: not `coder` on any database.
 */
const started = (stepId: string) =>
  fc
    .oneof(fc.constant(undefined), fc.constantFrom(...AGENTS, 'coder '))
    .map((agentId): Draft => ({ type: 'step.started', payload: { stepId, ...(agentId ? { agentId } : {}) } }));

const stepLifecycle = (stepId: string) =>
  fc.oneof(
    fc.constant<Draft[]>([]),
    started(stepId).map((s) => [s]),
    fc
      .record({
        inT: fc.nat(5000),
        outT: fc.nat(5000),
        model: fc.constantFrom('m-small', 'm-large'),
        start: fc.option(started(stepId), { nil: undefined, freq: 2 }),
      })
      .map(({ inT, outT, model, start }): Draft[] => [
        ...(start ? [start] : []),
        {
          type: 'step.completed',
          payload: {
            stepId,
            result: `done ${stepId}`,
            outputContent: `# ${stepId}`,
            inputTokens: inT,
            outputTokens: outT,
            model,
          },
        },
      ]),
    fc
      .tuple(fc.nat(100), started(stepId))
      .map(([t, start]): Draft[] => [
        start,
        { type: 'step.failed', payload: { stepId, error: `error in ${stepId}`, inputTokens: t, outputTokens: 1 } },
      ]),
    fc.constant<Draft[]>([{ type: 'step.skipped', payload: { stepId, reason: 'not needed' } }]),
  );

export const planLifeArb = fc
  .record({
    requiresApproval: fc.boolean(),
    steps: stepsArb('s', 1, 5),
    decision: fc.constantFrom('none', 'approve', 'edit', 'reject'),
    editSteps: stepsArb('e', 1, 4),
    keepOld: fc.boolean(),
    handoffs: fc.nat(3),
    // handoffs recorded before the decision point at the original steps, which an edit may drop
    handoffsEarly: fc.boolean(),
    checkpoints: fc.nat(3),
    final: fc.constantFrom('none', 'completed', 'failed', 'cancelled'),
  })
  .chain((shape) => {
    const finalSteps =
      shape.decision === 'edit'
        ? shape.keepOld
          ? [...shape.steps.slice(0, 1), ...shape.editSteps.map((s) => ({ ...s, index: s.index + 1 }))]
          : shape.editSteps
        : shape.steps;
    const earlyRun =
      shape.decision === 'edit' && shape.keepOld ? stepLifecycle(shape.steps[0].stepId) : fc.constant<Draft[]>([]);
    return fc
      .tuple(earlyRun, fc.tuple(...finalSteps.map((s) => stepLifecycle(s.stepId))))
      .map(([early, lifecycles]) => {
        const drafts: Draft[] = [
          {
            type: 'plan.created',
            payload: {
              query: 'Build something',
              steps: shape.steps,
              requiresApproval: shape.requiresApproval,
              complexity: 3,
            },
          },
        ];
        const handoffs = (steps: typeof finalSteps) =>
          Array.from({ length: shape.handoffs }, (_, i): Draft => {
            const step = steps[i % steps.length];
            return {
              type: 'handoff.recorded',
              payload: {
                handoffId: `h${i}`,
                stepId: step.stepId,
                fromAgentId: 'planner',
                toAgentId: step.agentId,
                reason: 'delegation',
              },
            };
          });
        if (shape.handoffsEarly) drafts.push(...handoffs(shape.steps));
        drafts.push(...early);
        if (shape.decision === 'approve')
          drafts.push({ type: 'plan.decision', payload: { decision: 'approve', decidedBy: 'alice' } });
        if (shape.decision === 'reject')
          drafts.push({ type: 'plan.decision', payload: { decision: 'reject', feedback: 'too complex' } });
        if (shape.decision === 'edit')
          drafts.push({
            type: 'plan.decision',
            payload: { decision: 'edit', steps: finalSteps, feedback: 'reordered' },
          });
        if (shape.decision !== 'reject') for (const l of lifecycles) drafts.push(...l);
        if (!shape.handoffsEarly) drafts.push(...handoffs(finalSteps));
        for (let i = 0; i < shape.checkpoints; i++)
          drafts.push({
            type: 'checkpoint.saved',
            payload: { checkpointId: `c${i}`, layer: i, state: { layer: i, done: [] } },
          });
        if (shape.final !== 'none')
          drafts.push({
            type: 'plan.finalized',
            payload: {
              status: shape.final,
              summary: 'summary',
              ...(shape.final === 'failed' ? { failureReason: 'a step failed' } : {}),
            },
          });
        return drafts;
      });
  });

/**
 * How a plan's events are numbered: from `base`, one more each, except that an event listed in
 * `repeats` takes its predecessor's seq (an executor that restarted its seq: two different events
 * with one seq), and with `createdSwap` plan.created trades seqs with a later event.
 */
export interface SeqLayout {
  base: number;
  repeats: readonly number[];
  createdSwap: number | null;
}

export const IN_ORDER: SeqLayout = { base: 1, repeats: [], createdSwap: null };

export const seqLayoutArb: fc.Arbitrary<SeqLayout> = fc.record({
  base: fc.constantFrom(0, 1, 7),
  repeats: fc.oneof(fc.constant<number[]>([]), fc.array(fc.nat(40), { maxLength: 3 })),
  createdSwap: fc.option(fc.nat(40), { freq: 4 }),
});

export function seqsOf(n: number, layout: SeqLayout): number[] {
  const seqs: number[] = [];
  const repeats = new Set(layout.repeats.map((r) => 1 + (r % Math.max(1, n - 1))));
  for (let i = 0; i < n; i++) seqs.push(i === 0 ? layout.base : seqs[i - 1] + (repeats.has(i) ? 0 : 1));
  if (layout.createdSwap !== null && n > 1) {
    const j = 1 + (layout.createdSwap % (n - 1));
    [seqs[0], seqs[j]] = [seqs[j], seqs[0]];
  }
  return seqs;
}

/** Stamp drafts into contract-valid events of one plan, seq 1..n (or as `layout` says). */
export function toEvents(
  drafts: Draft[],
  planId: string,
  sessionId: string,
  layout: SeqLayout = IN_ORDER,
): PlanEvent[] {
  const seqs = seqsOf(drafts.length, layout);
  return drafts.map((d, i) => {
    const parsed = parsePlanEvent({
      specVersion: 1,
      eventId: randomUUID(),
      type: d.type,
      planId,
      sessionId,
      seq: seqs[i],
      occurredAt: new Date(Date.UTC(2026, 5, 1, 12, 0, 0) + i * 1500).toISOString(),
      payload: d.payload,
    });
    if (!parsed.ok) throw new Error(`generator produced an invalid ${d.type}: ${parsed.error.message}`);
    return parsed.event;
  });
}

/** An arrival schedule: a permutation, some duplicates, cut into batches. */
export const arrivalArb = (n: number) =>
  fc.record({
    order: fc.shuffledSubarray(
      Array.from({ length: n }, (_, i) => i),
      { minLength: n, maxLength: n },
    ),
    duplicates: fc.array(fc.record({ index: fc.nat(n - 1), at: fc.nat(n) }), { maxLength: 4 }),
    cuts: fc.array(fc.integer({ min: 1, max: 6 }), { minLength: 1, maxLength: n + 4 }),
  });

export function schedule<T>(
  items: T[],
  arrival: { order: number[]; duplicates: Array<{ index: number; at: number }>; cuts: number[] },
): T[][] {
  const sequence = arrival.order.map((i) => items[i]);
  for (const d of arrival.duplicates) sequence.splice(Math.min(d.at, sequence.length), 0, items[d.index]);
  const batches: T[][] = [];
  let pos = 0;
  for (let c = 0; pos < sequence.length; c++) {
    const size = arrival.cuts[c % arrival.cuts.length];
    batches.push(sequence.slice(pos, pos + size));
    pos += size;
  }
  return batches;
}

/**
 * A long plan as an executor runs it: plan.created with 50-250 steps (each waiting on the one
 * before), then every step started and completed (a few fail), a handoff now and then, a
 * checkpoint every ten steps, and the end. Several hundred events.
 */
export const longPlanArb = fc
  .record({
    steps: fc.integer({ min: 50, max: 250 }),
    failEvery: fc.integer({ min: 7, max: 40 }),
    handoffEvery: fc.integer({ min: 3, max: 15 }),
  })
  .map(({ steps, failEvery, handoffEvery }): Draft[] => {
    const specs = Array.from({ length: steps }, (_, i) => ({
      stepId: `s${i}`,
      index: i,
      agentId: AGENTS[i % AGENTS.length],
      task: `task ${i}`,
      dependsOn: i ? [`s${i - 1}`] : [],
    }));
    const drafts: Draft[] = [{ type: 'plan.created', payload: { query: 'A long plan', steps: specs } }];
    for (let i = 0; i < steps; i++) {
      if (i % handoffEvery === 0)
        drafts.push({
          type: 'handoff.recorded',
          payload: {
            handoffId: `h${i}`,
            stepId: `s${i}`,
            fromAgentId: 'planner',
            toAgentId: specs[i].agentId,
            reason: 'next',
          },
        });
      drafts.push({ type: 'step.started', payload: { stepId: `s${i}` } });
      if (i % failEvery === failEvery - 1)
        drafts.push({
          type: 'step.failed',
          payload: { stepId: `s${i}`, error: 'boom', inputTokens: i, outputTokens: 1 },
        });
      else
        drafts.push({
          type: 'step.completed',
          payload: { stepId: `s${i}`, result: 'ok', inputTokens: i, outputTokens: 2 * i, model: 'm' },
        });
      if (i % 10 === 9)
        drafts.push({ type: 'checkpoint.saved', payload: { checkpointId: `c${i}`, layer: i, state: { done: i } } });
    }
    drafts.push({ type: 'plan.finalized', payload: { status: 'completed', summary: 'done' } });
    return drafts;
  });

/**
 * How jobs of a long plan reach the store: its events in seq order, cut into jobs of 5-60, some
 * adjacent jobs committed the other way round (concurrent transactions, several workers), and
 * some jobs delivered twice.
 */
export const jobArrivalArb = fc.record({
  sizes: fc.array(fc.integer({ min: 5, max: 60 }), { minLength: 1, maxLength: 20 }),
  swaps: fc.array(fc.nat(100), { maxLength: 12 }),
  redeliveries: fc.array(fc.nat(100), { maxLength: 4 }),
});

export function jobSchedule<T>(
  items: T[],
  arrival: { sizes: number[]; swaps: number[]; redeliveries: number[] },
): T[][] {
  const jobs: T[][] = [];
  for (let pos = 0, j = 0; pos < items.length; j++) {
    const size = arrival.sizes[j % arrival.sizes.length];
    jobs.push(items.slice(pos, pos + size));
    pos += size;
  }
  for (const s of arrival.swaps) {
    const i = s % Math.max(1, jobs.length - 1);
    if (i + 1 < jobs.length) [jobs[i], jobs[i + 1]] = [jobs[i + 1], jobs[i]];
  }
  for (const r of arrival.redeliveries) jobs.push(jobs[r % jobs.length]);
  return jobs;
}
