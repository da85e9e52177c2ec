import * as fs from 'node:fs';
import * as path from 'node:path';
import fc from 'fast-check';
import { argsDigest, canonicalJson, isArgsDigest } from '../../src/contracts/args-digest';

interface Vector {
  input: unknown;
  canonical: string;
  sha256: string;
}

const vectors = JSON.parse(
  fs.readFileSync(path.join(__dirname, '..', 'fixtures', 'args-digest', 'vectors.json'), 'utf8'),
) as Vector[];

describe('argsDigest (canonical JSON, shared with the Python client)', () => {
  it.each(vectors.map((v) => [v.canonical, v]))('gives the shared vector %s', (_name, v) => {
    expect(canonicalJson(v.input)).toBe(v.canonical);
    expect(argsDigest(v.input)).toBe(v.sha256);
    expect(isArgsDigest(v.sha256)).toBe(true);
  });

  it('sorts keys by UTF-16 code units (a character beyond U+FFFF before U+FF61)', () => {
    expect(canonicalJson({ '\uff61': 1, '\u{1f600}': 2 })).toBe('{"\u{1f600}":2,"\uff61":1}');
  });

  it('gives one digest whatever the key order, and reads back as the value', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const shuffled = JSON.parse(JSON.stringify(value, (_k, v: unknown) => reverseKeys(v))) as unknown;
        expect(argsDigest(shuffled)).toBe(argsDigest(value));
        expect(canonicalJson(JSON.parse(canonicalJson(value)))).toBe(canonicalJson(value));
      }),
    );
  });

  it('refuses what JSON cannot say, naming it', () => {
    expect(() => canonicalJson({ n: NaN })).toThrow('canonical JSON has no NaN');
    expect(() => canonicalJson({ f: () => 1 })).toThrow('canonical JSON has no function');
  });
});

function reverseKeys(v: unknown): unknown {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return v;
  return Object.fromEntries(Object.entries(v).reverse());
}
