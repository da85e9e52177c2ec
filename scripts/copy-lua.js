#!/usr/bin/env node
'use strict';
// Copies the Lua scripts under src/ (which tsc does not emit) into <outDir>/src, keeping their
// folders: `node scripts/copy-lua.js dist`. Used by `npm run build` and by the benchmarks' builds.
const fs = require('node:fs');
const path = require('node:path');

const out = process.argv[2];
if (!out) {
  process.stderr.write('usage: node scripts/copy-lua.js <outDir>\n');
  process.exit(2);
}
const root = path.join(__dirname, '..');
fs.cpSync(path.join(root, 'src'), path.join(path.resolve(root, out), 'src'), {
  recursive: true,
  filter: (f) => f.endsWith('.lua') || fs.statSync(f).isDirectory(),
});
