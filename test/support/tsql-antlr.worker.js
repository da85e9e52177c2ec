'use strict';
// The second T-SQL parser of the syntax gate: the ANTLR T-SQL grammar (grammars-v4's TSqlParser.g4,
// generated for antlr4ts by the antlr4ts-sql package), in a worker thread so that its first parses,
// which build the parser's prediction tables, run beside the first parser instead of on Jest's
// thread. Messages in: { id, sqls: string[] }; out: { id, results: Array<{ ok: true } | { error }> }.
// A statement parses when the whole text is one or more T-SQL batches (the rule tsql_file, which
// ends at EOF) with no syntax error.
const { parentPort } = require('node:worker_threads');
const { antlr4tsSQL, SQLDialect } = require('antlr4ts-sql');
const { BailErrorStrategy } = require('antlr4ts');
const { PredictionMode } = require('antlr4ts/atn/PredictionMode');

const tsql = new antlr4tsSQL(SQLDialect.TSQL);

/** The text at line:column of `sql` (both as ANTLR counts them: line from 1, column from 0). */
function near(sql, line, column) {
  const lines = sql.split('\n');
  const at = lines.slice(0, line - 1).reduce((n, l) => n + l.length + 1, 0) + column;
  return sql.slice(at, at + 40);
}

/**
 * One parse. SLL prediction with a strategy that stops at the first error is fast and exact for
 * the statements it accepts; a statement it refuses is parsed again with full LL prediction, which
 * alone decides (and reports) a syntax error.
 */
function parseOnce(sql, exact) {
  const errors = [];
  const listener = {
    syntaxError: (_recognizer, _symbol, line, column, msg) => {
      // the generated parser names tokens by number ('<24>'), and their text comes back empty ('')
      const what = String(msg)
        .replace(/ expecting .*$/s, '')
        .replace(/ ?'(<[^>]*>)?'/g, '')
        .replace(/ (at|at input|at:)$/, '');
      const at = near(sql, line, column);
      errors.push(`line ${line}:${column + 1}: ${what} ${at ? `near ${JSON.stringify(at)}` : 'at the end'}`);
    },
  };
  const parser = tsql.getParser(tsql.getTokens(sql, [listener]), [listener]);
  if (!exact) {
    parser.interpreter.setPredictionMode(PredictionMode.SLL);
    parser.errorHandler = new BailErrorStrategy();
  }
  try {
    tsql.getParseTree(parser);
  } catch (err) {
    if (exact) throw err;
    return undefined;
  }
  return errors;
}

function parse(sql) {
  const fast = parseOnce(sql, false);
  const errors = fast && fast.length === 0 ? fast : parseOnce(sql, true);
  return errors.length === 0 ? { ok: true } : { error: errors[0] };
}

parentPort.on('message', ({ id, sqls }) => {
  try {
    const results = sqls.map((sql) => {
      try {
        return parse(sql);
      } catch (err) {
        return { error: String(err && err.message ? err.message : err) };
      }
    });
    parentPort.postMessage({ id, results });
  } catch (err) {
    parentPort.postMessage({ id, failure: String(err && err.message ? err.message : err) });
  }
});
