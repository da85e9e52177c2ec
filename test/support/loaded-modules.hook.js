'use strict';
// Preloaded into a CLI child process (NODE_OPTIONS=--require ...): when the process exits, writes the
// files it loaded (require.cache) as a JSON array to LOADED_MODULES_FILE. test/cli/cli-startup.cli.test.ts
// uses it to check which packages a command loads.
const fs = require('node:fs');

process.on('exit', () => {
  if (process.env.LOADED_MODULES_FILE)
    fs.writeFileSync(process.env.LOADED_MODULES_FILE, JSON.stringify(Object.keys(require.cache)));
});
