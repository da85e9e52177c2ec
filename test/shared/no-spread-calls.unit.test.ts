import * as fs from 'node:fs';
import * as path from 'node:path';
import * as ts from 'typescript';
import { pushAll } from '../../src/shared/arrays';

/**
 * No unbounded spreads into calls. `Math.max(...xs)`, `out.push(...xs)` and the like pass every
 * element as an argument, and past ~120k of them V8 throws `RangeError: Maximum call stack size
 * exceeded` (`analytics tokens` did at 200k plans). Use a loop, `reduce` or `pushAll`
 * (src/shared/arrays.ts). Spreads into array literals (`[...a, ...b]`) iterate and are fine.
 */
const ROOTS = ['src', 'bench'].map((dir) => path.join(__dirname, '..', '..', dir));

/** Callees whose spread arguments are (or usually are) arrays of data. */
const METHODS = new Set(['max', 'min', 'push', 'unshift', 'splice', 'fromCharCode', 'fromCodePoint']);

function tsFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return tsFiles(full);
    return e.name.endsWith('.ts') ? [full] : [];
  });
}

/** `file:line: call` for every call to one of METHODS with a spread argument. */
function spreadCalls(fileName: string, text: string): string[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (
      ts.isCallExpression(node) &&
      ts.isPropertyAccessExpression(node.expression) &&
      METHODS.has(node.expression.name.text) &&
      node.arguments.some(ts.isSpreadElement)
    ) {
      const line = source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
      found.push(`${fileName}:${line}: ${node.getText(source).replace(/\s+/g, ' ').slice(0, 100)}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe('no spread of an array into a call', () => {
  it('finds such calls wherever the spread stands, and nothing in comments, strings or array literals', () => {
    const sample = [
      'const a = Math.max(h.length, ...rows.map((r) => r.length));',
      'out.push(...items);',
      'lines.unshift("x", ...more);',
      'String.fromCharCode(...codes);',
      'const b = Math.min(1, 2);',
      'const c = [...a, ...b];',
      'log({ ...details });',
      '// out.push(...items) in a comment',
      'const s = "Math.max(...xs)";',
    ].join('\n');
    expect(spreadCalls('sample.ts', sample).map((f) => f.split(': ')[0])).toEqual([
      'sample.ts:1',
      'sample.ts:2',
      'sample.ts:3',
      'sample.ts:4',
    ]);
  });

  it('src/ and bench/ have none', () => {
    const root = path.join(__dirname, '..', '..');
    const found = ROOTS.flatMap(tsFiles).flatMap((file) =>
      spreadCalls(path.relative(root, file), fs.readFileSync(file, 'utf8')),
    );
    expect(found).toEqual([]);
  });

  it('pushAll appends more elements than a spread could pass', () => {
    const target = [-1];
    const items = Array.from({ length: 300_000 }, (_, i) => i);
    expect(pushAll(target, items)).toBe(target);
    expect(target).toHaveLength(300_001);
    expect(target[300_000]).toBe(299_999);
  });
});
