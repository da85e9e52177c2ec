#!/usr/bin/env node
'use strict';
// Runs the compiled CLI (built by `npm ci` through the `prepare` script). PLAN_LEDGER_FROM_SOURCE=1
// runs the TypeScript sources through tsx instead: the npm scripts and the tests use it, so they
// never run a stale build.
const path = require('node:path');

// `--version` alone needs nothing but package.json: answer before loading the CLI (~1,250 modules).
const args = process.argv.slice(2);
if (args.length === 1 && (args[0] === '--version' || args[0] === '-V')) {
  process.stdout.write(`${require(path.join(__dirname, '..', 'package.json')).version}\n`);
  return;
}

const { existsSync } = require('node:fs');
const built = path.join(__dirname, '..', 'dist', 'src', 'cli', 'main.js');
if (process.env.PLAN_LEDGER_FROM_SOURCE !== '1' && existsSync(built)) {
  require(built).main(process.argv);
} else {
  require('tsx/cjs');
  require(path.join(__dirname, '..', 'src', 'cli', 'main.ts')).main(process.argv);
}
