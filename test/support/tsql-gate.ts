import * as path from 'node:path';
import { Worker } from 'node:worker_threads';

/**
 * A T-SQL syntax gate for statements recorded without a server: each statement must parse in two
 * T-SQL parsers built apart, sqlparser-rs's SQL Server dialect and the ANTLR T-SQL grammar (each
 * after the allow-list's named rewrites of documented T-SQL that parser lacks), so a construct one
 * of them accepts wrongly is refused by the other; and sqlparser-rs's syntax tree is searched for
 * constructs of other databases that it accepts anyway (it is lenient: it takes LIMIT, ON
 * CONFLICT, `$1` in its SQL Server dialect).
 */

/** One parsed statement list (the parser's syntax tree, as JSON), or the parser's error. */
export type ParseResult = { ast: unknown[] } | { error: string };

/** What the ANTLR T-SQL grammar says of one statement: it parses, or its first syntax error. */
export type SecondParseResult = { ok: true } | { error: string };

/** The two parsers of the gate. */
export type ParserName = 'sqlparser-rs' | 'ANTLR T-SQL grammar';
export const PARSERS: readonly ParserName[] = ['sqlparser-rs', 'ANTLR T-SQL grammar'];

/** A parser running in a worker thread: a list of statements in, one result per statement out. */
class ParserWorker<R> {
  private readonly worker: Worker;
  private next = 0;

  constructor(file: string) {
    this.worker = new Worker(path.join(__dirname, file));
  }

  parse(sqls: string[]): Promise<R[]> {
    const id = this.next++;
    return new Promise((resolve, reject) => {
      const onMessage = (m: { id: number; results?: R[]; failure?: string }) => {
        if (m.id !== id) return;
        this.worker.off('message', onMessage).off('error', reject);
        if (m.results) resolve(m.results);
        else reject(new Error(`T-SQL parser: ${m.failure}`));
      };
      this.worker.on('message', onMessage).once('error', reject);
      this.worker.postMessage({ id, sqls });
    });
  }

  close(): Promise<number> {
    return this.worker.terminate();
  }
}

/**
 * The gate's two parsers, each in a worker thread (tsql-parser.worker.js and tsql-antlr.worker.js
 * say why). The second one starts on its first use.
 */
export class TsqlParser {
  private readonly first = new ParserWorker<ParseResult>('tsql-parser.worker.js');
  private antlr?: ParserWorker<SecondParseResult>;

  /** sqlparser-rs's SQL Server dialect: its syntax tree, or its error. */
  parse(sqls: string[]): Promise<ParseResult[]> {
    return this.first.parse(sqls);
  }

  /** The ANTLR T-SQL grammar: whether each statement parses. */
  parseSecond(sqls: string[]): Promise<SecondParseResult[]> {
    this.antlr ??= new ParserWorker<SecondParseResult>('tsql-antlr.worker.js');
    return this.antlr.parse(sqls);
  }

  async close(): Promise<void> {
    await Promise.all([this.first.close(), this.antlr?.close()]);
  }
}

/**
 * Runs `rewrite` on `sql` with its string literals (`'...'`, `N'...'`) and bracketed identifiers
 * (`[...]`) masked, so no rewrite can match inside them; they are put back afterwards.
 */
export function outsideLiterals(sql: string, rewrite: (masked: string) => string): string {
  const kept: string[] = [];
  const masked = sql.replace(/N?'(?:[^']|'')*'|\[(?:[^\]]|\]\])*\]/g, (m) => {
    kept.push(m);
    return m.startsWith('[') ? `[#${kept.length - 1}]` : `'#${kept.length - 1}'`;
  });
  return rewrite(masked).replace(
    /'#(\d+)'|\[#(\d+)\]/g,
    (_, a: string | undefined, b: string | undefined) => kept[Number(a ?? b)],
  );
}

/** Top-level positions of `char` in `sql` (outside parentheses and double-quoted identifiers). */
function topLevel(sql: string, char: string): number[] {
  const at: number[] = [];
  let depth = 0;
  let quoted = false;
  for (let i = 0; i < sql.length; i++) {
    const c = sql[i];
    if (c === '"') quoted = !quoted;
    else if (quoted) continue;
    else if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (c === char && depth === 0) at.push(i);
  }
  return at;
}

/**
 * A documented T-SQL construct a parser lacks, rewritten before that parser reads the statement
 * into one it has (or removed) so that the rest of the statement is still parsed. By construct,
 * never by statement; the other parser reads the statement as it is sent.
 */
export interface AllowedConstruct {
  name: string;
  /** The T-SQL feature, in one line. */
  reason: string;
  /** The parsers that lack it (each must refuse a recorded statement without the rewrite). */
  lackedBy: readonly ParserName[];
  /** The statement rewritten (string literals and bracketed identifiers masked), or unchanged. */
  rewrite(masked: string): string;
}

const SQLPARSER: readonly ParserName[] = ['sqlparser-rs'];
const QID = '"[^"]+"';

export const ALLOWED_CONSTRUCTS: readonly AllowedConstruct[] = [
  {
    name: 'table hint on a MERGE target',
    reason:
      'MERGE INTO t WITH (HOLDLOCK) takes serializable key-range locks on the target; sqlparser-rs reads no table hint after MERGE INTO',
    lackedBy: SQLPARSER,
    rewrite: (s) => s.replace(new RegExp(`^MERGE INTO (${QID}) WITH \\(HOLDLOCK\\) AS `), 'MERGE INTO $1 AS '),
  },
  {
    name: 'ALTER COLUMN with a full column definition',
    reason:
      'T-SQL ALTER TABLE ... ALTER COLUMN restates the type, COLLATE and NULL or NOT NULL (there is no SET DATA TYPE); parsed as the same column definition under ADD',
    lackedBy: SQLPARSER,
    rewrite: (s) =>
      s.replace(
        new RegExp(`^ALTER TABLE (${QID}) ALTER COLUMN (${QID}) (?!SET |DROP |TYPE )`),
        'ALTER TABLE $1 ADD $2 ',
      ),
  },
  {
    name: 'several columns after one ADD',
    reason:
      'T-SQL ALTER TABLE t ADD a ..., b ... adds every column of the comma list; sqlparser-rs wants ADD before each column',
    lackedBy: SQLPARSER,
    rewrite: (s) => {
      if (!new RegExp(`^ALTER TABLE ${QID} ADD (?!CONSTRAINT )`).test(s)) return s;
      const commas = topLevel(s, ',');
      let out = s;
      for (const at of commas.reverse()) out = `${out.slice(0, at + 1)} ADD${out.slice(at + 1)}`;
      return out;
    },
  },
  {
    name: 'named DEFAULT constraint for a column',
    reason:
      'T-SQL ALTER TABLE t ADD CONSTRAINT name DEFAULT expr FOR column names a column default as a constraint; parsed as the column default it sets',
    lackedBy: SQLPARSER,
    rewrite: (s) =>
      s.replace(
        new RegExp(`^ALTER TABLE (${QID}) ADD CONSTRAINT ${QID} DEFAULT (.+) FOR (${QID})$`),
        'ALTER TABLE $1 ALTER COLUMN $3 SET DEFAULT $2',
      ),
  },
  {
    name: 'computed column',
    reason:
      'T-SQL ALTER TABLE t ADD c AS (expr) adds a computed column, typed by its expression; sqlparser-rs wants a type first: parsed as a generated bigint column of the same expression',
    lackedBy: SQLPARSER,
    rewrite: (s) =>
      s.replace(
        new RegExp(`^ALTER TABLE (${QID}) ADD (${QID}) AS \\(`),
        'ALTER TABLE $1 ADD $2 BIGINT GENERATED ALWAYS AS (',
      ),
  },
  {
    name: 'CREATE CLUSTERED INDEX',
    reason:
      'T-SQL CREATE CLUSTERED INDEX stores the table in the index key order; sqlparser-rs knows CREATE INDEX only',
    lackedBy: SQLPARSER,
    rewrite: (s) => s.replace(/^CREATE CLUSTERED INDEX /, 'CREATE INDEX '),
  },
  {
    name: 'COLLATE on an OPENJSON WITH column',
    reason:
      "T-SQL OPENJSON(...) WITH (name type COLLATE collation 'path') sets the collation of a column it reads (else the database's default); neither parser reads COLLATE there",
    lackedBy: PARSERS,
    // a COLLATE right before a string literal only occurs in an OPENJSON WITH column
    rewrite: (s) => s.replace(/ COLLATE \w+(?= '#\d+')/g, ''),
  },
  {
    name: "EXEC's return code into a variable",
    reason:
      'T-SQL EXEC @r = procedure keeps the return code of a stored procedure (sp_getapplock reports the lock with it); sqlparser-rs knows EXEC procedure only',
    lackedBy: SQLPARSER,
    rewrite: (s) => s.replace(/\bEXEC @\w+ = /g, 'EXEC '),
  },
];

/**
 * Statements a parser cannot read even after the allow-list, by a stable shape, with the reason
 * each is valid T-SQL. Each entry must still match a recorded statement.
 */
export interface UnparsedStatement {
  name: string;
  reason: string;
  /** The parser that cannot read it; the other must. */
  parser: ParserName;
  matches(sql: string): boolean;
}

export const UNPARSED_STATEMENTS: readonly UnparsedStatement[] = [];

/** A construct of another database, found in a parsed statement's syntax tree. */
export interface ForbiddenConstruct {
  name: string;
  /** What T-SQL says instead. */
  reason: string;
  /** Whether this node (an object of the syntax tree, under its key) is the construct. */
  found(key: string, node: unknown): boolean;
}

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj | undefined =>
  v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : undefined;
/** A query (a statement's, a subquery's, an INSERT's source): the node with a body and the clauses after it. */
const query = (node: unknown) => {
  const q = obj(node);
  return q && 'body' in q && 'pipe_operators' in q ? q : undefined;
};
/** A query's OFFSET (`limit_clause.LimitOffset.offset`). */
const offsetOf = (q: Obj) => obj(obj(q.limit_clause)?.LimitOffset)?.offset;
/** An optional clause of the syntax tree that is there (absent ones are left out, or null). */
const present = (v: unknown) => v !== undefined && v !== null;

export const FORBIDDEN_CONSTRUCTS: readonly ForbiddenConstruct[] = [
  {
    name: 'LIMIT',
    reason: 'T-SQL limits rows with TOP (n) or OFFSET ... ROWS FETCH NEXT ... ROWS ONLY',
    found: (key, node) => key === 'OffsetCommaLimit' || (key === 'LimitOffset' && present(obj(node)?.limit)),
  },
  {
    name: 'upsert clause on INSERT',
    reason: 'T-SQL has no ON CONFLICT, ON DUPLICATE KEY UPDATE or INSERT OR REPLACE/IGNORE; it upserts with MERGE',
    found: (key, node) =>
      key === 'OnConflict' || key === 'DuplicateKeyUpdate' || (key === 'or' && typeof node === 'string'),
  },
  {
    name: 'positional or colon placeholder',
    reason:
      "T-SQL parameters are @name (the driver sends @0, @1, ...); $1, ? and :name are other drivers' placeholders",
    found: (key) => key === 'Placeholder',
  },
  {
    name: 'ANY/ALL over an array',
    reason: 'T-SQL compares with ANY/ALL over a subquery only; a list goes in IN (...) or OPENJSON',
    found: (key, node) => (key === 'AnyOp' || key === 'AllOp') && !present(obj(obj(node)?.right)?.Subquery),
  },
  {
    name: 'RETURNING',
    reason: 'T-SQL returns written rows with OUTPUT',
    // INSERT, UPDATE and DELETE hold it as `returning`, MERGE as `output: { Returning }`
    found: (key, node) => (key === 'returning' && Array.isArray(node)) || key === 'Returning',
  },
  {
    name: 'ILIKE',
    reason: 'T-SQL has LIKE only; case follows the collation',
    found: (key) => key === 'ILike',
  },
  {
    name: ':: cast',
    reason: 'T-SQL casts with CAST(x AS type) or CONVERT',
    found: (key, node) => key === 'Cast' && obj(node)?.kind === 'DoubleColon',
  },
  {
    name: 'FOR UPDATE / FOR SHARE',
    reason: 'T-SQL locks with table hints (WITH (UPDLOCK, ROWLOCK)), not a locking clause',
    found: (key, node) => key === 'locks' && Array.isArray(node) && node.length > 0,
  },
  {
    name: 'TRUE/FALSE literal',
    reason: 'T-SQL has no boolean literals or IS TRUE: bit columns compare with 1 and 0',
    found: (key, node) =>
      ['IsTrue', 'IsNotTrue', 'IsFalse', 'IsNotFalse'].includes(key) ||
      (key === 'value' && present(obj(node)?.Boolean)) ||
      (key === 'Identifier' &&
        !present(obj(node)?.quote_style) &&
        /^(true|false)$/i.test(String(obj(node)?.value ?? ''))),
  },
  {
    name: '|| concatenation',
    reason: 'T-SQL concatenates with + or CONCAT()',
    found: (key, node) => key === 'BinaryOp' && obj(node)?.op === 'StringConcat',
  },
  {
    name: 'OFFSET without ORDER BY',
    reason: 'T-SQL accepts OFFSET ... FETCH only after an ORDER BY',
    found: (_, node) => {
      const q = query(node);
      return q !== undefined && (present(offsetOf(q)) || present(q.fetch)) && !present(q.order_by);
    },
  },
  {
    name: 'OFFSET without ROWS',
    reason: 'T-SQL spells the offset OFFSET n ROWS (or ROW)',
    found: (key, node) => key === 'offset' && obj(node)?.rows === 'None',
  },
  {
    name: 'FETCH without OFFSET',
    reason: 'T-SQL accepts FETCH NEXT only after OFFSET n ROWS',
    found: (_, node) => {
      const q = query(node);
      return q !== undefined && present(q.fetch) && !present(offsetOf(q));
    },
  },
  {
    name: 'NULLS FIRST / NULLS LAST',
    reason: 'T-SQL sorts NULL first ascending and last descending, and has no NULLS clause',
    found: (key, node) => key === 'nulls_first' && typeof node === 'boolean',
  },
];

/** Names of the forbidden constructs anywhere in a syntax tree (each once). */
export function forbiddenIn(ast: unknown): string[] {
  const hits = new Set<string>();
  const visit = (key: string, node: unknown) => {
    for (const rule of FORBIDDEN_CONSTRUCTS) if (rule.found(key, node)) hits.add(rule.name);
    if (Array.isArray(node)) for (const item of node) visit(key, item);
    else if (node !== null && typeof node === 'object')
      for (const [k, v] of Object.entries(node as Obj)) if (k !== 'span') visit(k, v);
  };
  visit('', ast);
  return [...hits];
}

/** A statement rewritten for one parser by the allow-list entries that parser lacks. */
function rewriteFor(parser: ParserName, sql: string, skip?: string): { parsed: string; allowed: string[] } {
  const allowed: string[] = [];
  const parsed = outsideLiterals(sql, (masked) =>
    ALLOWED_CONSTRUCTS.filter((entry) => entry.lackedBy.includes(parser) && entry.name !== skip).reduce(
      (text, entry) => {
        const out = entry.rewrite(text);
        if (out !== text) allowed.push(entry.name);
        return out;
      },
      masked,
    ),
  );
  return { parsed, allowed };
}

/** What the ANTLR T-SQL grammar says of one statement. */
export interface SecondVerdict {
  /** The text parsed: `sql` after the rewrites of the entries it lacks. */
  parsed: string;
  allowed: string[];
  /** Its syntax error, unless the statement is listed in UNPARSED_STATEMENTS for it. */
  parseError?: string;
  unparsed?: string;
}

/** What the gate says of one statement. */
export interface Verdict {
  sql: string;
  /** The text sqlparser-rs parsed: `sql` after the rewrites of the entries it lacks. */
  parsed: string;
  /** Allow-list entries that rewrote it for sqlparser-rs. */
  allowed: string[];
  /** sqlparser-rs's error, unless the statement is listed in UNPARSED_STATEMENTS for it. */
  parseError?: string;
  /** The UNPARSED_STATEMENTS entry it matched, when sqlparser-rs could not read it. */
  unparsed?: string;
  /** Forbidden constructs found in it. */
  forbidden: string[];
  /** sqlparser-rs's syntax tree of `parsed`, when it parsed. */
  ast?: unknown[];
  /** The second parser's verdict. */
  second: SecondVerdict;
}

export const passes = (v: Verdict) =>
  v.parseError === undefined && v.second.parseError === undefined && v.forbidden.length === 0;

const unparsedBy = (parser: ParserName, sql: string) =>
  UNPARSED_STATEMENTS.find((u) => u.parser === parser && u.matches(sql))?.name;

/** Each statement through the ANTLR T-SQL grammar, after the rewrites it needs (less `skip`). */
export async function judgeSecond(parser: TsqlParser, sqls: string[], skip?: string): Promise<SecondVerdict[]> {
  const prepared = sqls.map((sql) => rewriteFor('ANTLR T-SQL grammar', sql, skip));
  const results = await parser.parseSecond(prepared.map((p) => p.parsed));
  return prepared.map((p, i) => {
    const r = results[i];
    if ('ok' in r) return p;
    const unparsed = unparsedBy('ANTLR T-SQL grammar', sqls[i]);
    return unparsed ? { ...p, unparsed } : { ...p, parseError: r.error };
  });
}

/**
 * Rewrite by the allow-list, parse in both parsers, and search sqlparser-rs's syntax tree for
 * forbidden constructs, every statement at once. `skip` names an allow-list entry to leave out
 * (to show that a parser needs it).
 */
export async function judge(parser: TsqlParser, sqls: string[], options: { skip?: string } = {}): Promise<Verdict[]> {
  const prepared = sqls.map((sql) => ({ sql, ...rewriteFor('sqlparser-rs', sql, options.skip) }));
  const [results, seconds] = await Promise.all([
    parser.parse(prepared.map((p) => p.parsed)),
    judgeSecond(parser, sqls, options.skip),
  ]);
  return prepared.map((p, i): Verdict => {
    const r = results[i];
    const second = seconds[i];
    if ('ast' in r) return { ...p, forbidden: forbiddenIn(r.ast), ast: r.ast, second };
    const unparsed = unparsedBy('sqlparser-rs', p.sql);
    return unparsed ? { ...p, unparsed, forbidden: [], second } : { ...p, parseError: r.error, forbidden: [], second };
  });
}
