#!/usr/bin/env node
'use strict';
// Runs the compiled CLI (built by `npm ci` through the `prepare` script). PLAN_LEDGER_FROM_SOURCE=1
// runs the TypeScript sources through tsx instead: the npm scripts and the tests use it, so they
// never run a stale build.
const { existsSync } = require('node:fs');
const path = require('node:path');

const built = path.join(__dirname, '..', 'dist', 'src', 'cli', 'main.js');
if (process.env.PLAN_LEDGER_FROM_SOURCE !== '1' && existsSync(built)) {
  require(built).main(process.argv);
} else {
  require('tsx/cjs');
  require(path.join(__dirname, '..', 'src', 'cli', 'main.ts')).main(process.argv);
}
