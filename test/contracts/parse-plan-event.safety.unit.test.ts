/** What reaches the parser before any DTO: raw input shapes, JSON text, size, prototype keys. */
import {
  InvalidEventError,
  isExternalId,
  parsePlanEvent,
  PLAN_EVENT_TYPES,
  PlanEventType,
  SPEC_VERSION,
} from '../../src/contracts';
import {
  accepted,
  besidesTheGraph,
  checkpoint,
  completed,
  created,
  envelope,
  loneSurrogateVariants,
  nulKeyViolation,
  nulVariants,
  nulViolation,
  pairs,
  step,
  surrogateKeyViolation,
  surrogateViolation,
  violationsOf,
} from './plan-event.fixtures';
import { BASE_EVENTS } from '../support/event-mutations';
import type { Violation } from '../../src/contracts';

const ONLY_IDS: Violation = {
  path: 'payload.steps[1].dependsOn',
  message: 'payload.steps[1].dependsOn must contain only external ids',
};
const UNKNOWN_EXTRA: Violation = { path: 'payload.extra', message: 'payload.extra is not an allowed field' };

const FORBIDDEN = 'is a forbidden key (it names a built-in object property)';

describe('parsePlanEvent: raw input', () => {
  it.each<[string, unknown, string]>([
    ['null', null, '(root) must be a JSON object'],
    ['undefined', undefined, '(root) must be a JSON object'],
    ['a number', 42, '(root) must be a JSON object'],
    ['an array', [completed()], '(root) must be a JSON object'],
    ['a class instance', new (class Event {})(), '(root) must be a JSON object'],
    ['JSON text of an array', '[]', '(root) must be a JSON object'],
    ['JSON text of null', 'null', '(root) must be a JSON object'],
    ['invalid JSON text', '{"specVersion":1,', '(root) must be a JSON object; got a string that is not JSON text'],
    ['an empty string', '', '(root) must be a JSON object; got a string that is not JSON text'],
  ])('rejects %s with one violation', (_name, input, message) => {
    expect(pairs(input)).toEqual([['', message]]);
  });

  it.each<[string, unknown, [string, string][]]>([
    ['NaN', completed({ inputTokens: NaN }), [['payload.inputTokens', 'payload.inputTokens must be a finite number']]],
    [
      'Infinity',
      completed({ inputTokens: Infinity }),
      [['payload.inputTokens', 'payload.inputTokens must be a finite number']],
    ],
    ['a function', completed({ result: () => 'x' }), [['payload.result', 'payload.result must be a JSON value']]],
    [
      'a bigint',
      completed({ inputTokens: BigInt(1) }),
      [['payload.inputTokens', 'payload.inputTokens must be a JSON value']],
    ],
    [
      'a Date',
      completed({}, { occurredAt: new Date() }),
      [['occurredAt', 'occurredAt must be a plain object or array']],
    ],
    [
      'a Map in state',
      checkpoint({ m: new Map() }),
      [['payload.state.m', 'payload.state.m must be a plain object or array']],
    ],
    [
      'an undefined array item',
      checkpoint({ list: [1, undefined] }),
      [['payload.state.list[1]', 'payload.state.list[1] must be a JSON value']],
    ],
  ])('rejects a non-JSON value: %s', (_name, input, expected) => {
    expect(pairs(input)).toEqual(expected);
  });

  it('stops collecting raw-input violations at 20', () => {
    expect(pairs(checkpoint({ list: Array.from({ length: 1000 }, () => NaN) }))).toHaveLength(20);
  });

  it('never throws, even when reading the input throws', () => {
    const input = completed();
    Object.defineProperty(input, 'seq', {
      enumerable: true,
      get: () => {
        throw new Error('boom: secret');
      },
    });
    const result = parsePlanEvent(input);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error.message).toBe('invalid plan event: (root) could not be validated (Error)');
  });

  it('survives very deep JSON text without overflowing the stack', () => {
    const deep = `{"junk":${'['.repeat(200_000)}${']'.repeat(200_000)}}`;
    expect(pairs(deep)).toEqual([['junk[0]', 'junk[0] must not be nested more than 32 levels deep']]);
  });
});

describe('parsePlanEvent: prototype keys', () => {
  it('rejects __proto__ in JSON text and pollutes nothing', () => {
    expect(pairs('{"__proto__":{"polluted":1}}')).toEqual([['__proto__', `__proto__ ${FORBIDDEN}`]]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect((Object.prototype as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('rejects prototype keys anywhere, checkpoint state included', () => {
    const text = JSON.stringify(checkpoint({ ok: 1 })).replace(
      '"ok":1',
      '"ok":{"__proto__":{"polluted":1}},"constructor":{"prototype":{"polluted":1}}',
    );
    expect(pairs(text)).toEqual([
      ['payload.state.constructor', `payload.state.constructor ${FORBIDDEN}`],
      ['payload.state.ok.__proto__', `payload.state.ok.__proto__ ${FORBIDDEN}`],
    ]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('rejects an own __proto__ key on an object input', () => {
    const payload = { stepId: 's1' };
    Object.defineProperty(payload, '__proto__', { value: { polluted: 1 }, enumerable: true });
    expect(pairs(envelope('step.started', payload))).toEqual([['payload.__proto__', `payload.__proto__ ${FORBIDDEN}`]]);
  });

  it('rejects a prototype set through an object literal', () => {
    const input = {
      ...completed(),
      payload: { __proto__: { polluted: 1 }, stepId: 's1', inputTokens: 1, outputTokens: 1 },
    };
    expect(pairs(input)).toEqual([['payload', 'payload must be a plain object or array']]);
  });

  // class-transformer silently skips keys that name Object.prototype methods, so without the guard
  // they would slip past the unknown-field check and into the accepted event.
  it.each(['toString', 'valueOf', 'hasOwnProperty', 'prototype'])('rejects %s as a key', (key) => {
    expect(pairs(completed({ [key]: 1 }))).toEqual([[`payload.${key}`, `payload.${key} ${FORBIDDEN}`]]);
  });
});

describe('parsePlanEvent: size', () => {
  const event = completed({ outputContent: 'héllo wörld' });
  const bytes = Buffer.byteLength(JSON.stringify(event), 'utf8');

  it.each([
    ['an object', event],
    ['JSON text', JSON.stringify(event)],
  ])('measures %s in UTF-8 bytes of JSON, exactly', (_name, input) => {
    expect(accepted(input, { maxEventBytes: bytes }).type).toBe('step.completed');
    expect(pairs(input, { maxEventBytes: bytes - 1 })).toEqual([
      ['', `(root) must be at most ${bytes - 1} bytes of UTF-8 JSON`],
    ]);
  });

  it('rejects a large object early, by its lower bound', () => {
    const big = completed({ outputContent: 'x'.repeat(5000) });
    expect(pairs(big, { maxEventBytes: 1000 })).toEqual([['', '(root) must be at most 1000 bytes of UTF-8 JSON']]);
  });

  it('does not count undefined fields, which JSON drops', () => {
    expect(
      accepted({ ...event, payload: { ...(event.payload as object), model: undefined } }, { maxEventBytes: bytes })
        .type,
    ).toBe('step.completed');
  });
});

describe('parsePlanEvent: the NUL character (U+0000), which PostgreSQL cannot store', () => {
  it.each<[string, Record<string, unknown>, Violation | Violation[]]>([
    ['an envelope field', completed({}, { planId: 'plan\u0000' }), nulViolation('planId')],
    [
      'the type, whose rules would otherwise pick the DTO',
      completed({}, { type: 'step.completed\u0000' }),
      nulViolation('type'),
    ],
    ['a payload field', completed({ result: 'done\u0000' }), nulViolation('payload.result')],
    [
      'a text also over its length limit',
      completed({ model: `${'m'.repeat(200)}\u0000` }),
      nulViolation('payload.model'),
    ],
    ['a step field', created({ steps: [step(0), step(1, { task: '\u0000' })] }), nulViolation('payload.steps[1].task')],
    [
      'a dependsOn item, which its list refuses too',
      created({ steps: [step(0), step(1, { dependsOn: ['s\u00000'] })] }),
      [nulViolation('payload.steps[1].dependsOn[0]'), ONLY_IDS],
    ],
    ['a checkpoint state key', checkpoint({ ok: 1, 'k\u0000': 1 }), nulKeyViolation('payload.state["k\\u0000"]')],
    [
      'a nested checkpoint state key',
      checkpoint({ a: [{ '\u0000': {} }] }),
      nulKeyViolation('payload.state.a[0]["\\u0000"]'),
    ],
    [
      'a nested checkpoint state value',
      checkpoint({ a: { b: [1, 'x\u0000y'] } }),
      nulViolation('payload.state.a.b[1]'),
    ],
    [
      'an unknown field, reported as NUL and as unknown',
      completed({ extra: { note: '\u0000' } }),
      [nulViolation('payload.extra.note'), UNKNOWN_EXTRA],
    ],
    [
      'a key outside checkpoint state, which is no field name',
      completed({ 'k\u0000': 1 }),
      { path: 'payload["k\\u0000"]', message: 'payload["k\\u0000"] is not an allowed field' },
    ],
  ])(
    'rejects it in %s: the first violation of each field, at its path, in an object or in JSON text',
    (_name, input, expected) => {
      const all = Array.isArray(expected) ? expected : [expected];
      expect(violationsOf(input)).toEqual(all);
      expect(violationsOf(JSON.stringify(input))).toEqual(all);
    },
  );

  it("reports each offending string once, beside the raw-input guard's other violations", () => {
    const input = checkpoint({ a: '\u0000', b: ['\u0000\u0000'], n: NaN, toString: 1 });
    expect(
      pairs(input)
        .map(([path]) => path)
        .sort(),
    ).toEqual(['payload.state.a', 'payload.state.b[0]', 'payload.state.n', 'payload.state.toString']);
  });

  it('rejects it in every string and as a key of every object of every event type', () => {
    let variants = 0;
    for (const event of BASE_EVENTS) {
      for (const { input, expected } of nulVariants(event)) {
        expect(besidesTheGraph(violationsOf(input))).toEqual(expected);
        variants++;
      }
    }
    expect(variants).toBeGreaterThan(300);
  });

  it('accepts its look-alikes: escaped text, U+2400, other control characters, a lone "0"', () => {
    for (const result of ['\\u0000', '\\0', '\u2400', '\u0001\u001f\u007f', '0']) {
      expect(accepted(completed({ result })).payload).toMatchObject({ result });
      expect(accepted(checkpoint({ [result]: result })).payload).toMatchObject({ state: { [result]: result } });
    }
  });
});

describe('InvalidEventError and exports', () => {
  it('is a permanent Error listing every violation', () => {
    const result = parsePlanEvent(completed({ model: 1 }, { seq: -1 }));
    if (result.ok) throw new Error('expected invalid');
    const error = result.error;
    expect(error).toBeInstanceOf(InvalidEventError);
    expect(error).toBeInstanceOf(Error);
    expect([error.name, error.permanent]).toEqual(['InvalidEventError', true]);
    expect(error.message).toBe('invalid plan event: seq must be at least 0; payload.model must be a string');
  });

  it('names the eleven event types at spec version 1', () => {
    expect(SPEC_VERSION).toBe(1);
    expect(PLAN_EVENT_TYPES).toEqual(Object.values(PlanEventType));
    expect(PLAN_EVENT_TYPES).toHaveLength(11);
  });

  it.each<[unknown, boolean]>([
    ['plan_abc123', true],
    ['session_123', true],
    ['0F8FAD5B-D9CB-469F-A165-70867728950E', true],
    ['tenant:a.b-c_d', true],
    ['a'.repeat(64), true],
    ['a'.repeat(65), false],
    ['', false],
    ['-leading', false],
    ['with space', false],
    ['ünïcode', false],
    [42, false],
    [null, false],
  ])('isExternalId(%p) is %p', (value, expected) => {
    expect(isExternalId(value)).toBe(expected);
  });
});

describe('parsePlanEvent: lone UTF-16 surrogates, which each database stores differently', () => {
  it.each<[string, Record<string, unknown>, Violation | Violation[]]>([
    ['a high surrogate alone', completed({ result: '\uD800' }), surrogateViolation('payload.result')],
    ['a low surrogate alone', completed({ result: 'a\uDC00b' }), surrogateViolation('payload.result')],
    [
      'the high half of an emoji at the end',
      completed({ outputContent: 'smile \uD83D' }),
      surrogateViolation('payload.outputContent'),
    ],
    [
      'the low half of an emoji at the start',
      completed({ model: '\uDE00 smile' }),
      surrogateViolation('payload.model'),
    ],
    ['a pair in the wrong order', completed({ result: '\uDE00\uD83D' }), surrogateViolation('payload.result')],
    ['an envelope field', completed({}, { sessionId: 'session\uD800' }), surrogateViolation('sessionId')],
    [
      'a text also over its length limit',
      completed({ model: `${'m'.repeat(200)}\uDFFF` }),
      surrogateViolation('payload.model'),
    ],
    [
      'a step field',
      created({ steps: [step(0), step(1, { task: 'x\uDBFF' })] }),
      surrogateViolation('payload.steps[1].task'),
    ],
    [
      'a dependsOn item, which its list refuses too',
      created({ steps: [step(0), step(1, { dependsOn: ['s\uD8000'] })] }),
      [surrogateViolation('payload.steps[1].dependsOn[0]'), ONLY_IDS],
    ],
    ['a checkpoint state key', checkpoint({ ok: 1, 'k\uD800': 1 }), surrogateKeyViolation('payload.state["k\\ud800"]')],
    [
      'a nested checkpoint state key',
      checkpoint({ a: [{ '\uDC00': {} }] }),
      surrogateKeyViolation('payload.state.a[0]["\\udc00"]'),
    ],
    [
      'a nested checkpoint state value',
      checkpoint({ a: { b: [1, 'x\uDC00y'] } }),
      surrogateViolation('payload.state.a.b[1]'),
    ],
    [
      'an unknown field, reported as a surrogate and as unknown',
      completed({ extra: { note: '\uD800' } }),
      [surrogateViolation('payload.extra.note'), UNKNOWN_EXTRA],
    ],
  ])(
    'rejects %s: the first violation of each field, at its path, in an object or in JSON text',
    (_name, input, expected) => {
      const all = Array.isArray(expected) ? expected : [expected];
      expect(violationsOf(input)).toEqual(all);
      expect(violationsOf(JSON.stringify(input))).toEqual(all);
    },
  );

  it('rejects a high or a low one in every string and as a key of every object of every event type', () => {
    let variants = 0;
    for (const event of BASE_EVENTS) {
      for (const low of [false, true]) {
        for (const { input, expected } of loneSurrogateVariants(event, low)) {
          expect(besidesTheGraph(violationsOf(input))).toEqual(expected);
          variants++;
        }
      }
    }
    expect(variants).toBeGreaterThan(600);
  });

  it('rejects one written raw (unescaped) into JSON text, as a sender that builds JSON by hand would', () => {
    const text = JSON.stringify(completed({ result: 'MARK' })).replace('MARK', 'file-\uD800.txt');
    expect(text).toContain('\uD800');
    expect(violationsOf(text)).toEqual([surrogateViolation('payload.result')]);
  });

  it('reports NUL first when a string holds both', () => {
    expect(violationsOf(completed({ result: '\uD800\u0000' }))).toEqual([nulViolation('payload.result')]);
  });

  it('accepts valid pairs (emoji, CJK extension B) and the replacement character, in text, keys and state', () => {
    for (const result of ['\u{1F600}', 'a\uD83D\uDE00b', '\u{20000}\u{10FFFF}', '\uFFFD', '\uD7FF\uE000', '\\uD800']) {
      expect(accepted(completed({ result })).payload).toMatchObject({ result });
      expect(accepted(checkpoint({ [result]: [result] })).payload).toMatchObject({ state: { [result]: [result] } });
      expect(accepted(JSON.stringify(completed({ outputContent: result }))).payload).toMatchObject({
        outputContent: result,
      });
    }
  });
});
