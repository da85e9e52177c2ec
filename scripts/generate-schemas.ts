/**
 * Writes schemas/ (the contract as JSON Schema) from src/contracts/json-schema.ts, plus one example
 * event per type under schemas/examples/. `npm run schemas`; test/contracts/json-schema.test.ts
 * fails when the files differ from what this writes.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { schemaFiles } from '../src/contracts/json-schema';
import { SCHEMA_EXAMPLES } from '../src/contracts/json-schema.examples';

const root = path.join(__dirname, '..', 'schemas');
const write = (rel: string, value: unknown) => {
  const file = path.join(root, rel);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);
};
for (const [rel, schema] of Object.entries(schemaFiles())) write(rel, schema);
for (const [type, event] of Object.entries(SCHEMA_EXAMPLES)) write(`examples/${type}.json`, event);
console.log(
  `wrote ${Object.keys(schemaFiles()).length} schemas and ${Object.keys(SCHEMA_EXAMPLES).length} examples to ${root}`,
);
