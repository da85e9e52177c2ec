/**
 * Broken variants of valid events, for the property tests that hold the fast contract check
 * (src/contracts/fast-check) to `parsePlanEvent`: one field of a valid event of any type is set to a
 * tricky value, deleted, or given an extra field.
 *
 *   fc.assert(fc.property(eventMutations(), (input) => ...));
 */
import fc from 'fast-check';
import type { PlanEvent } from '../../src/contracts';
import { planRun } from './event-factory';

/** Valid events of every type, including edits, rejections, failures and checkpoints. */
export const BASE_EVENTS: readonly PlanEvent[] = [
  ...planRun({ seed: 1, steps: 5, requiresApproval: true, edit: true }),
  ...planRun({ seed: 2, steps: 3, requiresApproval: true, reject: true }),
  ...planRun({ seed: 3, steps: 4, failAt: 1 }),
  ...planRun({ seed: 4, steps: 2, requiresApproval: true }),
  forkOfRun(planRun({ seed: 5, steps: 2 })[0]),
];

/** A fork's plan.created: forkOf set, a step depending on one of its parent's. */
function forkOfRun(created: PlanEvent): PlanEvent {
  if (created.type !== 'plan.created') throw new Error('planRun starts with plan.created');
  const [first] = created.payload.steps;
  return {
    ...created,
    payload: {
      ...created.payload,
      steps: [{ ...first, dependsOn: ['parent_step'] }],
      forkOf: { planId: 'plan_parent', kind: 'fork', layer: 1, checkpointId: 'cp_parent' },
    },
  };
}

/** Values near every rule's edges: lengths, formats, ranges, enum members, wrong types, non-JSON values. */
export const TRICKY_VALUES: readonly unknown[] = [
  undefined,
  null,
  '',
  ' ',
  'x',
  'a'.repeat(51),
  'a'.repeat(101),
  'a'.repeat(201),
  'a'.repeat(501),
  '\uFE0F',
  '😀'.repeat(60),
  'not-a-uuid',
  'B0D1E5F2-0000-4000-8000-000000000000',
  '2024-02-30T00:00:00Z',
  '2024-05-01T12:00:00+01:00',
  '2024-05-01T12:00:00+00:00',
  'bad id!',
  '-leading',
  'step.completed',
  'plan.finalized',
  'edit',
  'approve',
  'fork',
  'replay',
  'reject',
  'completed',
  'unknown',
  -1,
  0,
  1,
  1.5,
  100,
  101,
  100_001,
  2 ** 31,
  NaN,
  Infinity,
  true,
  false,
  [],
  {},
  ['s1'],
  ['s1', 's1'],
  ['nope'],
  [1],
  [{}],
  [{ stepId: 's9', index: 9, agentId: 'a', task: 't' }],
  { stepId: 's1' },
  new Date(0),
  () => 1,
  Object.create(null),
];

export type MutationMode = 'set' | 'delete' | 'add';

/** Every field path of an event, nested objects and list items included. */
export function fieldPaths(value: unknown, prefix: (string | number)[] = []): (string | number)[][] {
  if (typeof value !== 'object' || value === null) return [];
  const out: (string | number)[][] = [];
  for (const key of Array.isArray(value) ? value.keys() : Object.keys(value)) {
    const path = [...prefix, key];
    out.push(path, ...fieldPaths((value as Record<string | number, unknown>)[key], path));
  }
  return out;
}

/** A copy of `event` with the field at `path` set, deleted (a hole, in a list) or given an `extraField`. */
export function mutate(
  event: PlanEvent,
  path: (string | number)[],
  value: unknown,
  mode: MutationMode,
): Record<string, unknown> {
  // Not structuredClone: under jest it builds objects of the host realm, whose Object.prototype is
  // not the test's, so the contract refuses every copy at the root ("must be a JSON object") and a
  // comparison of verdicts learns nothing. The events are plain JSON, so JSON copies them exactly.
  const copy = JSON.parse(JSON.stringify(event)) as Record<string, unknown>;
  let target = copy as Record<string | number, unknown>;
  for (const key of path.slice(0, -1)) target = target[key] as Record<string | number, unknown>;
  const last = path[path.length - 1];
  if (mode === 'delete') delete target[last];
  else if (mode === 'add' && typeof target[last] === 'object' && target[last] !== null)
    (target[last] as Record<string, unknown>).extraField = value;
  else target[last] = value;
  return copy;
}

/**
 * One mutation of one valid event, picked from BASE_EVENTS, every field path and `values`.
 * @param values @defaultValue one of TRICKY_VALUES
 */
export function eventMutations(
  values: fc.Arbitrary<unknown> = fc.constantFrom(...TRICKY_VALUES),
): fc.Arbitrary<Record<string, unknown>> {
  return fc
    .record({
      event: fc.constantFrom(...BASE_EVENTS),
      pick: fc.nat(),
      value: values,
      mode: fc.constantFrom<MutationMode>('set', 'delete', 'add'),
    })
    .map(({ event, pick, value, mode }) => {
      const all = fieldPaths(event);
      return mutate(event, all[pick % all.length], value, mode);
    });
}

/** Only JSON values (what the contract's raw-input guard admits, prototype keys aside). */
export function isPlainJson(value: unknown, inArray = false): boolean {
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

/** JSON for a failure message, with what JSON cannot show spelled out. */
export function show(input: unknown): string {
  return JSON.stringify(input, (_k, v: unknown) =>
    v === undefined
      ? '<undefined>'
      : typeof v === 'number' && !Number.isFinite(v)
        ? String(v)
        : typeof v === 'function'
          ? '<function>'
          : v,
  );
}
