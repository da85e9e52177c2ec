import * as fs from 'node:fs';
import * as path from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { parsePlanEvent, PLAN_EVENT_TYPES } from '../../src/contracts';
import { schemaFiles } from '../../src/contracts/json-schema';

const SCHEMAS = path.join(__dirname, '..', '..', 'schemas');
const readJson = (rel: string) => JSON.parse(fs.readFileSync(path.join(SCHEMAS, rel), 'utf8'));

function compile(rel: string) {
  const ajv = new Ajv2020({ allErrors: false, strict: true, strictTypes: false, unicodeRegExp: true });
  ajv.addKeyword('x-plan-ledger-also-checked');
  addFormats(ajv, ['date-time']);
  return ajv.compile(readJson(rel));
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
});
