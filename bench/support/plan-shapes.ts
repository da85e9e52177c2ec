/**
 * Plan shapes of the store scenarios, every event valid against the contract unless
 * noted:
 * - `tenEventPlan`: a short plan of exactly 10 events (3 steps, a handoff, a checkpoint, finalized);
 * - `roundRobin`: many such plans published event 0 of every plan, then event 1 of every plan, ...;
 * - `longPlan`: one plan of N steps in layers of 10 (~2.1 events per step). Its plan.created holds
 *   more steps than the contract's default `maxSteps` (500) and is only for the store, which does
 *   not validate; each of its step and checkpoint events is individually valid.
 * Inputs (`PlanEventInput`) carry `seq` and leave `eventId`/`occurredAt` to the publisher; full
 * events (`PlanEvent`) are for `PlanEventStore.persist`, which needs every stamp.
 */
import type { PlanEvent, PlanEventInput, StepSpec } from '../../src/contracts';
import { eventIdV7 } from '../../src/publisher/event-id';
import { rng, stableUuid, stepList } from '../../test/support/event-factory';

const AGENTS = ['planner', 'researcher', 'coder', 'reviewer'];
const MODELS = ['gpt-4o', 'claude-sonnet-4', 'llama-3.1-70b'];

/** The 10 events of one short plan, in seq order (seq 0-9), without eventId/occurredAt. */
export function tenEventPlan(planId: string, sessionId: string, seed: number): PlanEventInput[] {
  const random = rng(seed);
  const agents = [AGENTS[seed % 4], AGENTS[(seed + 1) % 4], AGENTS[(seed + 2) % 4]];
  // s1 and s2 form layer 0, s3 (depending on both) layer 1
  const steps = stepList(3, agents);
  const tokens = () => ({
    inputTokens: 100 + Math.floor(random() * 900),
    outputTokens: 50 + Math.floor(random() * 450),
    model: MODELS[seed % 3],
  });
  const done = (s: StepSpec) => ({
    stepId: s.stepId,
    result: `done: ${s.task}`,
    outputContent: `# ${s.title}\n\nOutput of ${s.task}.`,
    ...tokens(),
  });
  const base = { planId, sessionId };
  const events: PlanEventInput[] = [
    {
      ...base,
      type: 'plan.created',
      payload: {
        query: `Plan ${planId}: research and implement feature ${seed}`,
        steps,
        requiresApproval: false,
        complexity: 1 + (seed % 5),
      },
    },
    { ...base, type: 'step.started', payload: { stepId: 's1', agentId: agents[0] } },
    { ...base, type: 'step.completed', payload: done(steps[0]) },
    {
      ...base,
      type: 'handoff.recorded',
      payload: {
        handoffId: 'h1',
        stepId: 's2',
        fromAgentId: agents[0],
        toAgentId: agents[1],
        reason: 'next step',
        explanation: `${agents[1]} owns Step 2`,
      },
    },
    { ...base, type: 'step.started', payload: { stepId: 's2', agentId: agents[1] } },
    { ...base, type: 'step.completed', payload: done(steps[1]) },
    {
      ...base,
      type: 'checkpoint.saved',
      payload: { checkpointId: 'cp0', layer: 0, state: { completed: ['s1', 's2'], layer: 0 } },
    },
    { ...base, type: 'step.started', payload: { stepId: 's3', agentId: agents[2] } },
    { ...base, type: 'step.completed', payload: done(steps[2]) },
    { ...base, type: 'plan.finalized', payload: { status: 'completed', summary: 'All 3 steps done' } },
  ];
  return events.map((e, seq) => ({ ...e, seq }) as PlanEventInput);
}

/** Plan ids of a scenario: `<tag>-<n>`, sessions shared by 5 plans each. */
export const shortPlanId = (tag: string, n: number) => `${tag}-${n}`;
const sessionOf = (tag: string, n: number) => `${tag}-sess-${Math.floor(n / 5)}`;

/**
 * `plans` short plans (plan numbers `first`..), ordered round-robin: event 0 of every plan, then
 * event 1 of every plan, and so on.
 */
export function roundRobin(tag: string, plans: number, seed: number, first = 0): PlanEventInput[] {
  const perPlan = Array.from({ length: plans }, (_, i) =>
    tenEventPlan(shortPlanId(tag, first + i), sessionOf(tag, first + i), seed * 1_000_003 + first + i),
  );
  const out: PlanEventInput[] = [];
  for (let k = 0; k < 10; k++) for (const events of perPlan) out.push(events[k]);
  return out;
}

/**
 * Events with the ids the publisher would stamp (version 7, in this order), for the runs whose
 * events come with the factory's hashed ids: the baselines and the store-level grouped run insert
 * the same kind of ids as the publisher-fed runs they are compared with.
 */
export function withPublisherIds<T extends { eventId: string }>(events: T[]): T[] {
  return events.map((e) => ({ ...e, eventId: eventIdV7() }));
}

/** Stamps inputs as the publisher would (eventId, occurredAt), for store-level runs. */
export function stamped(inputs: PlanEventInput[], startAt = Date.parse('2026-02-02T09:00:00Z')): PlanEvent[] {
  return inputs.map(
    (e, i) =>
      ({ specVersion: 1, eventId: eventIdV7(), occurredAt: new Date(startAt + i).toISOString(), ...e }) as PlanEvent,
  );
}

/** Steps per DAG layer of the long plan: each step depends on the same position of the previous layer. */
const LAYER = 10;

/** A long plan's steps: `count` steps in layers of 10, one dependency each. Linear time. */
export function longStepList(count: number): StepSpec[] {
  const steps: StepSpec[] = [];
  for (let i = 0; i < count; i++) {
    steps.push({
      stepId: `s${i + 1}`,
      index: i,
      agentId: AGENTS[i % 4],
      task: `Work item ${i + 1}`,
      ...(i >= LAYER ? { dependsOn: [`s${i + 1 - LAYER}`] } : {}),
    });
  }
  return steps;
}

/**
 * Every event of one plan of `steps` steps, in seq order: plan.created, then per layer of 10 steps
 * a started/completed pair per step and a checkpoint, then plan.finalized. 10,000 steps give
 * 21,002 events (1,000 of them checkpoints).
 */
export function longPlan(planId: string, steps: number, startAt = Date.parse('2026-03-03T09:00:00Z')): PlanEvent[] {
  const sessionId = `${planId}-sess`;
  const specs = longStepList(steps);
  const events: PlanEvent[] = [];
  const emit = (type: PlanEvent['type'], payload: PlanEvent['payload']) => {
    const seq = events.length;
    events.push({
      specVersion: 1,
      eventId: stableUuid(`${planId}#${seq}`),
      type,
      planId,
      sessionId,
      seq,
      occurredAt: new Date(startAt + seq * 1000).toISOString(),
      payload,
    } as PlanEvent);
  };
  emit('plan.created', { query: `Long plan ${planId}: ${steps} steps`, steps: specs, requiresApproval: false });
  for (let layer = 0; layer * LAYER < steps; layer++) {
    const inLayer = specs.slice(layer * LAYER, (layer + 1) * LAYER);
    for (const s of inLayer) {
      emit('step.started', { stepId: s.stepId, agentId: s.agentId });
      emit('step.completed', {
        stepId: s.stepId,
        result: `done: ${s.task}`,
        outputContent: `Output of ${s.task}.`,
        inputTokens: 200 + (s.index % 500),
        outputTokens: 80 + (s.index % 300),
        model: MODELS[s.index % 3],
      });
    }
    emit('checkpoint.saved', {
      checkpointId: `cp${layer}`,
      layer,
      state: { completed: inLayer.map((s) => s.stepId), layer },
    });
  }
  emit('plan.finalized', { status: 'completed', summary: `All ${steps} steps done` });
  return events;
}

/** A stored event back to a publisher input with its seq (the publisher stamps a new id and time). */
export function asInput(e: PlanEvent): PlanEventInput {
  const { eventId: _id, occurredAt: _at, specVersion: _v, ...rest } = e;
  return rest as PlanEventInput;
}
