/** Builders for plan events in tests: valid by default, each test changes only what it is about. */
import { parsePlanEvent } from '../../src/contracts';
import type { ContractLimits, PayloadByType, PlanEvent, PlanEventTypeName, StepSpec, Violation } from '../../src/contracts';

export const EVENT_ID = '0f8fad5b-d9cb-469f-a165-70867728950e';
export const OCCURRED_AT = '2024-05-01T12:00:00.000Z';

type Plain = Record<string, unknown>;

export function envelope<T extends PlanEventTypeName>(type: T, payload: PayloadByType[T] | Plain, overrides: Plain = {}): Plain {
  return {
    specVersion: 1,
    eventId: EVENT_ID,
    type,
    planId: 'plan_abc123',
    sessionId: 'session_123',
    seq: 7,
    occurredAt: OCCURRED_AT,
    payload,
    ...overrides,
  };
}

export function step(i: number, extra: Partial<StepSpec> | Plain = {}): StepSpec {
  return { stepId: `s${i}`, index: i, agentId: 'researcher', task: `task ${i}`, ...extra } as StepSpec;
}

/** A chain s0 <- s1 <- ... : each step depends on the previous one. */
export function chain(n: number): StepSpec[] {
  return Array.from({ length: n }, (_, i) => step(i, i > 0 ? { dependsOn: [`s${i - 1}`] } : {}));
}

export const completed = (payload: Plain = {}, overrides: Plain = {}): Plain =>
  envelope('step.completed', { stepId: 's1', inputTokens: 10, outputTokens: 20, ...payload }, overrides);

export const created = (payload: Plain = {}): Plain => envelope('plan.created', { query: 'market size of X?', steps: chain(3), ...payload });

export const decision = (payload: Plain): Plain => envelope('plan.decision', payload);

export const checkpoint = (state: unknown): Plain => envelope('checkpoint.saved', { checkpointId: 'cp_1', layer: 0, state } as Plain);

export function accepted(input: unknown, limits?: Partial<ContractLimits>): PlanEvent {
  const result = parsePlanEvent(input, { limits });
  if (!result.ok) throw new Error(`expected a valid event, got: ${result.error.message}`);
  return result.event;
}

export function violationsOf(input: unknown, limits?: Partial<ContractLimits>): Violation[] {
  const result = parsePlanEvent(input, { limits });
  if (result.ok) throw new Error('expected an invalid event, but it was accepted');
  return result.error.violations;
}

/** Violations as [path, message] pairs: what the table rows spell out. */
export const pairs = (input: unknown, limits?: Partial<ContractLimits>): [string, string][] =>
  violationsOf(input, limits).map((v) => [v.path, v.message]);

/** Builds an object nested `depth` levels deep: depth 1 is `{}`. */
export function nested(depth: number): Plain {
  let value: Plain = {};
  for (let i = 1; i < depth; i++) value = { a: value };
  return value;
}
