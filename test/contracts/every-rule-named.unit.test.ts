/**
 * A refusal names every rule the event breaks, the first of each field, so a sender fixes an event
 * in one round: at each entry point of the contract (parsePlanEvent, checkStoredEvent, the
 * publisher's fast check). The raw-input guard keeps its protective role: a prototype key, a value
 * JSON cannot hold or nesting past its bound stops the work, and an event too large to read is
 * refused on its size alone, unread.
 */
import { checkStoredEvent, DEFAULT_LIMITS, parsePlanEvent } from '../../src/contracts';
import type { ContractLimits, Violation } from '../../src/contracts';
import { checkEventInput } from '../../src/contracts/fast-check/event-rules';
import { EventStamper } from '../../src/publisher/event-stamper';
import { checkpoint, completed, created, nulViolation, step } from './plan-event.fixtures';

type Plain = Record<string, unknown>;

const SIZE: Violation = { path: '', message: '(root) must be at most 1048576 bytes of UTF-8 JSON' };
const v = (path: string, predicate: string): Violation => ({ path, message: `${path} ${predicate}` });

/** The three entry points, each on the object and (the first two) on its JSON text. */
function reports(input: Plain, limits?: Partial<ContractLimits>): Record<string, Violation[]> {
  const of = (result: ReturnType<typeof parsePlanEvent>) => (result.ok ? [] : result.error.violations);
  const out: Violation[] = [];
  const { specVersion: _v, eventId: _e, seq: _s, occurredAt: _o, ...unstamped } = input;
  const stamped = new EventStamper(10).stamp(input) as unknown as Plain;
  checkEventInput(unstamped, { limits: { ...DEFAULT_LIMITS, ...limits }, out }, stamped);
  const text = JSON.stringify(input);
  return {
    parsePlanEvent: of(parsePlanEvent(input, { limits })),
    'parsePlanEvent (JSON text)': of(parsePlanEvent(text, { limits })),
    checkStoredEvent: of(checkStoredEvent(input, { limits })),
    'checkStoredEvent (JSON text)': of(checkStoredEvent(text, { limits })),
    'the fast check of publish()': out,
  };
}

/** Every entry point names `expected` (in any order within the payload: that order is not the contract's). */
function expectEverywhere(input: Plain, expected: Violation[], limits?: Partial<ContractLimits>): void {
  const sorted = (vs: Violation[]) => [...vs].sort((x, y) => x.message.localeCompare(y.message));
  const all = Object.entries(reports(input, limits)).map(([at, vs]) => [at, sorted(vs)]);
  expect(Object.fromEntries(all)).toEqual(Object.fromEntries(all.map(([at]) => [at, sorted(expected)])));
}

describe('a refusal names every rule the event breaks, the first of each field', () => {
  it('an output of 2 MB holding a NUL: the NUL and the size', () => {
    const input = completed({ outputContent: `${'x'.repeat(2_000_000)}\u0000` });
    expectEverywhere(input, [nulViolation('payload.outputContent'), SIZE]);
  });

  it('an output of 2 MB: its own length and the size', () => {
    const input = completed({ outputContent: 'x'.repeat(2_000_000) });
    expectEverywhere(input, [v('payload.outputContent', 'must be at most 200000 characters long'), SIZE]);
  });

  it('a NUL in one field and other fields broken: each of them', () => {
    expectEverywhere(completed({ result: 'done\u0000', stepId: undefined, inputTokens: '1' }), [
      nulViolation('payload.result'),
      v('payload.stepId', 'is required'),
      v('payload.inputTokens', 'must be an integer'),
    ]);
    expectEverywhere(created({ query: 'q\u0000', steps: [step(0), step(1, { task: undefined })] }), [
      nulViolation('payload.query'),
      v('payload.steps[1].task', 'is required'),
    ]);
    expectEverywhere(checkpoint({ a: 'x\u0000', '\uD800': 1 }), [
      nulViolation('payload.state.a'),
      v(
        'payload.state["\\ud800"]',
        'is a forbidden key (it contains a lone UTF-16 surrogate, U+D800-U+DFFF without its pair, which databases store differently)',
      ),
    ]);
  });

  it('one violation per field, the first rule it breaks', () => {
    // a NUL in a text also too long: the NUL; a string where a list belongs: that it is no list
    expectEverywhere(completed({ model: `${'m'.repeat(200)}\u0000` }), [nulViolation('payload.model')]);
    expectEverywhere(created({ steps: 'x'.repeat(600) }), [v('payload.steps', 'must be an array')]);
    // a stamp of the wrong type holding a NUL: the NUL
    expectEverywhere(completed({}, { planId: 'plan\u0000' }), [nulViolation('planId')]);
  });
});

describe("the raw-input guard's protective role", () => {
  it('a key naming a built-in property stops the work: only what the guard found is named', () => {
    expectEverywhere(completed({ constructor: 1, stepId: undefined, result: 'a\u0000' }), [
      v('payload.constructor', 'is a forbidden key (it names a built-in object property)'),
      nulViolation('payload.result'),
    ]);
  });

  it('nesting past its bound stops the work', () => {
    let deep: Plain = {};
    for (let i = 0; i < 40; i++) deep = { a: deep };
    const input = checkpoint(deep);
    (input.payload as Plain).layer = -1;
    expectEverywhere(input, [v('payload.state', 'must not be nested more than 32 levels deep')]);
  });

  it('a value JSON cannot hold stops the work (objects only: JSON text cannot carry one)', () => {
    const input = checkpoint({ n: NaN });
    (input.payload as Plain).layer = -1;
    const expected = [v('payload.state.n', 'must be a finite number')];
    const all = reports(input);
    expect([all.parsePlanEvent, all.checkStoredEvent, all['the fast check of publish()']]).toEqual([
      expected,
      expected,
      expected,
    ]);
  });

  it('an event too large to read (past a whole job) is refused on its size, and not read', () => {
    const limits = { maxEventBytes: 500, maxJobBytes: 1_000 };
    let read = 0;
    const input = completed({ stepId: undefined }, { big: 'x'.repeat(5_000) });
    // the payload is walked after the envelope's scalars: past the bound, it is never opened
    Object.defineProperty(input.payload, 'result', {
      enumerable: true,
      get: () => {
        read++;
        return 'done';
      },
    });
    for (const result of [parsePlanEvent(input, { limits }), checkStoredEvent(input, { limits })]) {
      expect(!result.ok && result.error.violations).toEqual([
        { path: '', message: '(root) must be at most 500 bytes of UTF-8 JSON' },
      ]);
    }
    expect(read).toBe(0);
    const text = JSON.stringify({ ...completed({ stepId: undefined }), big: 'x'.repeat(5_000) });
    const fromText = parsePlanEvent(text, { limits });
    expect(!fromText.ok && fromText.error.violations).toEqual([
      { path: '', message: '(root) must be at most 500 bytes of UTF-8 JSON' },
    ]);
  });

  it('an event over its size but within a job is read through: every rule named', () => {
    const limits = { maxEventBytes: 500, maxJobBytes: 100_000 };
    const input = completed({ stepId: undefined, result: 'x'.repeat(5_000), extra: 1 });
    expectEverywhere(
      input,
      [
        v('payload.stepId', 'is required'),
        v('payload.extra', 'is not an allowed field'),
        { path: '', message: '(root) must be at most 500 bytes of UTF-8 JSON' },
      ],
      limits,
    );
  });
});
