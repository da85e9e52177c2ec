/**
 * `npm run generate`: writes what is derived from the contract's declaration
 * (src/contracts/declaration.ts) into the tree: the TypeScript types (src/contracts/types.ts), the
 * JSON Schema (schemas/) and the table the Python client interprets
 * (clients/python/plan_ledger/_contract_table.py). test/contracts/generated-artifacts.unit.test.ts
 * fails when a file differs from what this writes.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { generatedFiles } from './contract/generated-files';

const root = path.join(__dirname, '..');
let changed = 0;
const files = generatedFiles();
for (const [rel, text] of Object.entries(files)) {
  const file = path.join(root, rel);
  if (fs.existsSync(file) && fs.readFileSync(file, 'utf8') === text) continue;
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
  console.log(`wrote ${rel}`);
  changed++;
}
console.log(`${changed} of ${Object.keys(files).length} generated files changed`);
