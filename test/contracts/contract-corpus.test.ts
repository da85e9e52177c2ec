/**
 * One corpus of valid and broken events through every entry point of the contract:
 * - `parsePlanEvent`, the validator of record (class-validator), whose verdicts and messages are
 *   pinned by a digest of the whole corpus;
 * - `checkStoredEvent` (the worker and `plan-ledger serve`): exactly `parsePlanEvent`'s result;
 * - the publisher's fast check (`publish()`): the same messages;
 * - the JSON Schema under `schemas/` (ajv): the same verdict, except for what the schema lists in
 *   `x-plan-ledger-also-checked`;
 * - the Python client's `check_event`: the same verdict and messages, except for the rules it
 *   leaves to its encoder or to the server.
 * Each names every rule an event breaks, the first of each field: no two violations share a path.
 *
 * The digest changes only when a verdict or a message of the contract does. When that is meant,
 * `CORPUS_DUMP=/tmp/after.txt npx jest test/contracts/contract-corpus.test.ts` writes the listing
 * the digest is taken of (run it on the commit before too, and diff the two), then update
 * CORPUS_DIGEST and say in the commit what changed.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { checkStoredEvent, DEFAULT_LIMITS, parsePlanEvent } from '../../src/contracts';
import type { ParseResult, PlanEvent, Violation } from '../../src/contracts';
import { checkEventInput } from '../../src/contracts/fast-check/event-rules';
import { EventStamper } from '../../src/publisher/event-stamper';
import { BASE_EVENTS, fieldPaths, mutate, TRICKY_VALUES } from '../support/event-mutations';
import {
  LONE_SURROGATE_VALUES,
  loneSurrogateVariants,
  NUL_VALUES,
  nulVariants,
  TIMESTAMP_EDGE_VALUES,
} from './plan-event.fixtures';

jest.setTimeout(300_000);

const CORPUS_DIGEST = 'e36302406ec603f4dc5b8814aff46536356db3ab561f6faa6c440d3bd38cf824';

type Plain = Record<string, unknown>;
interface Entry {
  label: string;
  input: Plain;
}

const SCHEMAS = path.join(__dirname, '..', '..', 'schemas');
const PYTHON_CHECK = path.join(__dirname, 'python', 'check-events.py');

// ----------------------------------------------------------------------------- the corpus

const MUTATION_VALUES: readonly unknown[] = [
  ...TRICKY_VALUES,
  ...NUL_VALUES,
  ...LONE_SURROGATE_VALUES,
  ...TIMESTAMP_EDGE_VALUES,
];

/**
 * What an extra field holds, in the 'add' mutations: what the raw-input guard looks at (an unknown
 * field is refused whatever it holds).
 */
const EXTRA_FIELD_VALUES: readonly unknown[] = [
  null,
  'x',
  'a\u0000b',
  'smile \uD83D',
  NaN,
  () => 1,
  new Date(0),
  {},
  { 'k\u0000': 1 },
  { deep: [{ v: 'x\uDC00' }] },
];

/** One event of each type (and of each decision kind). */
function oneOfEachKind(): PlanEvent[] {
  const seen = new Set<string>();
  return BASE_EVENTS.filter((e) => {
    const kind = `${e.type}:${(e.payload as { decision?: string }).decision ?? ''}:${'forkOf' in e.payload}`;
    return !seen.has(kind) && seen.add(kind) !== undefined;
  });
}

const find = <T extends PlanEvent['type']>(type: T) =>
  BASE_EVENTS.find((e) => e.type === type) as Extract<PlanEvent, { type: T }>;
const withPayload = (event: PlanEvent, payload: Plain): Plain =>
  ({ ...event, payload: { ...event.payload, ...payload } }) as unknown as Plain;

/** Events breaking several rules at once, in one field or in several. */
function severalRules(): Entry[] {
  const completed = find('step.completed');
  const created = find('plan.created');
  const checkpoint = find('checkpoint.saved');
  const big = (n: number) => 'x'.repeat(n);
  const cases: [string, Plain][] = [
    ['output of 2 MB with a NUL', withPayload(completed, { outputContent: `${big(2_000_000)}\u0000` })],
    ['output of 300k characters with a NUL', withPayload(completed, { outputContent: `${big(300_000)}\u0000` })],
    ['output of 2 MB, valid text', withPayload(completed, { outputContent: big(2_000_000) })],
    ['output of 300k characters, valid text', withPayload(completed, { outputContent: big(300_000) })],
    ['NUL in the result and no stepId', withPayload(completed, { result: 'a\u0000', stepId: undefined })],
    ['NUL in the result and tokens a string', withPayload(completed, { result: 'a\u0000', inputTokens: '1' })],
    ['lone surrogate in the model and an unknown field', withPayload(completed, { model: 'm\uD800', extra: 1 })],
    [
      'NUL in the query and a step without a task',
      {
        ...withPayload(created, { query: 'q\u0000' }),
        payload: { ...created.payload, query: 'q\u0000', steps: [{ ...created.payload.steps[0], task: undefined }] },
      },
    ],
    ['NUL in the planId and a bad seq', { ...(created as unknown as Plain), planId: 'p\u0000', seq: -1 }],
    ['NUL in state and a bad layer', withPayload(checkpoint, { state: { a: 'x\u0000' }, layer: -1 })],
    ['forbidden key in state and a bad layer', withPayload(checkpoint, { state: { constructor: 1 }, layer: -1 })],
    ['NaN in state and a bad layer', withPayload(checkpoint, { state: { n: NaN }, layer: -1 })],
    ['2 MB state with a NUL', withPayload(checkpoint, { state: { big: big(2_000_000), bad: 'x\u0000' } })],
    ['2 MB state', withPayload(checkpoint, { state: { big: big(2_000_000) } })],
  ];
  return cases.map(([label, input]) => ({ label: `several: ${label}`, input }));
}

function graphAndDecisions(): Entry[] {
  const created = find('plan.created');
  const steps = created.payload.steps;
  const lists: [string, unknown][] = [
    ['duplicate step', [...steps, { ...steps[0] }]],
    ['unknown dependency', [{ ...steps[0], dependsOn: ['ghost'] }, ...steps.slice(1)]],
    [
      'cycle',
      [
        { ...steps[0], dependsOn: [steps[1].stepId] },
        { ...steps[1], dependsOn: [steps[0].stepId] },
      ],
    ],
    [
      'too many steps',
      Array.from({ length: DEFAULT_LIMITS.maxSteps + 1 }, (_, i) => ({
        stepId: `s${i}`,
        index: i,
        agentId: 'a',
        task: 't',
      })),
    ],
    ['a long string for a list', 'x'.repeat(DEFAULT_LIMITS.maxSteps + 1)],
  ];
  const out: Entry[] = lists.map(([label, list]) => ({
    label: `graph: ${label}`,
    input: withPayload(created, { steps: list }),
  }));
  const decision = { ...(created as unknown as Plain), type: 'plan.decision' };
  for (const payload of [
    { decision: 'edit' },
    { decision: 'edit', steps: [] },
    { decision: 'approve', steps },
    { decision: 'reject' },
    { decision: 'maybe', steps },
    { decision: 'edit', steps: 'x'.repeat(600) },
    { decision: 'edit', steps: [{ ...steps[0], dependsOn: [steps[0].stepId] }] },
  ])
    out.push({ label: `decision: ${JSON.stringify(payload).slice(0, 80)}`, input: { ...decision, payload } });
  return out;
}

function checkpointStates(): Entry[] {
  const checkpoint = find('checkpoint.saved');
  const nested = (depth: number): Plain => (depth <= 1 ? {} : { next: nested(depth - 1) });
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
    nested(DEFAULT_LIMITS.maxStateDepth),
    nested(DEFAULT_LIMITS.maxStateDepth + 1),
    nested(200),
    { ok: { deep: [[[{}]]] } },
  ];
  return states.map((state, i) => ({ label: `state #${i}`, input: withPayload(checkpoint, { state }) }));
}

function sizes(): Entry[] {
  const completed = find('step.completed');
  const base = Buffer.byteLength(JSON.stringify(withPayload(completed, { outputContent: '' })));
  const room = DEFAULT_LIMITS.maxEventBytes - base;
  const out: Entry[] = [];
  for (const [char, bytes] of [
    ['a', 1],
    ['€', 3],
  ] as const) {
    for (const extra of [-1, 0, 1]) {
      const outputContent = char.repeat(Math.floor(room / bytes) + extra);
      out.push({ label: `size: ${char} x room${extra}`, input: withPayload(completed, { outputContent }) });
    }
  }
  return out;
}

/**
 * Inputs where Python and JavaScript tend to differ: regex anchors and digit classes, the date-time
 * format's calendar and leap second, text that is not well-formed UTF-16, numbers at type edges.
 */
function pythonEdges(): Entry[] {
  const [created] = BASE_EVENTS;
  const set = (p: (string | number)[], v: unknown): Entry => ({
    label: `python edge: ${p.join('.')} = ${JSON.stringify(v)?.slice(0, 40)}`,
    input: mutate(created, p, v, 'set'),
  });
  const stamps = [
    '2016-12-31T23:59:60Z',
    '2016-12-31T23:59:60.5+00:00',
    '2016-12-31T22:59:60Z',
    '2024-01-01T00:00:00.1234567890Z',
    '0999-01-01T00:00:00Z',
    '2024-05-01T12:00:00Z\n',
    '２０２４-05-01T12:00:00Z',
    '2024-05-01t12:00:00z',
    '2000-02-29T00:00:00Z',
    '1900-02-29T00:00:00Z',
    '0001-01-01T00:00:00Z',
    '2024-02-29T12:00:00Z',
    '2100-02-29T12:00:00Z',
  ];
  const ids = ['p\n', 'p1\n', 'a'.repeat(64), 'a'.repeat(65), 'ä', '١٢٣', '_x'];
  return [
    ...stamps.map((s) => set(['occurredAt'], s)),
    ...ids.map((id) => set(['planId'], id)),
    ...ids.map((id) => set(['payload', 'steps', 0, 'stepId'], id)),
    set(['payload', 'query'], '\uD800 lone high surrogate'),
    set(['payload', 'query'], 'lone low \uDC80'),
    set(['payload', 'query'], '\u0000'),
    set(['payload', 'steps', 0, 'agentId'], '😀'.repeat(100)),
    set(['payload', 'steps', 0, 'agentId'], '😀'.repeat(101)),
    set(['payload', 'steps', 0, 'index'], 1e5),
    set(['payload', 'steps', 0, 'index'], 1e21),
    set(['payload', 'steps', 0, 'index'], -0),
    set(['payload', 'steps', 0, 'dependsOn'], ['a', 'b', 'a']),
    set(['seq'], 2147483647),
    set(['seq'], 2147483648),
    set(['specVersion'], 1.0),
    set(['payload', 'requiresApproval'], 1),
    set(['payload', 'complexity'], false),
  ];
}

/**
 * Every valid event; every field of one event of each kind deleted, or set to each edge value, or
 * given an extra field holding it; a NUL character and a lone surrogate in every string and key;
 * timestamps at the range's edges; then the cases above.
 */
function buildCorpus(): Entry[] {
  const corpus: Entry[] = BASE_EVENTS.map((e, i) => ({ label: `valid #${i}`, input: e as unknown as Plain }));
  for (const event of oneOfEachKind()) {
    for (const p of fieldPaths(event)) {
      const at = `${event.type} ${p.join('.')}`;
      corpus.push({ label: `${at} deleted`, input: mutate(event, p, undefined, 'delete') });
      MUTATION_VALUES.forEach((value, v) =>
        corpus.push({ label: `${at} set value #${v}`, input: mutate(event, p, value, 'set') }),
      );
      EXTRA_FIELD_VALUES.forEach((value, v) =>
        corpus.push({ label: `${at} add value #${v}`, input: mutate(event, p, value, 'add') }),
      );
    }
  }
  BASE_EVENTS.forEach((event, i) => {
    for (const [kind, variants] of [
      ['NUL', nulVariants(event)],
      ['high surrogate', loneSurrogateVariants(event, false)],
      ['low surrogate', loneSurrogateVariants(event, true)],
    ] as const) {
      variants.forEach(({ input, expected }) =>
        corpus.push({ label: `valid #${i} with a ${kind} at ${expected[0].path}`, input }),
      );
    }
    for (const occurredAt of TIMESTAMP_EDGE_VALUES)
      corpus.push({ label: `valid #${i} at ${occurredAt}`, input: { ...(event as unknown as Plain), occurredAt } });
  });
  return [...corpus, ...severalRules(), ...graphAndDecisions(), ...checkpointStates(), ...sizes(), ...pythonEdges()];
}

// ----------------------------------------------------------------------------- the entry points

/** Messages in the order given. */
const messagesOf = (result: ParseResult): string[] => (result.ok ? [] : result.error.violations.map((v) => v.message));
const violationsOf = (result: ParseResult): Violation[] => (result.ok ? [] : result.error.violations);

/** Violation messages, deduplicated and sorted: the order of reports is not part of the contract. */
const messageSet = (messages: readonly string[]): string[] => [...new Set(messages)].sort();

/** What publish() decides, minus the queueing: the fast check, then the byte limit after stamping. */
function publishVerdict(input: Plain): Violation[] {
  const out: Violation[] = [];
  const stamped = new EventStamper(10).stamp(input) as unknown as Plain;
  checkEventInput(input, { limits: DEFAULT_LIMITS, out }, stamped);
  if (out.length > 0) return out;
  const message = `(root) must be at most ${DEFAULT_LIMITS.maxEventBytes} bytes of UTF-8 JSON`;
  return Buffer.byteLength(JSON.stringify(stamped)) > DEFAULT_LIMITS.maxEventBytes ? [{ path: '', message }] : [];
}

const STAMPS = ['specVersion', 'eventId', 'seq', 'occurredAt'];

/**
 * The same event as the publisher would hand it on, through the validator of record: the input
 * itself when it carries every stamp (the stamper then changes nothing the contract reads).
 */
function contractOfStamped(input: Plain, contract: ParseResult): string[] {
  const stamped = STAMPS.every((s) => input[s] !== undefined)
    ? contract
    : parsePlanEvent(new EventStamper(10).stamp(input));
  return messageSet(messagesOf(stamped));
}

function compileSchema() {
  const ajv = new Ajv2020({ allErrors: false, strict: true, strictTypes: false, unicodeRegExp: true });
  ajv.addKeyword('x-plan-ledger-also-checked');
  addFormats(ajv, ['date-time']);
  return ajv.compile(JSON.parse(fs.readFileSync(path.join(SCHEMAS, 'plan-event.schema.json'), 'utf8')));
}

/** The Python client's check_event on each JSON text; its violations per input. */
function pythonViolations(texts: readonly string[]): Violation[][] {
  const run = spawnSync('python3', [PYTHON_CHECK], {
    input: `${texts.join('\n')}\n`,
    encoding: 'utf8',
    maxBuffer: 256 << 20,
  });
  expect({ status: run.status, stderr: run.stderr }).toEqual({ status: 0, stderr: '' });
  const lines = run.stdout.trimEnd().split('\n');
  expect(lines).toHaveLength(texts.length);
  return lines.map((line) => (JSON.parse(line) as [string, string][]).map(([path, message]) => ({ path, message })));
}

// What JSON Schema cannot say, as x-plan-ledger-also-checked lists it; and what it does not say:
// the lone surrogate (a JSON text carries it only as an escape, UTF-8 cannot encode it at all) and a
// key of checkpoint state that names a built-in object property.
const GRAPH = /must name a step of the same list|must be unique within the step list|forms a cycle/;
const SIZE = /bytes of UTF-8 JSON/;
const DEPTH = /levels deep/;
const SURROGATE = /lone UTF-16 surrogate/;
const FORBIDDEN_KEY = /is a forbidden key \(it names a built-in object property\)/;
const hasAstral = (input: unknown) => /[\u{10000}-\u{10FFFF}]/u.test(JSON.stringify(input));

/** A refusal only for reasons the schema lists as checked elsewhere. */
function beyondSchema(input: unknown, messages: readonly string[]): boolean {
  const astral = hasAstral(input);
  return messages.every(
    (m) =>
      GRAPH.test(m) ||
      SIZE.test(m) ||
      DEPTH.test(m) ||
      SURROGATE.test(m) ||
      FORBIDDEN_KEY.test(m) ||
      (astral && /characters long/.test(m)),
  );
}

/**
 * A refusal only for reasons the Python client leaves to others: the step graph to the server,
 * the size and lone surrogates to its encoder, lengths in UTF-16 units (it counts code points).
 */
function beyondPython(input: unknown, messages: readonly string[]): boolean {
  const astral = hasAstral(input);
  return messages.every(
    (m) => GRAPH.test(m) || SIZE.test(m) || SURROGATE.test(m) || (astral && /characters long/.test(m)),
  );
}

/** What stops the contract's work (raw-input.guard.ts): its report then names only what the guard found. */
const STOPS_WORK =
  /is a forbidden key \(it names|levels deep|must be a JSON value|must be a finite number|must be a plain object or array/;

/**
 * The messages of a refusal that the Python client can be held to: those of the fields where the
 * contract's first violation is one the client leaves to others (the step graph, a lone surrogate,
 * a length counted in UTF-16 units) are left out on both sides.
 */
function comparable(input: unknown, contract: readonly Violation[], python: readonly Violation[]) {
  const astral = hasAstral(input);
  const left = new Set(
    contract
      .filter(
        (v) => GRAPH.test(v.message) || SURROGATE.test(v.message) || (astral && /characters long/.test(v.message)),
      )
      .map((v) => v.path),
  );
  const keep = (vs: readonly Violation[]) => messageSet(vs.filter((v) => !left.has(v.path)).map((v) => v.message));
  return { contract: keep(contract), python: keep(python) };
}

/** Paths named more than once. */
function repeatedPaths(violations: readonly Violation[]): string[] {
  const seen = new Set<string>();
  return violations.filter((v) => seen.has(v.path) || !seen.add(v.path)).map((v) => v.path);
}

// ----------------------------------------------------------------------------- the test

interface Verdicts {
  entry: Entry;
  contract: ParseResult;
  /** the JSON round trip of the input, what a client in another language sends */
  text: string | undefined;
  contractOfText?: Violation[];
  schema?: boolean;
  python?: Violation[];
}

describe('the contract corpus: every entry point on the same valid and broken events', () => {
  let verdicts: Verdicts[];

  beforeAll(() => {
    const corpus = buildCorpus();
    verdicts = corpus.map((entry) => {
      let text: string | undefined;
      try {
        text = JSON.stringify(entry.input);
      } catch {
        text = undefined;
      }
      return { entry, contract: parsePlanEvent(entry.input), text };
    });
    const validate = compileSchema();
    const withText = verdicts.filter((v) => v.text !== undefined);
    const python = pythonViolations(withText.map((v) => v.text!));
    withText.forEach((v, i) => {
      const input = JSON.parse(v.text!) as unknown;
      v.contractOfText = violationsOf(parsePlanEvent(input));
      v.schema = validate(input);
      v.python = python[i];
    });
  });

  it('is large, and holds both verdicts of every kind', () => {
    expect(verdicts.length).toBeGreaterThan(20_000);
    expect(verdicts.filter((v) => v.contract.ok).length).toBeGreaterThan(1_000);
    expect(verdicts.filter((v) => !v.contract.ok).length).toBeGreaterThan(15_000);
  });

  it("gives parsePlanEvent's recorded verdicts and messages (a digest of the whole listing)", () => {
    const listing = verdicts
      .map(({ entry, contract, schema }) => {
        const verdict = contract.ok
          ? `ok ${JSON.stringify(contract.event)}`
          : `no ${JSON.stringify(messagesOf(contract))}`;
        return `${entry.label}\t${verdict}\tschema:${schema ?? '-'}`;
      })
      .join('\n');
    if (process.env.CORPUS_DUMP) fs.writeFileSync(process.env.CORPUS_DUMP, `${listing}\n`);
    expect(createHash('sha256').update(listing).digest('hex')).toBe(CORPUS_DIGEST);
  });

  it("checkStoredEvent (the worker, plan-ledger serve) returns exactly parsePlanEvent's result", () => {
    const differ: string[] = [];
    for (const { entry, contract } of verdicts) {
      const stored = checkStoredEvent(entry.input);
      if (JSON.stringify(stored) !== JSON.stringify(contract) && differ.length < 5)
        differ.push(`${entry.label}: ${JSON.stringify(messagesOf(stored))} vs ${JSON.stringify(messagesOf(contract))}`);
    }
    expect(differ).toEqual([]);
  });

  it("the publisher's fast check names what parsePlanEvent names", () => {
    const differ: string[] = [];
    let compared = 0;
    for (const { entry, contract: result } of verdicts) {
      // A field beside the envelope's is not in the stamped event the contract would see.
      if (Object.keys(entry.input).some((k) => !ENVELOPE.has(k))) continue;
      compared++;
      const fast = messageSet(publishVerdict(entry.input).map((v) => v.message));
      const contract = contractOfStamped(entry.input, result);
      if (JSON.stringify(fast) !== JSON.stringify(contract) && differ.length < 5)
        differ.push(`${entry.label}: fast ${JSON.stringify(fast)} vs contract ${JSON.stringify(contract)}`);
    }
    expect(differ).toEqual([]);
    expect(compared).toBeGreaterThan(20_000);
  });

  it("the JSON Schema (schemas/, ajv) gives parsePlanEvent's verdict, except for what it lists as checked elsewhere", () => {
    const differ: string[] = [];
    let beyond = 0;
    for (const { entry, contractOfText, schema } of verdicts) {
      if (contractOfText === undefined) continue;
      const valid = contractOfText.length === 0;
      if (valid === schema) continue;
      if (
        !valid &&
        schema &&
        beyondSchema(
          entry.input,
          contractOfText.map((v) => v.message),
        )
      ) {
        beyond++;
        continue;
      }
      if (differ.length < 5)
        differ.push(
          `${entry.label}: schema ${schema ? 'accepts' : 'refuses'}, contract ${JSON.stringify(contractOfText)}`,
        );
    }
    expect(differ).toEqual([]);
    expect(beyond).toBeGreaterThan(0);
  });

  it("the Python client's check_event gives parsePlanEvent's verdict, except for the rules it leaves to its encoder and the server", () => {
    const differ: string[] = [];
    for (const { entry, contractOfText, python } of verdicts) {
      if (contractOfText === undefined || python === undefined) continue;
      const valid = contractOfText.length === 0;
      const messages = contractOfText.map((v) => v.message);
      if (valid === (python.length === 0)) continue;
      if (!valid && python.length === 0 && beyondPython(entry.input, messages)) continue;
      if (differ.length < 5)
        differ.push(`${entry.label}: python ${JSON.stringify(python)}, contract ${JSON.stringify(messages)}`);
    }
    expect(differ).toEqual([]);
  });

  it("the Python client's check_event names what parsePlanEvent names (all of it, when the contract's guard stopped early)", () => {
    const differ: string[] = [];
    let compared = 0;
    for (const { entry, contractOfText, python } of verdicts) {
      if (contractOfText === undefined || python === undefined || contractOfText.length === 0 || python.length === 0)
        continue;
      const both = comparable(entry.input, contractOfText, python);
      const stopped = contractOfText.some((v) => STOPS_WORK.test(v.message));
      const agree = stopped
        ? both.contract.every((m) => both.python.includes(m))
        : JSON.stringify(both.contract) === JSON.stringify(both.python);
      compared++;
      if (!agree && differ.length < 5)
        differ.push(`${entry.label}: python ${JSON.stringify(both.python)}, contract ${JSON.stringify(both.contract)}`);
    }
    expect(differ).toEqual([]);
    expect(compared).toBeGreaterThan(15_000);
  });

  it('names each field at most once, at every entry point (the first rule it breaks)', () => {
    const repeated: string[] = [];
    for (const { entry, contract, python } of verdicts) {
      const found = [
        ...repeatedPaths(violationsOf(contract)),
        ...repeatedPaths(publishVerdict(entry.input)),
        ...repeatedPaths(python ?? []),
      ];
      if (found.length > 0 && repeated.length < 5) repeated.push(`${entry.label}: ${found.join(', ')}`);
    }
    expect(repeated).toEqual([]);
  });
});

const ENVELOPE = new Set(['specVersion', 'eventId', 'type', 'planId', 'sessionId', 'seq', 'occurredAt', 'payload']);
