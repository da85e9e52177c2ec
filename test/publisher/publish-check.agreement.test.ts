/**
 * The publisher's fast check mirrors the contract rule for rule (src/contracts/fast-check). This test keeps
 * the mirror honest: the same valid and broken events go through both, and the verdicts and the
 * violation messages must agree. No Redis needed: these are pure functions.
 */
import fc from 'fast-check';
import { DEFAULT_LIMITS, parsePlanEvent, PlanEvent } from '../../src/contracts';
import { EventStamper } from '../../src/publisher/event-stamper';
import { checkEventInput } from '../../src/contracts/fast-check/event-rules';
import { planRun } from '../support/event-factory';

/** What publish() decides, minus the queueing: the fast check, then the byte limit after stamping. */
function fastVerdict(input: Record<string, unknown>): string[] {
  const out: { path: string; message: string }[] = [];
  checkEventInput(input, { limits: DEFAULT_LIMITS, out });
  if (out.length > 0) return messages(out);
  const json = JSON.stringify(new EventStamper(10).stamp(input));
  return Buffer.byteLength(json) > DEFAULT_LIMITS.maxEventBytes ? [`(root) must be at most ${DEFAULT_LIMITS.maxEventBytes} bytes of UTF-8 JSON`] : [];
}

function contractVerdict(input: Record<string, unknown>): string[] {
  const stamped = new EventStamper(10).stamp(input);
  const result = parsePlanEvent(stamped);
  return result.ok ? [] : messages(result.error.violations);
}

/** Violation messages (each names its path), sorted: the order of reports is not part of the contract. */
function messages(violations: readonly { message: string }[]): string[] {
  return [...new Set(violations.map((v) => v.message))].sort();
}

/** Valid events of every type, including edits, rejections, failures and checkpoints. */
const BASE: PlanEvent[] = [
  ...planRun({ seed: 1, steps: 5, requiresApproval: true, edit: true }),
  ...planRun({ seed: 2, steps: 3, requiresApproval: true, reject: true }),
  ...planRun({ seed: 3, steps: 4, failAt: 1 }),
  ...planRun({ seed: 4, steps: 2, requiresApproval: true }),
];

const TRICKY_VALUES: unknown[] = [
  undefined, null, '', ' ', 'x', 'a'.repeat(51), 'a'.repeat(101), 'a'.repeat(201), 'a'.repeat(501), '\uFE0F', '😀'.repeat(60),
  'not-a-uuid', 'B0D1E5F2-0000-4000-8000-000000000000', '2024-02-30T00:00:00Z', '2024-05-01T12:00:00+01:00', '2024-05-01T12:00:00+00:00',
  'bad id!', '-leading', 'step.completed', 'plan.finalized', 'edit', 'approve', 'reject', 'completed', 'unknown',
  -1, 0, 1, 1.5, 100, 101, 100_001, 2 ** 31, NaN, Infinity, true, false, [], {}, ['s1'], ['s1', 's1'], ['nope'], [1], [{}],
  [{ stepId: 's9', index: 9, agentId: 'a', task: 't' }], { stepId: 's1' }, new Date(0), () => 1, Object.create(null),
];

/** Every field path of an event, nested objects and list items included. */
function fieldPaths(value: unknown, prefix: (string | number)[] = []): (string | number)[][] {
  if (typeof value !== 'object' || value === null) return [];
  const out: (string | number)[][] = [];
  for (const key of Array.isArray(value) ? value.keys() : Object.keys(value)) {
    const path = [...prefix, key];
    out.push(path, ...fieldPaths((value as Record<string | number, unknown>)[key], path));
  }
  return out;
}

/** Only JSON values (what the contract's raw-input guard admits, prototype keys aside). */
function isPlainJson(value: unknown, inArray = false): boolean {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return true;
    case 'number':
      return Number.isFinite(value);
    case 'undefined':
      return !inArray;
    case 'object': {
      if (value === null) return true;
      if (Array.isArray(value)) return [...value.keys()].every((i) => isPlainJson(value[i], true));
      const proto: unknown = Object.getPrototypeOf(value);
      return (proto === Object.prototype || proto === null) && Object.values(value).every((v) => isPlainJson(v));
    }
    default:
      return false;
  }
}

function show(input: unknown): string {
  return JSON.stringify(input, (_k, v: unknown) => (v === undefined ? '<undefined>' : typeof v === 'number' && !Number.isFinite(v) ? String(v) : typeof v === 'function' ? '<function>' : v));
}

function mutate(event: PlanEvent, path: (string | number)[], value: unknown, mode: 'set' | 'delete' | 'add'): Record<string, unknown> {
  const copy = structuredClone(event) as unknown as Record<string, unknown>;
  let target = copy as Record<string | number, unknown>;
  for (const key of path.slice(0, -1)) target = target[key] as Record<string | number, unknown>;
  const last = path[path.length - 1];
  if (mode === 'delete') delete target[last];
  else if (mode === 'add' && typeof target[last] === 'object' && target[last] !== null) (target[last] as Record<string, unknown>).extraField = value;
  else target[last] = value;
  return copy;
}

describe('fast publish check agrees with parsePlanEvent', () => {
  it('accepts every valid event', () => {
    for (const event of BASE) expect(fastVerdict(event as unknown as Record<string, unknown>)).toEqual([]);
  });

  it('agrees on random mutations of valid events (verdict and every violation message)', () => {
    const mutation = fc
      .record({ event: fc.constantFrom(...BASE), pick: fc.nat(), value: fc.constantFrom(...TRICKY_VALUES), mode: fc.constantFrom('set', 'delete', 'add') })
      .map(({ event, pick, value, mode }) => {
        const all = fieldPaths(event);
        return mutate(event, all[pick % all.length], value, mode as 'set' | 'delete' | 'add');
      });
    fc.assert(
      fc.property(mutation, (input) => {
        const fast = fastVerdict(input);
        const contract = contractVerdict(input);
        // The contract's raw-input guard stops at non-JSON values and reports only those: compare messages on JSON input.
        const agree = isPlainJson(input) ? JSON.stringify(fast) === JSON.stringify(contract) : (fast.length === 0) === (contract.length === 0);
        if (!agree) throw new Error(`fast ${JSON.stringify(fast)} vs contract ${JSON.stringify(contract)} for ${show(input)}`);
      }),
      { numRuns: 4_000, seed: 42 },
    );
  });

  it('agrees on the guard rules of opaque checkpoint state and on size', () => {
    const checkpoint = BASE.find((e) => e.type === 'checkpoint.saved')!;
    let deep: Record<string, unknown> = {};
    const root = deep;
    for (let i = 0; i < DEFAULT_LIMITS.maxStateDepth; i++) deep = (deep.next = {}) as Record<string, unknown>;
    const states: unknown[] = [
      JSON.parse('{"__proto__": {"polluted": true}}'),
      { constructor: 1 },
      { nested: { toString: 'x' } },
      { list: [1, undefined, 3] },
      { when: new Date(0) },
      { n: NaN },
      { big: 'x'.repeat(DEFAULT_LIMITS.maxEventBytes) },
      root,
      { ok: { deep: [[[{}]]] } },
    ];
    for (const state of states) {
      const input = { ...checkpoint, payload: { ...checkpoint.payload, state } } as unknown as Record<string, unknown>;
      expect(fastVerdict(input)).toEqual(contractVerdict(input));
    }
  });

  it('agrees on step-graph rules (duplicates, unknown dependencies, cycles) and decision rules', () => {
    const created = BASE.find((e) => e.type === 'plan.created')! as Extract<PlanEvent, { type: 'plan.created' }>;
    const steps = created.payload.steps;
    const variants: unknown[] = [
      [...steps, { ...steps[0] }],
      [{ ...steps[0], dependsOn: ['ghost'] }, ...steps.slice(1)],
      [{ ...steps[0], dependsOn: [steps[1].stepId] }, { ...steps[1], dependsOn: [steps[0].stepId] }],
      Array.from({ length: DEFAULT_LIMITS.maxSteps + 1 }, (_, i) => ({ stepId: `s${i}`, index: i, agentId: 'a', task: 't' })),
    ];
    for (const list of variants) {
      const input = { ...created, payload: { ...created.payload, steps: list } } as unknown as Record<string, unknown>;
      expect(fastVerdict(input)).toEqual(contractVerdict(input));
    }
    const decision = { ...created, type: 'plan.decision' };
    for (const payload of [{ decision: 'edit' }, { decision: 'edit', steps: [] }, { decision: 'approve', steps }, { decision: 'reject' }]) {
      const input = { ...decision, payload } as unknown as Record<string, unknown>;
      expect(fastVerdict(input)).toEqual(contractVerdict(input));
    }
  });
});
