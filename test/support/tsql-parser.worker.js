'use strict';
// The T-SQL parser (sqlparser-rs compiled to WebAssembly) in a worker thread: its package loads the
// WebAssembly glue with a dynamic import(), which Jest's module sandbox refuses without
// --experimental-vm-modules. A worker thread runs outside that sandbox. Messages in:
// { id, sqls: string[] }; out: { id, results: Array<{ ast } | { error }> } (mssql dialect).
const { parentPort } = require('node:worker_threads');
const parser = require('@guanmingchiu/sqlparser-ts');

const ready = parser.init();

parentPort.on('message', async ({ id, sqls }) => {
  try {
    await ready;
    const results = sqls.map((sql) => {
      try {
        return { ast: parser.parse(sql, 'mssql') };
      } catch (err) {
        return { error: String(err && err.message ? err.message : err) };
      }
    });
    parentPort.postMessage({ id, results });
  } catch (err) {
    parentPort.postMessage({ id, failure: String(err && err.message ? err.message : err) });
  }
});
