import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { BASE_EVENTS, fieldPaths, MutationMode, mutate, show, TRICKY_VALUES } from '../support/event-mutations';

const SCHEMAS = path.join(__dirname, '..', '..', 'schemas');
const MIRROR = path.join(__dirname, 'python', 'mirror-verdicts.py');

function compile(rel: string) {
  const ajv = new Ajv2020({ allErrors: false, strict: true, strictTypes: false, unicodeRegExp: true });
  ajv.addKeyword('x-plan-ledger-also-checked');
  addFormats(ajv, ['date-time']);
  return ajv.compile(JSON.parse(fs.readFileSync(path.join(SCHEMAS, rel), 'utf8')));
}

/** The corpus of json-schema.agreement.test.ts: every event, and one of each type with each field mutated. */
function corpus(): unknown[] {
  const values = TRICKY_VALUES.filter(
    (v) =>
      v !== undefined &&
      typeof v !== 'function' &&
      !(v instanceof Date) &&
      !(typeof v === 'number' && !Number.isFinite(v)) &&
      !(typeof v === 'object' && v !== null && Object.getPrototypeOf(v) === null),
  );
  const seen = new Set<string>();
  const bases = BASE_EVENTS.filter((e) => {
    const kind = `${e.type}:${(e.payload as { decision?: string }).decision ?? ''}`;
    return !seen.has(kind) && seen.add(kind) !== undefined;
  });
  const out: unknown[] = [...BASE_EVENTS];
  for (const event of bases) {
    for (const p of fieldPaths(event)) {
      out.push(mutate(event, p, undefined, 'delete'));
      for (const value of values)
        for (const mode of ['set', 'add'] as MutationMode[]) out.push(mutate(event, p, value, mode));
    }
  }
  return out;
}

/**
 * Inputs where Python and JavaScript tend to differ: regex anchors and digit classes, the date-time
 * format's calendar and leap second, text that is not well-formed UTF-16, numbers at type edges.
 */
function pythonEdges(): unknown[] {
  const [created] = BASE_EVENTS;
  const set = (p: (string | number)[], v: unknown) => mutate(created, p, v, 'set');
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

describe("the Python client's contract mirror (clients/python/plan_ledger/_contract.py)", () => {
  it("gives the JSON Schema's verdict (ajv) on the corpus of valid and broken events, and on edges where Python differs", () => {
    const validate = compile('plan-event.schema.json');
    // JSON round trip: what the Python client reads and sends
    const inputs = [...corpus(), ...pythonEdges()].map((c) => JSON.stringify(c));
    const run = spawnSync('python3', [MIRROR], {
      input: `${inputs.join('\n')}\n`,
      encoding: 'utf8',
      maxBuffer: 64 << 20,
    });
    expect({ status: run.status, stderr: run.stderr }).toEqual({ status: 0, stderr: '' });
    const verdicts = run.stdout.trimEnd().split('\n');
    expect(verdicts).toHaveLength(inputs.length);
    let valid = 0;
    const disagreements: string[] = [];
    inputs.forEach((text, i) => {
      const input = JSON.parse(text) as unknown;
      const bySchema = validate(input);
      const byMirror = verdicts[i] === '1';
      if (bySchema) valid++;
      if (bySchema !== byMirror && disagreements.length < 5) {
        disagreements.push(
          `schema ${bySchema ? 'accepts' : 'rejects'}, mirror ${byMirror ? 'accepts' : `rejects (${verdicts[i]})`}: ${show(input).slice(0, 400)} ${JSON.stringify(validate.errors?.slice(0, 2))}`,
        );
      }
    });
    expect(disagreements).toEqual([]);
    expect(inputs.length).toBeGreaterThan(5_000);
    expect(valid).toBeGreaterThan(200);
  });
});
