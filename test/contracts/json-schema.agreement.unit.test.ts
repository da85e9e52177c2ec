import * as fs from 'node:fs';
import * as path from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { parsePlanEvent, PLAN_EVENT_TYPES } from '../../src/contracts';
import { schemaFiles } from '../../src/contracts/json-schema';
import { BASE_EVENTS, fieldPaths, MutationMode, mutate, show, TRICKY_VALUES } from '../support/event-mutations';

const SCHEMAS = path.join(__dirname, '..', '..', 'schemas');
const readJson = (rel: string) => JSON.parse(fs.readFileSync(path.join(SCHEMAS, rel), 'utf8'));

function compile(rel: string) {
  const ajv = new Ajv2020({ allErrors: false, strict: true, strictTypes: false, unicodeRegExp: true });
  ajv.addKeyword('x-plan-ledger-also-checked');
  addFormats(ajv, ['date-time']);
  return ajv.compile(readJson(rel));
}

/**
 * What `parsePlanEvent` checks beyond JSON Schema (the schema lists them in
 * `x-plan-ledger-also-checked`): the step graph, and lengths counted in UTF-16 units.
 */
function beyondSchema(input: unknown, violations: { message: string }[]): boolean {
  const astral = /[\u{10000}-\u{10FFFF}]/u.test(JSON.stringify(input));
  return violations.every(
    (v) =>
      /must name a step of the same list|must be unique within the step list|forms a cycle/.test(v.message) ||
      (astral && /characters long/.test(v.message)),
  );
}

describe('the JSON Schema of the contract (schemas/)', () => {
  it('is exactly what src/contracts/json-schema.ts builds (run `npm run schemas` after changing the contract)', () => {
    for (const [rel, schema] of Object.entries(schemaFiles()))
      expect({ rel, schema: readJson(rel) }).toEqual({ rel, schema });
    expect(fs.readdirSync(path.join(SCHEMAS, 'events')).sort()).toEqual(
      PLAN_EVENT_TYPES.map((t) => `${t}.schema.json`).sort(),
    );
  });

  it('accepts every example, each by its own type schema, the envelope and the plan-event schema, as parsePlanEvent does', () => {
    const any = compile('plan-event.schema.json');
    const envelope = compile('envelope.schema.json');
    for (const type of PLAN_EVENT_TYPES) {
      const example = readJson(`examples/${type}.json`);
      expect({ type, parsed: parsePlanEvent(example).ok }).toEqual({ type, parsed: true });
      const own = compile(`events/${type}.schema.json`);
      expect({ type, own: own(example), any: any(example), envelope: envelope(example) }).toEqual({
        type,
        own: true,
        any: true,
        envelope: true,
      });
      const other = PLAN_EVENT_TYPES.find((t) => t !== type)!;
      expect(compile(`events/${other}.schema.json`)(example)).toBe(false);
    }
  });

  it("gives parsePlanEvent's verdict on a corpus of valid and broken events (every field of every type x edge values x set/delete/add)", () => {
    const validate = compile('plan-event.schema.json');
    const values = TRICKY_VALUES.filter(
      (v) =>
        v !== undefined &&
        typeof v !== 'function' &&
        !(v instanceof Date) &&
        !(typeof v === 'number' && !Number.isFinite(v)) &&
        !(typeof v === 'object' && v !== null && Object.getPrototypeOf(v) === null),
    );
    // one event of each type (and of each decision kind), each field of it mutated
    const seen = new Set<string>();
    const bases = BASE_EVENTS.filter((e) => {
      const kind = `${e.type}:${(e.payload as { decision?: string }).decision ?? ''}`;
      return !seen.has(kind) && seen.add(kind) !== undefined;
    });
    const corpus: unknown[] = [...BASE_EVENTS];
    for (const event of bases) {
      for (const p of fieldPaths(event)) {
        corpus.push(mutate(event, p, undefined, 'delete'));
        for (const value of values)
          for (const mode of ['set', 'add'] as MutationMode[]) corpus.push(mutate(event, p, value, mode));
      }
    }
    // JSON round trip: what a client in another language actually sends
    const inputs = corpus.map((c) => JSON.parse(JSON.stringify(c)) as unknown);
    let valid = 0;
    let beyond = 0;
    const disagreements: string[] = [];
    for (const input of inputs) {
      const parsed = parsePlanEvent(input);
      const bySchema = validate(input);
      if (parsed.ok) valid++;
      if (parsed.ok === bySchema) continue;
      if (!parsed.ok && bySchema && beyondSchema(input, parsed.error.violations)) {
        beyond++;
        continue;
      }
      if (disagreements.length < 5)
        disagreements.push(
          `schema ${bySchema ? 'accepts' : 'rejects'}, parsePlanEvent ${parsed.ok ? 'accepts' : `rejects (${parsed.error.message})`}: ${show(input).slice(0, 400)} ${JSON.stringify(validate.errors?.slice(0, 2))}`,
        );
    }
    expect(disagreements).toEqual([]);
    expect(inputs.length).toBeGreaterThan(5_000);
    expect(valid).toBeGreaterThan(200);
    // the documented exceptions do occur in the corpus (so the predicate above is exercised), but rarely
    expect(beyond).toBeGreaterThan(0);
    expect(beyond).toBeLessThan(inputs.length / 20);
  });

  it("gives parsePlanEvent's verdict on occurredAt at the edges: leap seconds, years before 1000, the last instant", () => {
    const validate = compile('plan-event.schema.json');
    const example = readJson('examples/step.started.json');
    const stamps = [
      '2016-12-31T23:59:60Z',
      '2016-12-31T23:59:60.5+00:00',
      '0999-12-31T23:59:59.999Z',
      '0001-01-01T00:00:00Z',
      '1000-01-01T00:00:00.000Z',
      '9999-12-31T23:59:59.999Z',
      '2024-02-29T12:00:00Z',
      '2100-02-29T12:00:00Z',
    ];
    for (const occurredAt of stamps) {
      const input = { ...example, occurredAt };
      expect({ occurredAt, schema: validate(input) }).toEqual({ occurredAt, schema: parsePlanEvent(input).ok });
    }
  });
});
