/**
 * The publisher's fast check mirrors the contract rule for rule (src/contracts/fast-check). This test keeps
 * the mirror honest: the same valid and broken events go through both, and the verdicts and the
 * violation messages must agree. No Redis needed: these are pure functions.
 */
import fc from 'fast-check';
import { DEFAULT_LIMITS, parsePlanEvent, PlanEvent } from '../../src/contracts';
import { checkEventInput } from '../../src/contracts/fast-check/event-rules';
import { EventStamper } from '../../src/publisher/event-stamper';
import { BASE_EVENTS, eventMutations, isPlainJson, show, TRICKY_VALUES } from '../support/event-mutations';
import {
  LONE_SURROGATE_VALUES,
  loneSurrogateVariants,
  NUL_VALUES,
  nulVariants,
  TIMESTAMP_EDGE_VALUES,
} from '../contracts/plan-event.fixtures';

/** What publish() decides, minus the queueing: the fast check, then the byte limit after stamping. */
function fastVerdict(input: Record<string, unknown>): string[] {
  const out: { path: string; message: string }[] = [];
  checkEventInput(input, { limits: DEFAULT_LIMITS, out });
  if (out.length > 0) return messages(out);
  const json = JSON.stringify(new EventStamper(10).stamp(input));
  return Buffer.byteLength(json) > DEFAULT_LIMITS.maxEventBytes
    ? [`(root) must be at most ${DEFAULT_LIMITS.maxEventBytes} bytes of UTF-8 JSON`]
    : [];
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

const BASE = BASE_EVENTS;

describe('fast publish check agrees with parsePlanEvent', () => {
  it('accepts every valid event', () => {
    for (const event of BASE) expect(fastVerdict(event as unknown as Record<string, unknown>)).toEqual([]);
  });

  it('agrees on random mutations of valid events (verdict and every violation message)', () => {
    const seen = { notJson: 0, accepted: 0, rejected: 0 };
    fc.assert(
      fc.property(
        eventMutations(
          fc.constantFrom(...TRICKY_VALUES, ...NUL_VALUES, ...LONE_SURROGATE_VALUES, ...TIMESTAMP_EDGE_VALUES),
        ),
        (input) => {
          const fast = fastVerdict(input);
          const contract = contractVerdict(input);
          // Non-JSON values included: on a refusal the fast check defers to the raw-input guard, as the contract does.
          if (JSON.stringify(fast) !== JSON.stringify(contract))
            throw new Error(`fast ${JSON.stringify(fast)} vs contract ${JSON.stringify(contract)} for ${show(input)}`);
          if (!isPlainJson(input)) seen.notJson++;
          if (contract.length === 0) seen.accepted++;
          else seen.rejected++;
        },
      ),
      { numRuns: 4_000, seed: 42 },
    );
    // Guards against a vacuous run (as when every mutant was refused at the root for a test artefact).
    expect(seen.notJson).toBeGreaterThan(150);
    expect(seen.accepted).toBeGreaterThan(400);
    expect(seen.rejected).toBeGreaterThan(2_000);
  });

  it("agrees on a NUL character (U+0000) in any string or key: the contract's one violation, at its path", () => {
    let variants = 0;
    for (const event of BASE) {
      for (const { input, expected } of nulVariants(event)) {
        expect(fastVerdict(input)).toEqual([expected.message]);
        // A key beside the envelope fields is not in the stamped event the contract gets to see.
        if (!expected.path.startsWith('[')) expect(contractVerdict(input)).toEqual([expected.message]);
        variants++;
      }
    }
    expect(variants).toBeGreaterThan(300);
  });

  it("agrees on a lone UTF-16 surrogate, high or low, in any string or key: the contract's one violation, at its path", () => {
    let variants = 0;
    for (const event of BASE) {
      for (const low of [false, true]) {
        for (const { input, expected } of loneSurrogateVariants(event, low)) {
          expect(fastVerdict(input)).toEqual([expected.message]);
          if (!expected.path.startsWith('[')) expect(contractVerdict(input)).toEqual([expected.message]);
          variants++;
        }
      }
    }
    expect(variants).toBeGreaterThan(600);
  });

  it('agrees on occurredAt at and past the range every database stores, naming the field and the range', () => {
    const range =
      'occurredAt must be between 1000-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z, the range every supported database stores alike';
    const verdicts = new Map<string, string[]>();
    for (const event of BASE) {
      for (const occurredAt of TIMESTAMP_EDGE_VALUES) {
        const input = { ...(event as unknown as Record<string, unknown>), occurredAt };
        expect(fastVerdict(input)).toEqual(contractVerdict(input));
        verdicts.set(occurredAt, fastVerdict(input));
      }
    }
    expect(verdicts.get('1000-01-01T00:00:00.000Z')).toEqual([]);
    expect(verdicts.get('9999-12-31T23:59:59.999999999+00:00')).toEqual([]);
    expect(verdicts.get('0999-12-31T23:59:59.999Z')).toEqual([range]);
    expect(verdicts.get('0000-01-01T00:00:00Z')).toEqual([range]);
  });

  it('agrees on the guard rules of opaque checkpoint state and on size', () => {
    const checkpoint = BASE.find((e) => e.type === 'checkpoint.saved')!;
    let deep: Record<string, unknown> = {};
    const root = deep;
    for (let i = 0; i < DEFAULT_LIMITS.maxStateDepth; i++) deep = (deep.next = {}) as Record<string, unknown>;
    const states: unknown[] = [
      JSON.parse('{"__proto__": {"polluted": true}}'),
      { constructor: 1 },
      { 'k\u0000': 1 },
      { nested: [{ text: 'a\u0000' }] },
      { 'k\uD800': 1 },
      { nested: [{ text: 'a\uDC00' }], ok: '\u{1F600}' },
      { '\uD83D\uDE00': ['\uD83D\uDE00'] },
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
      [
        { ...steps[0], dependsOn: [steps[1].stepId] },
        { ...steps[1], dependsOn: [steps[0].stepId] },
      ],
      Array.from({ length: DEFAULT_LIMITS.maxSteps + 1 }, (_, i) => ({
        stepId: `s${i}`,
        index: i,
        agentId: 'a',
        task: 't',
      })),
    ];
    for (const list of variants) {
      const input = { ...created, payload: { ...created.payload, steps: list } } as unknown as Record<string, unknown>;
      expect(fastVerdict(input)).toEqual(contractVerdict(input));
    }
    const decision = { ...created, type: 'plan.decision' };
    for (const payload of [
      { decision: 'edit' },
      { decision: 'edit', steps: [] },
      { decision: 'approve', steps },
      { decision: 'reject' },
    ]) {
      const input = { ...decision, payload } as unknown as Record<string, unknown>;
      expect(fastVerdict(input)).toEqual(contractVerdict(input));
    }
  });
});
