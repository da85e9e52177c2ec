/**
 * `checkStoredEvent` is the worker's check: it must return exactly what `parsePlanEvent` returns
 * (same event, same violations) for every input, while deciding valid events on the fast rules
 * alone. Each comparison below goes through both; the spy proves the fast path did the accepting.
 */
import fc from 'fast-check';
import { checkStoredEvent, DEFAULT_LIMITS, parsePlanEvent } from '../../src/contracts';
import type { ContractLimits, ParsePlanEventOptions, ParseResult, PlanEvent } from '../../src/contracts';
import { isUtcTimestamp } from '../../src/contracts/field-formats';
import * as parseModule from '../../src/contracts/parse-plan-event';
import { toIsoString } from '../../src/contracts/parse-plan-event';
import { manyPlanRuns } from '../support/event-factory';
import { BASE_EVENTS, eventMutations, fieldPaths, show, TRICKY_VALUES } from '../support/event-mutations';
import {
  besidesTheGraph,
  LONE_SURROGATE_VALUES,
  loneSurrogateVariants,
  NUL_VALUES,
  nulVariants,
  TIMESTAMP_EDGE_VALUES,
} from './plan-event.fixtures';

type Plain = Record<string, unknown>;

/** A result as data: the error's class, message and violations, or the accepted event. */
function summary(result: ParseResult): unknown {
  return result.ok
    ? { ok: true, event: result.event }
    : {
        ok: false,
        name: result.error.name,
        permanent: result.error.permanent,
        message: result.error.message,
        violations: result.error.violations,
      };
}

let authority: jest.SpyInstance;
beforeEach(() => {
  authority = jest.spyOn(parseModule, 'parsePlanEvent');
});
afterEach(() => authority.mockRestore());

interface Outcome {
  accepted: boolean;
  /** checkStoredEvent decided without calling parsePlanEvent. */
  fast: boolean;
}

/** `show`, or a marker for an input that cannot even be read (a throwing getter). */
function snapshot(input: unknown): string {
  try {
    return show(input);
  } catch {
    return '<unreadable>';
  }
}

/** Runs both on the same `input` and compares; checkStoredEvent must leave the input as it found it. */
function compare(input: unknown, options?: ParsePlanEventOptions): Outcome {
  const before = snapshot(input);
  const calls = authority.mock.calls.length;
  const stored = checkStoredEvent(input, options);
  const fast = authority.mock.calls.length === calls;
  expect(snapshot(input)).toBe(before);
  const expected = parsePlanEvent(input, options);
  // The text comparison also holds key order (it shows in any JSON written from the event);
  // toStrictEqual adds what JSON cannot show (-0, undefined, prototypes).
  const same = JSON.stringify(summary(stored)) === JSON.stringify(summary(expected));
  if (!same)
    throw new Error(
      `checkStoredEvent ${JSON.stringify(summary(stored))}\n  vs parsePlanEvent ${JSON.stringify(summary(expected))}\n  for ${before.slice(0, 2_000)}`,
    );
  expect(summary(stored)).toStrictEqual(summary(expected));
  return { accepted: expected.ok, fast };
}

/** The three forms the worker may see: the object, its JSON round trip (what BullMQ hands over), the text. */
function forms(input: Plain): unknown[] {
  let text: string | undefined;
  try {
    text = JSON.stringify(input);
  } catch {
    return [input];
  }
  return [input, JSON.parse(text) as unknown, text];
}

describe('checkStoredEvent agrees with parsePlanEvent', () => {
  it('accepts every valid event of every type on the fast path, normalised as parsePlanEvent does', () => {
    expect(new Set(BASE_EVENTS.map((e) => e.type)).size).toBe(9);
    for (const event of [...BASE_EVENTS, ...manyPlanRuns(500, { seed: 5 })]) {
      for (const input of forms(event as unknown as Plain))
        expect(compare(input)).toEqual({ accepted: true, fast: true });
    }
  });

  it('agrees on random mutations of valid events, as objects, JSON round trips and JSON text', () => {
    const seen = { accepted: 0, acceptedFast: 0, rejected: 0 };
    fc.assert(
      fc.property(
        eventMutations(
          fc.constantFrom(...TRICKY_VALUES, ...NUL_VALUES, ...LONE_SURROGATE_VALUES, ...TIMESTAMP_EDGE_VALUES),
        ),
        (mutant) => {
          for (const input of forms(mutant)) {
            const { accepted, fast } = compare(input);
            if (!accepted) seen.rejected++;
            else if (fast) seen.acceptedFast++;
            else seen.accepted++;
          }
        },
      ),
      { numRuns: 2_000, seed: 7 },
    );
    // Every valid mutant went the fast way (a stricter mirror would still be correct, only slow),
    // and the run saw plenty of both verdicts.
    expect(seen.accepted).toBe(0);
    expect(seen.acceptedFast).toBeGreaterThan(800);
    expect(seen.rejected).toBeGreaterThan(3_000);
  });

  it('agrees on mutations to arbitrary JSON values (their strings and keys of any ASCII, NUL included)', () => {
    let rejected = 0;
    fc.assert(
      fc.property(eventMutations(fc.jsonValue({ maxDepth: 3, stringUnit: 'binary-ascii' })), (mutant) => {
        for (const input of forms(mutant)) if (!compare(input).accepted) rejected++;
      }),
      { numRuns: 1_000, seed: 9 },
    );
    expect(rejected).toBeGreaterThan(1_500);
  });

  it('agrees on a NUL character (U+0000) in any string or key, reporting it at its path with what else it breaks', () => {
    let variants = 0;
    for (const event of BASE_EVENTS) {
      for (const { input, expected } of nulVariants(event)) {
        for (const form of forms(input)) expect(compare(form).accepted).toBe(false);
        const result = checkStoredEvent(input);
        expect(!result.ok && besidesTheGraph(result.error.violations)).toEqual(expected);
        variants++;
      }
    }
    expect(variants).toBeGreaterThan(300);
  });

  it('agrees on a lone UTF-16 surrogate, high or low, in any string or key, reporting it at its path with what else it breaks', () => {
    let variants = 0;
    for (const event of BASE_EVENTS) {
      for (const low of [false, true]) {
        for (const { input, expected } of loneSurrogateVariants(event, low)) {
          // the three forms for high ones; the verdict alone for low ones (the same code decides)
          if (!low) for (const form of forms(input)) expect(compare(form).accepted).toBe(false);
          const result = checkStoredEvent(input);
          expect(!result.ok && besidesTheGraph(result.error.violations)).toEqual(expected);
          variants++;
        }
      }
    }
    expect(variants).toBeGreaterThan(600);
  });

  it('agrees on mutations to arbitrary JSON values of any UTF-16 units, lone surrogates and pairs included', () => {
    let rejected = 0;
    fc.assert(
      fc.property(eventMutations(fc.jsonValue({ maxDepth: 2, stringUnit: 'binary' })), (mutant) => {
        for (const input of forms(mutant)) if (!compare(input).accepted) rejected++;
      }),
      { numRuns: 250, seed: 13 },
    );
    expect(rejected).toBeGreaterThan(350);
  });

  it('agrees under configured limits, tight and loose', () => {
    const limitSets: fc.Arbitrary<Partial<ContractLimits>> = fc.record(
      {
        maxEventBytes: fc.constantFrom(0, 300, 600, 1_000, 2_000, DEFAULT_LIMITS.maxEventBytes),
        maxSteps: fc.constantFrom(-1, 0, 1, 3, 5, 6),
        maxLongText: fc.constantFrom(-1, 0, 5, 20, 40),
        maxStateDepth: fc.constantFrom(0, 1, 2, 3),
        maxDependsOn: fc.constantFrom(0, 1, 2),
      },
      { requiredKeys: [] },
    );
    const seen = { accepted: 0, acceptedFast: 0, rejected: 0 };
    fc.assert(
      fc.property(fc.constantFrom(...BASE_EVENTS), limitSets, (event, limits) => {
        const text = JSON.stringify(event);
        for (const input of [JSON.parse(text) as unknown, text]) {
          const { accepted, fast } = compare(input, { limits });
          if (!accepted) seen.rejected++;
          else if (fast) seen.acceptedFast++;
          else seen.accepted++;
        }
      }),
      { numRuns: 1_500, seed: 11 },
    );
    expect(seen.accepted).toBe(0);
    expect(seen.acceptedFast).toBeGreaterThan(600);
    expect(seen.rejected).toBeGreaterThan(1_000);
  });

  it.each(['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf'])(
    'agrees on JSON text with a %s key at any depth (and on what JSON.parse makes of it)',
    (key) => {
      const checkpoint = BASE_EVENTS.find((e) => e.type === 'checkpoint.saved')!;
      const deepState = { ...checkpoint, payload: { ...checkpoint.payload, state: { a: { b: [{ c: { d: {} } }] } } } };
      let rejected = 0;
      for (const event of [...BASE_EVENTS, deepState as PlanEvent]) {
        // Every object in the event, the event itself included, gets the key once.
        const objects = [[], ...fieldPaths(event)].filter((path) => {
          const value = path.reduce<unknown>((v, k) => (v as Plain)[k], event);
          return typeof value === 'object' && value !== null && !Array.isArray(value);
        });
        for (const path of objects) {
          const copy = JSON.parse(JSON.stringify(event)) as Plain;
          const target = path.reduce<Plain>((v, k) => v[k] as Plain, copy);
          target.__KEY__ = { polluted: true };
          const text = JSON.stringify(copy).replace('"__KEY__"', JSON.stringify(key));
          for (const input of [text, JSON.parse(text) as unknown]) {
            const outcome = compare(input);
            expect(outcome.accepted).toBe(false);
            rejected++;
          }
        }
      }
      expect(rejected).toBeGreaterThan(200);
      expect(({} as Plain).polluted).toBeUndefined();
    },
  );

  it('agrees on events over, at and under the size limit', () => {
    const completed = BASE_EVENTS.find((e) => e.type === 'step.completed')!;
    const base = Buffer.byteLength(
      JSON.stringify({ ...completed, payload: { ...completed.payload, outputContent: '' } }),
    );
    const room = DEFAULT_LIMITS.maxEventBytes - base;
    const outcomes: boolean[] = [];
    // ASCII, then 3-byte characters (the guard's byte bounds differ from the length), at the edges.
    for (const [char, bytes] of [
      ['a', 1],
      ['€', 3],
    ] as const) {
      for (const extra of [-1, 0, 1, 2]) {
        const outputContent = char.repeat(Math.floor(room / bytes) + extra);
        const event = { ...completed, payload: { ...completed.payload, outputContent } } as unknown as Plain;
        for (const input of forms(event))
          outcomes.push(compare(input, { limits: { maxLongText: 2_000_000 } }).accepted);
      }
    }
    expect(outcomes).toContain(true);
    expect(outcomes).toContain(false);
    const huge = {
      ...completed,
      payload: { ...completed.payload, outputContent: 'x'.repeat(3 * DEFAULT_LIMITS.maxEventBytes) },
    } as unknown as Plain;
    for (const input of forms(huge)) expect(compare(input).accepted).toBe(false);
  });

  it('agrees on deep nesting, in checkpoint state and anywhere else', () => {
    const checkpoint = BASE_EVENTS.find((e) => e.type === 'checkpoint.saved')!;
    const nested = (depth: number): unknown => (depth <= 1 ? {} : { next: nested(depth - 1) });
    const outcomes: boolean[] = [];
    for (const depth of [
      DEFAULT_LIMITS.maxStateDepth - 1,
      DEFAULT_LIMITS.maxStateDepth,
      DEFAULT_LIMITS.maxStateDepth + 1,
      200,
    ]) {
      const inState = { ...checkpoint, payload: { ...checkpoint.payload, state: nested(depth) } } as unknown as Plain;
      const inPayload = { ...checkpoint, payload: { ...checkpoint.payload, extra: nested(depth) } } as unknown as Plain;
      const atRoot = { ...checkpoint, extra: nested(depth) } as unknown as Plain;
      for (const event of [inState, inPayload, atRoot])
        for (const input of forms(event)) outcomes.push(compare(input).accepted);
    }
    expect(outcomes).toContain(true);
    expect(outcomes).toContain(false);
    const text = JSON.stringify(checkpoint).replace(
      '"layer":',
      `"junk":${'['.repeat(100_000)}${']'.repeat(100_000)},"layer":`,
    );
    expect(compare(text).accepted).toBe(false);
  });

  it('agrees on inputs that are not events at all, or throw when read', () => {
    const throwing = JSON.parse(JSON.stringify(BASE_EVENTS[0])) as Plain;
    Object.defineProperty(throwing, 'seq', {
      enumerable: true,
      get: () => {
        throw new Error('boom');
      },
    });
    for (const input of [
      null,
      undefined,
      42,
      'text',
      '',
      '[]',
      'null',
      '{"specVersion":1,',
      [],
      new Date(0),
      throwing,
    ]) {
      expect(compare(input).accepted).toBe(false);
    }
  });

  it('normalises eventId and occurredAt exactly as parsePlanEvent does', () => {
    const event = BASE_EVENTS[0] as unknown as Plain;
    const variants = [
      '2024-05-01T12:00:00Z',
      '2024-05-01T12:00:00+00:00',
      '2024-05-01T12:00:00.1Z',
      '2024-05-01T12:00:00.123456789+00:00',
      '2024-02-29T23:59:59.999Z',
      '1000-01-01T00:00:00.000Z',
      '9999-12-31T23:59:59.9999999Z',
    ];
    for (const occurredAt of variants) {
      const input = { ...event, eventId: (event.eventId as string).toUpperCase(), occurredAt };
      expect(compare(input)).toEqual({ accepted: true, fast: true });
      const result = checkStoredEvent(input);
      expect(result.ok && result.event.eventId).toBe(event.eventId);
      expect(result.ok && result.event.occurredAt).toBe(new Date(occurredAt).toISOString());
    }
  });

  it('keeps a timestamp already in toISOString() form only where the Date round trip gives it back', () => {
    const p = (n: number, width = 2) => String(n).padStart(width, '0');
    const timestamp = fc
      .record({
        y: fc.integer({ min: 1_000, max: 9_999 }),
        mo: fc.integer({ min: 1, max: 12 }),
        d: fc.integer({ min: 1, max: 31 }),
        h: fc.integer({ min: 0, max: 23 }),
        mi: fc.integer({ min: 0, max: 59 }),
        s: fc.integer({ min: 0, max: 59 }),
        ms: fc.integer({ min: 0, max: 999 }),
      })
      .map(({ y, mo, d, h, mi, s, ms }) => `${p(y, 4)}-${p(mo)}-${p(d)}T${p(h)}:${p(mi)}:${p(s)}.${p(ms, 3)}Z`);
    let checked = 0;
    fc.assert(
      fc.property(timestamp, (s) => {
        if (!isUtcTimestamp(s)) return; // refused before any normalising
        checked++;
        expect(toIsoString(s)).toBe(new Date(s).toISOString());
      }),
      { numRuns: 5_000, seed: 3 },
    );
    expect(checked).toBeGreaterThan(4_000);
  });
});

describe('checkStoredEvent: stamps', () => {
  const STAMPS = ['specVersion', 'eventId', 'seq', 'occurredAt'] as const;

  it.each(STAMPS)("rejects an event without %s, with the contract's message", (stamp) => {
    for (const event of BASE_EVENTS) {
      const { [stamp]: _dropped, ...rest } = event as unknown as Plain;
      for (const input of forms(rest)) {
        const result = checkStoredEvent(input);
        expect(result.ok).toBe(false);
        if (!result.ok) {
          expect(result.error.violations).toEqual([{ path: stamp, message: `${stamp} is required` }]);
          expect(result.error.message).toBe(`invalid plan event: ${stamp} is required`);
        }
        expect(compare(input).accepted).toBe(false);
      }
    }
  });

  it.each<[string, unknown]>([
    ['specVersion', 2],
    ['eventId', 'not-a-uuid'],
    ['seq', -1],
    ['seq', 2 ** 31],
    ['seq', 1.5],
    ['seq', '7'],
    ['occurredAt', '2024-05-01T12:00:00+01:00'],
    ['occurredAt', '0000-01-01T00:00:00.000Z'],
    ['occurredAt', '0999-12-31T23:59:59.999Z'],
    ['occurredAt', null],
  ])('rejects %s = %p as parsePlanEvent does', (stamp, value) => {
    for (const event of BASE_EVENTS) {
      for (const input of forms({ ...(event as unknown as Plain), [stamp]: value }))
        expect(compare(input).accepted).toBe(false);
    }
  });
});
