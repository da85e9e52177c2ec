/** Builders for plan events in tests: valid by default, each test changes only what it is about. */
import { parsePlanEvent } from '../../src/contracts';
import type {
  ContractLimits,
  PayloadByType,
  PlanEvent,
  PlanEventTypeName,
  StepSpec,
  Violation,
} from '../../src/contracts';

export const EVENT_ID = '0f8fad5b-d9cb-469f-a165-70867728950e';
export const OCCURRED_AT = '2024-05-01T12:00:00.000Z';

type Plain = Record<string, unknown>;

export function envelope<T extends PlanEventTypeName>(
  type: T,
  payload: PayloadByType[T] | Plain,
  overrides: Plain = {},
): Plain {
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

export const created = (payload: Plain = {}): Plain =>
  envelope('plan.created', { query: 'market size of X?', steps: chain(3), ...payload });

export const decision = (payload: Plain): Plain => envelope('plan.decision', payload);

export const checkpoint = (state: unknown): Plain =>
  envelope('checkpoint.saved', { checkpointId: 'cp_1', layer: 0, state } as Plain);

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

/** What the contract says of a string, or a key, holding U+0000 (PostgreSQL cannot store it). */
export const nulViolation = (path: string): Violation => ({
  path,
  message: `${path} must not contain the NUL character (U+0000): PostgreSQL cannot store it`,
});
export const nulKeyViolation = (path: string): Violation => ({
  path,
  message: `${path} is a forbidden key (it contains the NUL character, U+0000, which PostgreSQL cannot store)`,
});

/**
 * Values carrying U+0000 for the mutation tests: alone, inside an id, past a length limit (the NUL
 * is reported, not the length), as a list item, as a key, deep in an object.
 */
export const NUL_VALUES: readonly unknown[] = [
  '\u0000',
  'a\u0000b',
  's1\u0000',
  `${'x'.repeat(600)}\u0000`,
  ['s1', 's\u00002'],
  { 'k\u0000': 1 },
  { deep: [{ v: 'x\u0000' }] },
];

/**
 * Values carrying a lone UTF-16 surrogate for the mutation tests: a high one alone, a low one
 * inside text, each half of an emoji without the other, a pair in the wrong order, a list item, a
 * key, deep in an object.
 */
export const LONE_SURROGATE_VALUES: readonly unknown[] = [
  '\uD800',
  'a\uDC00b',
  'smile \uD83D',
  '\uDE00 smile',
  '\uDE00\uD83D',
  `${'x'.repeat(600)}\uDBFF`,
  ['s1', 's\uDFFF2'],
  { 'k\uD800': 1 },
  { deep: [{ v: 'x\uDC00' }] },
];

/** Timestamps at and past the edges of the range every database stores (1000-01-01 to 9999-12-31). */
export const TIMESTAMP_EDGE_VALUES: readonly string[] = [
  '1000-01-01T00:00:00.000Z',
  '1000-01-01T00:00:00+00:00',
  '9999-12-31T23:59:59.999Z',
  '9999-12-31T23:59:59.999999999+00:00',
  '0999-12-31T23:59:59.999Z',
  '0000-01-01T00:00:00Z',
  '0000-02-29T00:00:00Z',
  '10000-01-01T00:00:00Z',
  '+010000-01-01T00:00:00.000Z',
  '-000001-01-01T00:00:00.000Z',
];

/**
 * The violations of a variant but those of the step graph: a step whose id changed leaves the steps
 * depending on it naming an unknown step, which the contract names too.
 */
export const besidesTheGraph = (violations: readonly Violation[]): Violation[] =>
  violations.filter((v) => !/must name a step of the same list$/.test(v.message));

/** What the contract says of a string, or a key, holding a lone surrogate. */
export const surrogateViolation = (path: string): Violation => ({
  path,
  message: `${path} must not contain a lone UTF-16 surrogate (U+D800-U+DFFF without its pair): databases store it differently`,
});
export const surrogateKeyViolation = (path: string): Violation => ({
  path,
  message: `${path} is a forbidden key (it contains a lone UTF-16 surrogate, U+D800-U+DFFF without its pair, which databases store differently)`,
});

/**
 * Every way to put U+0000 into a valid `event` once: appended to each string (envelope fields,
 * payload fields, list items, checkpoint state at any depth) and as a new key of each object. Each
 * variant comes with the violations the contract must report: the NUL at its path (the first of
 * that field); a key outside checkpoint state is not a field name, so it is refused as unknown; a
 * dependsOn item also breaks its list's rule (only external ids).
 */
export function nulVariants(event: PlanEvent): { input: Plain; expected: Violation[] }[] {
  return badTextVariants(event, '\u0000', nulViolation, nulKeyViolation);
}

/** The same with a lone surrogate: `low` appends a low surrogate, else a high one. */
export function loneSurrogateVariants(event: PlanEvent, low = false): { input: Plain; expected: Violation[] }[] {
  return badTextVariants(event, low ? '\uDC00' : '\uD800', surrogateViolation, surrogateKeyViolation);
}

function badTextVariants(
  event: PlanEvent,
  bad: string,
  inText: (path: string) => Violation,
  inKey: (path: string) => Violation,
): { input: Plain; expected: Violation[] }[] {
  const key = `k${bad}`;
  const keyInPath = `[${JSON.stringify(key)}]`;
  const variants: { input: Plain; expected: Violation[] }[] = [];
  const walk = (value: unknown, keys: (string | number)[]): void => {
    if (typeof value === 'string') {
      const expected = [inText(pathOf(keys))];
      if (keys[keys.length - 2] === 'dependsOn') {
        const list = pathOf(keys.slice(0, -1));
        expected.push({ path: list, message: `${list} must contain only external ids` });
      }
      variants.push({ input: setAt(event, keys, `${value}${bad}`), expected });
    } else if (Array.isArray(value)) {
      value.forEach((item, i) => walk(item, [...keys, i]));
    } else if (typeof value === 'object' && value !== null) {
      const copy = setAt(event, keys, { ...(value as Plain), [key]: 'x' });
      const path = `${pathOf(keys)}${keyInPath}`;
      const inState = keys[0] === 'payload' && keys[1] === 'state';
      variants.push({
        input: copy,
        expected: [inState ? inKey(path) : { path, message: `${path} is not an allowed field` }],
      });
      for (const [k, child] of Object.entries(value)) walk(child, [...keys, k]);
    }
  };
  walk(event, []);
  return variants;
}

function setAt(event: PlanEvent, keys: (string | number)[], value: unknown): Plain {
  const copy = JSON.parse(JSON.stringify(event)) as Plain;
  if (keys.length === 0) return value as Plain;
  let target = copy as Record<string | number, unknown>;
  for (const key of keys.slice(0, -1)) target = target[key] as Record<string | number, unknown>;
  target[keys[keys.length - 1]] = value;
  return copy;
}

/** The event's own keys are identifiers: `payload.steps[1].dependsOn[0]`. */
function pathOf(keys: (string | number)[]): string {
  return keys.reduce<string>(
    (path, key) => (typeof key === 'number' ? `${path}[${key}]` : path === '' ? key : `${path}.${key}`),
    '',
  );
}
