/**
 * The console shows event text by the CLI's rule: console/text.js (an ES module the browser loads)
 * escapes exactly what escapeControl escapes. The module runs in a real Node process as an ES
 * module, over strings fast-check builds from the characters that matter.
 */
import { execFileSync } from 'node:child_process';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import fc from 'fast-check';
import { escapeControl } from '../../src/shared/terminal-text';

const MODULE = pathToFileURL(path.join(__dirname, '..', '..', 'console', 'text.js')).href;

/** visibleText of each input, computed by the console's module in a Node process of its own. */
function visibleTextOf(inputs: string[]): string[] {
  const script =
    `import { visibleText } from ${JSON.stringify(MODULE)};` +
    `let raw = ''; process.stdin.on('data', (d) => (raw += d));` +
    `process.stdin.on('end', () => process.stdout.write(JSON.stringify(JSON.parse(raw).map(visibleText))));`;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
    input: JSON.stringify(inputs),
    encoding: 'utf8',
  });
  return JSON.parse(out) as string[];
}

const interesting = fc.constantFrom(
  'a',
  'é',
  '\n',
  '\t',
  '\r',
  '\u0000',
  '\u001b',
  '\u007f',
  '\u0085',
  '\u009f',
  '\u00a0',
  '\u200e',
  '\u2028',
  '\u2029',
  '\u202a',
  '\u202e',
  '\u2066',
  '\u2069',
  '\u206a',
  '\ud83d\ude00',
  '\ud800',
);

describe('console/text.js', () => {
  it('escapes what the CLI escapes, and nothing else, for any string', () => {
    const samples = fc.sample(
      fc.oneof(
        fc.string({ unit: 'binary' }),
        fc.array(interesting).map((cs) => cs.join('')),
      ),
      { numRuns: 3_000, seed: 20261125 },
    );
    const inputs = ['\u202egnp.exe', 'plain', '', ...samples];
    const got = visibleTextOf(inputs);
    expect(got).toHaveLength(inputs.length);
    inputs.forEach((input, i) => expect([input, got[i]]).toEqual([input, escapeControl(input)]));
    expect(got[0]).toBe('\\u202egnp.exe');
  });
});
