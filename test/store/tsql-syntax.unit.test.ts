import {
  ALLOWED_CONSTRUCTS,
  FORBIDDEN_CONSTRUCTS,
  judge,
  outsideLiterals,
  PARSERS,
  passes,
  TsqlParser,
  UNPARSED_STATEMENTS,
  type Verdict,
} from '../support/tsql-gate';
import { recordListsOf, recordWorkload, type Section } from '../support/tsql-workload';
import * as queries from '../../src/queries';
import * as eventStatusQueries from '../../src/queries/event-status.query';

/**
 * No SQL Server runs here. Every statement a realistic workload sends to SQL Server is recorded on
 * DataSources that never connect (test/support/tsql-workload.ts), and each distinct one must parse
 * as T-SQL in two parsers built apart (sqlparser-rs's SQL Server dialect and the ANTLR T-SQL
 * grammar, each after the allow-list's rewrites of documented T-SQL it lacks) and contain no
 * construct of another database.
 */

/** What the recording DataSource writes for a transaction: the driver begins and ends one without SQL text. */
const TRANSACTION_MARKERS = new Set(['BEGIN TRANSACTION', 'COMMIT', 'ROLLBACK']);

/** A verdict as the failure messages show it. */
const summary = (v: Verdict) => ({
  sql: v.sql,
  parseError: v.parseError,
  secondParseError: v.second.parseError,
  forbidden: v.forbidden,
});
const passing = (sql: string) => ({ sql, parseError: undefined, secondParseError: undefined, forbidden: [] });

const show = (v: Verdict) =>
  `${v.sql.slice(0, 200)}${v.sql.length > 200 ? '...' : ''}\n  -> ${
    v.parseError ??
    (v.second.parseError && `ANTLR T-SQL grammar: ${v.second.parseError}`) ??
    `forbidden: ${v.forbidden.join(', ')}`
  }`;

/**
 * The lengths of the text columns of each `OPENJSON(...) WITH (...)` in a statement: OPENJSON cuts
 * a longer value to the declared length without a word, where an INSERT of it refuses (Msg 2628).
 */
function openJsonTextLengths(sql: string): string[] {
  const out: string[] = [];
  for (const m of sql.matchAll(/OPENJSON\(@\d+\) WITH \(/g)) {
    const start = m.index + m[0].length;
    let depth = 1;
    let i = start;
    for (; i < sql.length && depth > 0; i++) {
      if (sql[i] === '(') depth++;
      else if (sql[i] === ')') depth--;
    }
    for (const t of sql.slice(start, i - 1).matchAll(/\bnvarchar\((\d+|MAX)\)/gi)) out.push(t[1]);
  }
  return out;
}

describe('T-SQL syntax gate over the statements sent to SQL Server', () => {
  let parser: TsqlParser;
  const failedChecks: string[] = [];
  let sections: Section[];
  let distinct: string[];
  let verdicts: Verdict[];

  beforeAll(async () => {
    parser = new TsqlParser();
    sections = await recordWorkload((what, ok) => {
      if (!ok) failedChecks.push(what);
    });
    distinct = [...new Set(sections.flatMap((s) => s.statements.map((r) => r.sql)))].filter(
      (sql) => !TRANSACTION_MARKERS.has(sql),
    );
    verdicts = await judge(parser, distinct);
  });

  afterAll(() => parser.close());

  it('records a workload that took every path it means to', () => {
    expect(failedChecks).toEqual([]);
  });

  it('calls every read-side query: every async function src/queries exports', () => {
    const reads = Object.entries({ ...queries, ...eventStatusQueries })
      .filter(([, f]) => typeof f === 'function' && f.constructor.name === 'AsyncFunction')
      .map(([name]) => name)
      .sort();
    expect(reads.length).toBeGreaterThan(10);
    expect(sections.find((s) => s.name === 'reads')?.calls?.sort()).toEqual(reads);
  });

  it('records many distinct statements from every part of the workload, of every kind', () => {
    expect(distinct.length).toBeGreaterThanOrEqual(300);
    for (const s of sections) {
      const own = new Set(s.statements.map((r) => r.sql).filter((sql) => !TRANSACTION_MARKERS.has(sql)));
      expect({ section: s.name, enough: own.size >= 20 }).toEqual({ section: s.name, enough: true });
    }
    const kinds: Record<string, RegExp> = {
      'MERGE from OPENJSON': /^MERGE INTO "\w+"( WITH \(HOLDLOCK\))? AS t USING OPENJSON\(@0\)/,
      'INSERT from OPENJSON': /^INSERT INTO "\w+" \(.*\) SELECT .* FROM OPENJSON\(@0\)/,
      'an id list from OPENJSON':
        / IN \(SELECT v FROM OPENJSON\(@0\) WITH \(v nvarchar\(4000\) COLLATE Latin1_General_100_BIN2 '\$'\)\)/,
      DELETE: /^DELETE FROM /,
      UPDATE: /^UPDATE /,
      'the heads lock':
        /^UPDATE "plan_heads" SET "version" = "version" \+ 1 WHERE "plan_id" IN \(SELECT v FROM OPENJSON\(@0\)/,
      'a log page seek': /"e"\."seq" >= @1 AND \("e"\."seq" > @1 OR/,
      'OFFSET/FETCH paging': /ORDER BY .* OFFSET \d+ ROWS FETCH NEXT \d+ ROWS ONLY$/,
      EXISTS: /EXISTS \(SELECT 1 FROM /,
      'GROUP BY': / GROUP BY /,
      'retention: purge scan':
        /FROM "execution_plans" "p" WHERE "p"\."deleted_at" <= @0 AND NOT EXISTS \(SELECT 1 FROM "execution_plans" "f" WHERE "f"\."parent_plan_id" = "p"\."id"\) ORDER BY "p"\."created_at" ASC, "p"\."id" ASC OFFSET/,
      'retention: retire scan': /"p"\."completed_at" AS "endedAt" FROM "execution_plans" "p" LEFT JOIN "plan_heads"/,
      'retention: orphan scan': /"p"\."id" AS "planRow" FROM "plan_heads" "h" LEFT JOIN "execution_plans"/,
      'retention: DAG scan': /AS "dagDeletedAt".* FROM "workflow_dags" "d" INNER JOIN "execution_plans"/,
      'retention: DAGs kept for live forks':
        /^SELECT DISTINCT "f"\."parent_plan_id" AS "id" FROM "execution_plans" "f" WHERE "f"\."parent_plan_id" IN \(SELECT v FROM OPENJSON\(@0\) WITH \(v nvarchar\(4000\) COLLATE Latin1_General_100_BIN2 '\$'\)\) AND \("f"\."deleted_at" IS NULL OR "f"\."deleted_at" >= @1\)$/,
      'retention: soft delete':
        /^UPDATE "\w+" SET "deleted_at" = @0 WHERE \("\w+" IN \(SELECT v FROM OPENJSON\(@1\) .*\) AND "deleted_at" IS NULL\)$/,
      restore:
        /^UPDATE "\w+" SET "deleted_at" = @0 WHERE \("\w+" IN \(SELECT v FROM OPENJSON\(@1\) .*\) AND NOT\("deleted_at" IS NULL\)\)$/,
      'the stall check: due scan':
        /^SELECT "h"\."plan_id" AS "planId" FROM "plan_heads" "h" WHERE "h"\."stall_check_at" <= @0 AND "h"\."stalled_at" IS NULL AND "h"\."deleted_at" IS NULL ORDER BY "h"\."stall_check_at" ASC OFFSET 0 ROWS FETCH NEXT \d+ ROWS ONLY$/,
      'the stall check: mark':
        /^UPDATE "plan_heads" SET "stalled_at" = @0 WHERE "plan_id" IN \(SELECT v FROM OPENJSON\(@1\)/,
      'plans list --status stalled': /EXISTS \(SELECT 1 FROM "plan_heads" "h" .*"h"\."stalled_at" IS NOT NULL/,
      'the migration lock': /sp_getapplock/,
      'CREATE TABLE': /^CREATE TABLE /,
      'ALTER TABLE': /^ALTER TABLE /,
      'CREATE INDEX': /^CREATE (CLUSTERED )?INDEX /,
      'DROP TABLE': /^DROP TABLE /,
    };
    const missing = Object.entries(kinds)
      .filter(([, re]) => !distinct.some((sql) => re.test(sql)))
      .map(([kind]) => kind);
    expect(missing).toEqual([]);
  });

  // SQL Server compiles and caches a plan per statement text: a list of n ids sent as n
  // parameters would make a new text, and a new plan, for every n
  it('sends the same statement texts whatever the length of the id and status lists', async () => {
    const byLength = [];
    for (const n of [2, 3, 5, 7]) byLength.push(await recordListsOf(n));
    const all = new Set(byLength.flat());
    expect(byLength[0].length).toBeGreaterThanOrEqual(40);
    expect(byLength.map((texts) => texts.length)).toEqual(byLength.map(() => all.size));
  });

  it('parses every statement as T-SQL in both parsers, with no construct of another database', () => {
    expect(verdicts.filter((v) => !passes(v)).map(show)).toEqual([]);
    expect(verdicts.filter((v) => v.second.parseError === undefined && v.second.unparsed === undefined)).toHaveLength(
      distinct.length,
    );
  });

  it('reads OPENJSON text as nvarchar(4000) or nvarchar(MAX), never at a column length that would cut it', () => {
    const lengths = distinct.flatMap(openJsonTextLengths);
    expect(lengths.length).toBeGreaterThan(50);
    expect([...new Set(lengths)].sort()).toEqual(['4000', 'MAX']);
    expect(openJsonTextLengths(`SELECT v FROM OPENJSON(@0) WITH (v nvarchar(64) '$', w int '$.w')`)).toEqual(['64']);
  });

  it('keeps no allow-list entry that no statement needs, for each parser it names', () => {
    const used = new Set([
      ...verdicts.flatMap((v) => v.allowed.map((name) => `${name} / sqlparser-rs`)),
      ...verdicts.flatMap((v) => v.second.allowed.map((name) => `${name} / ANTLR T-SQL grammar`)),
    ]);
    const listed = ALLOWED_CONSTRUCTS.flatMap((a) => a.lackedBy.map((parser) => `${a.name} / ${parser}`));
    expect(listed.filter((pair) => !used.has(pair))).toEqual([]);
  });

  it('needs each allow-list entry: without it, every parser it names refuses a recorded statement', async () => {
    const notNeeded: string[] = [];
    for (const entry of ALLOWED_CONSTRUCTS) {
      // the shortest recorded statement each parser needed it for
      const shortest = PARSERS.map((name) =>
        verdicts
          .filter((v) => (name === 'sqlparser-rs' ? v.allowed : v.second.allowed).includes(entry.name))
          .map((v) => v.sql)
          .sort((x, y) => x.length - y.length)
          .at(0),
      ).filter((sql): sql is string => sql !== undefined);
      const without = await judge(parser, shortest, { skip: entry.name });
      const refusedBy = new Set(
        without.flatMap((v) => [
          ...(v.parseError ? ['sqlparser-rs'] : []),
          ...(v.second.parseError ? ['ANTLR T-SQL grammar'] : []),
        ]),
      );
      for (const name of entry.lackedBy) if (!refusedBy.has(name)) notNeeded.push(`${entry.name} / ${name}`);
    }
    expect(notNeeded).toEqual([]);
  });

  it('keeps no unparsed statement listed that no longer occurs', () => {
    const used = new Set(verdicts.flatMap((v) => [v.unparsed, v.second.unparsed]));
    expect(UNPARSED_STATEMENTS.map((u) => u.name).filter((name) => !used.has(name))).toEqual([]);
  });

  describe('forbidden constructs (the parser accepts each of them)', () => {
    /** A statement with the construct, and the T-SQL that says the same. */
    const examples: Array<{ rule: string; bad: string; good: string }> = [
      {
        rule: 'LIMIT',
        bad: 'SELECT "id" FROM "sessions" ORDER BY "id" LIMIT 10',
        good: 'SELECT TOP (10) "id" FROM "sessions" ORDER BY "id"',
      },
      {
        rule: 'upsert clause on INSERT',
        bad: 'INSERT INTO "sessions" ("id") VALUES (@0) ON CONFLICT ("id") DO NOTHING',
        good: 'MERGE INTO "sessions" AS t USING (SELECT @0 AS "id") AS s ON t."id" = s."id" WHEN NOT MATCHED THEN INSERT ("id") VALUES (s."id");',
      },
      {
        rule: 'upsert clause on INSERT',
        bad: 'INSERT INTO "sessions" ("id") VALUES (@0) ON DUPLICATE KEY UPDATE "id" = "id"',
        good: 'INSERT INTO "sessions" ("id") SELECT @0 WHERE NOT EXISTS (SELECT 1 FROM "sessions" WHERE "id" = @0)',
      },
      {
        rule: 'upsert clause on INSERT',
        bad: 'INSERT OR IGNORE INTO "sessions" ("id") VALUES (@0)',
        good: 'INSERT INTO "sessions" ("id") SELECT @0 WHERE NOT EXISTS (SELECT 1 FROM "sessions" WHERE "id" = @0)',
      },
      {
        rule: 'positional or colon placeholder',
        bad: 'SELECT "id" FROM "sessions" WHERE "id" = $1',
        good: 'SELECT "id" FROM "sessions" WHERE "id" = @0',
      },
      {
        rule: 'positional or colon placeholder',
        bad: 'SELECT "id" FROM "sessions" WHERE "id" = ?',
        good: 'SELECT "id" FROM "sessions" WHERE "id" = @p1',
      },
      {
        rule: 'ANY/ALL over an array',
        bad: 'SELECT "event_id" FROM "plan_events" WHERE "plan_id" = ANY(@0)',
        good: `SELECT "event_id" FROM "plan_events" WHERE "plan_id" IN (SELECT v FROM OPENJSON(@0) WITH (v nvarchar(64) '$'))`,
      },
      {
        rule: 'RETURNING',
        bad: 'DELETE FROM "sessions" WHERE "id" = @0 RETURNING "id"',
        good: 'DELETE FROM "sessions" OUTPUT deleted."id" WHERE "id" = @0',
      },
      {
        rule: 'RETURNING',
        bad: 'MERGE INTO "sessions" AS t USING (SELECT @0 AS "id") AS s ON t."id" = s."id" WHEN NOT MATCHED THEN INSERT ("id") VALUES (s."id") RETURNING "id";',
        good: 'MERGE INTO "sessions" AS t USING (SELECT @0 AS "id") AS s ON t."id" = s."id" WHEN NOT MATCHED THEN INSERT ("id") VALUES (s."id") OUTPUT inserted."id";',
      },
      {
        rule: 'ILIKE',
        bad: 'SELECT "id" FROM "execution_plans" WHERE "query" ILIKE @0',
        good: 'SELECT "id" FROM "execution_plans" WHERE "query" LIKE @0',
      },
      {
        rule: ':: cast',
        bad: 'SELECT "created_at"::date AS "day" FROM "execution_plans"',
        good: 'SELECT CAST("created_at" AS DATE) AS "day" FROM "execution_plans"',
      },
      {
        rule: 'FOR UPDATE / FOR SHARE',
        bad: 'SELECT "version" FROM "plan_heads" WHERE "plan_id" = @0 FOR UPDATE',
        good: 'SELECT "version" FROM "plan_heads" WITH (UPDLOCK, ROWLOCK) WHERE "plan_id" = @0',
      },
      {
        rule: 'TRUE/FALSE literal',
        bad: 'SELECT "id" FROM "execution_plans" WHERE "requires_approval" = TRUE',
        good: 'SELECT "id" FROM "execution_plans" WHERE "requires_approval" = 1',
      },
      {
        rule: 'TRUE/FALSE literal',
        bad: 'SELECT "id" FROM "execution_plans" WHERE "requires_approval" IS FALSE',
        good: 'SELECT "id" FROM "execution_plans" WHERE "requires_approval" = 0',
      },
      {
        rule: '|| concatenation',
        bad: `SELECT "plan_id" || ':' || "step_key" AS "ref" FROM "plan_steps"`,
        good: `SELECT CONCAT("plan_id", ':', "step_key") AS "ref" FROM "plan_steps"`,
      },
      {
        rule: 'OFFSET without ORDER BY',
        bad: 'SELECT "id" FROM "sessions" OFFSET 0 ROWS FETCH NEXT 5 ROWS ONLY',
        good: 'SELECT "id" FROM "sessions" ORDER BY "id" OFFSET 0 ROWS FETCH NEXT 5 ROWS ONLY',
      },
      {
        rule: 'OFFSET without ROWS',
        bad: 'SELECT "id" FROM "sessions" ORDER BY "id" OFFSET 5',
        good: 'SELECT "id" FROM "sessions" ORDER BY "id" OFFSET 5 ROWS',
      },
      {
        rule: 'FETCH without OFFSET',
        bad: 'SELECT "id" FROM "sessions" ORDER BY "id" FETCH NEXT 5 ROWS ONLY',
        good: 'SELECT "id" FROM "sessions" ORDER BY "id" OFFSET 0 ROWS FETCH NEXT 5 ROWS ONLY',
      },
      {
        rule: 'NULLS FIRST / NULLS LAST',
        bad: 'SELECT "plan_id" FROM "plan_heads" ORDER BY "gap_since" ASC NULLS LAST',
        good: 'SELECT "plan_id" FROM "plan_heads" ORDER BY CASE WHEN "gap_since" IS NULL THEN 1 ELSE 0 END, "gap_since" ASC',
      },
    ];

    it('has a wrong statement for every rule', () => {
      expect(FORBIDDEN_CONSTRUCTS.map((r) => r.name).filter((name) => !examples.some((e) => e.rule === name))).toEqual(
        [],
      );
    });

    it.each(examples)('$rule: the wrong statement parses and fails on that rule alone; the T-SQL passes', async (e) => {
      const [bad, good] = await judge(parser, [e.bad, e.good]);
      expect(bad.parseError).toBeUndefined();
      expect(bad.forbidden).toEqual([e.rule]);
      expect(summary(good)).toEqual(passing(e.good));
    });

    it("finds nothing in string literals and identifiers that spell another database's syntax", async () => {
      const verdicts = await judge(parser, [
        `SELECT N'LIMIT 10 ON CONFLICT $1 || ::int RETURNING' AS [limit], "true" AS [false] FROM "returning" WHERE [ilike] = 'FOR UPDATE NULLS FIRST'`,
      ]);
      expect(verdicts.map(summary)).toEqual(verdicts.map((v) => passing(v.sql)));
    });

    it('leaves backtick identifiers to the parser, which refuses them', async () => {
      const [v] = await judge(parser, ['SELECT `id` FROM `sessions`']);
      expect(v.parseError).toMatch(/sql parser error/);
    });
  });

  describe('the allow-list', () => {
    it('rewrites constructs, never inside string literals or bracketed identifiers', () => {
      const sql = `SELECT N'MERGE INTO "t" WITH (HOLDLOCK) AS ; EXEC @r = p' AS [EXEC @r = p]`;
      for (const a of ALLOWED_CONSTRUCTS) expect(outsideLiterals(sql, a.rewrite)).toBe(sql);
      const exec = ALLOWED_CONSTRUCTS.find((a) => a.name === "EXEC's return code into a variable")!;
      expect(outsideLiterals(`EXEC @r = p @a = N'EXEC @r = q'`, exec.rewrite)).toBe(`EXEC p @a = N'EXEC @r = q'`);
    });

    it('parses the rest of a rewritten statement: a mistake after the construct still fails', async () => {
      const cases = [
        {
          ok: 'MERGE INTO "sessions" WITH (HOLDLOCK) AS t USING OPENJSON(@0) WITH ("id" nvarchar(64) \'$.id\') AS s ON t."id" = s."id" WHEN NOT MATCHED THEN INSERT ("id") VALUES (s."id");',
          wrong:
            'MERGE INTO "sessions" WITH (HOLDLOCK) AS t USING OPENJSON(@0) WITH ("id" nvarchar(64) \'$.id\') AS s ON t."id" = s."id" WHEN NOT MATCHED THEN INSERT ("id") VALUES (s."id") RETURNING "id";',
        },
        {
          ok: 'ALTER TABLE "sessions" ALTER COLUMN "id" nvarchar(64) COLLATE Latin1_General_100_BIN2 NOT NULL',
          wrong: 'ALTER TABLE "sessions" ALTER COLUMN "id" nvarchar(64) COLLATE Latin1_General_100_BIN2 NOT NUL',
        },
        {
          ok: 'ALTER TABLE "plan_heads" ADD "a" int NULL, "b" datetime2(3) NULL',
          wrong: 'ALTER TABLE "plan_heads" ADD "a" int NULL, "b" datetime2(3) NULL,',
        },
      ];
      for (const c of cases) {
        const [ok, wrong] = await judge(parser, [c.ok, c.wrong]);
        expect(ok.allowed).toHaveLength(1);
        expect(wrong.allowed).toEqual(ok.allowed);
        expect(summary(ok)).toEqual(passing(c.ok));
        expect(passes(wrong)).toBe(false);
      }
    });
  });

  describe('the second parser (statements sqlparser-rs accepts, with no forbidden construct, that SQL Server refuses)', () => {
    /** A wrong statement, why SQL Server refuses it, and the T-SQL that says the same. */
    const wrongs: Array<{ what: string; bad: string; good: string }> = [
      {
        what: 'a MERGE without its terminating semicolon (Msg 10713)',
        bad: 'MERGE INTO "sessions" AS t USING (SELECT @0 AS "id") AS s ON t."id" = s."id" WHEN NOT MATCHED THEN INSERT ("id") VALUES (s."id")',
        good: 'MERGE INTO "sessions" AS t USING (SELECT @0 AS "id") AS s ON t."id" = s."id" WHEN NOT MATCHED THEN INSERT ("id") VALUES (s."id");',
      },
      {
        what: 'ADD COLUMN (T-SQL adds a column with ADD alone)',
        bad: 'ALTER TABLE "plan_steps" ADD COLUMN "note" nvarchar(200) NULL',
        good: 'ALTER TABLE "plan_steps" ADD "note" nvarchar(200) NULL',
      },
      {
        what: 'ALTER COLUMN ... TYPE (T-SQL restates the column definition)',
        bad: 'ALTER TABLE "plan_steps" ALTER COLUMN "step_index" TYPE bigint',
        good: 'ALTER TABLE "plan_steps" ALTER COLUMN "step_index" bigint NOT NULL',
      },
      {
        what: 'CREATE TABLE IF NOT EXISTS',
        bad: 'CREATE TABLE IF NOT EXISTS "plan_notes" ("id" int NOT NULL)',
        good: 'CREATE TABLE "plan_notes" ("id" int NOT NULL)',
      },
      {
        what: 'DROP INDEX without its table',
        bad: 'DROP INDEX "IDX_plan_steps_plan"',
        good: 'DROP INDEX "IDX_plan_steps_plan" ON "plan_steps"',
      },
      {
        what: 'DELETE ... ORDER BY',
        bad: 'DELETE FROM "plan_events" WHERE "plan_id" = @0 ORDER BY "seq"',
        good: 'DELETE FROM "plan_events" WHERE "plan_id" = @0',
      },
      {
        what: 'FETCH NEXT without ONLY',
        bad: 'SELECT "id" FROM "sessions" ORDER BY "id" OFFSET 0 ROWS FETCH NEXT 5 ROWS',
        good: 'SELECT "id" FROM "sessions" ORDER BY "id" OFFSET 0 ROWS FETCH NEXT 5 ROWS ONLY',
      },
      {
        what: 'UPDATE with an alias after the table',
        bad: 'UPDATE "plan_heads" AS h SET "version" = 0 WHERE h."plan_id" = @0',
        good: 'UPDATE h SET "version" = 0 FROM "plan_heads" AS h WHERE h."plan_id" = @0',
      },
    ];

    it.each(wrongs)('refuses $what, which sqlparser-rs accepts; the T-SQL passes both', async (w) => {
      const [bad, good] = await judge(parser, [w.bad, w.good]);
      expect({ parseError: bad.parseError, forbidden: bad.forbidden }).toEqual({
        parseError: undefined,
        forbidden: [],
      });
      expect(bad.second.parseError).toMatch(/^line 1:\d+: /);
      expect(passes(bad)).toBe(false);
      expect(summary(good)).toEqual(passing(good.sql));
    });

    it('says where it stopped, in one line', async () => {
      const [merge, addColumn] = await judge(parser, [wrongs[0].bad, wrongs[1].bad]);
      expect(merge.second.parseError).toBe(`line 1:${wrongs[0].bad.length + 1}: extraneous input at the end`);
      expect(addColumn.second.parseError).toBe(
        'line 1:30: extraneous input near "COLUMN \\"note\\" nvarchar(200) NULL"',
      );
    });

    it("is one of the gate's parsers, beside sqlparser-rs", () => {
      expect(PARSERS).toEqual(['sqlparser-rs', 'ANTLR T-SQL grammar']);
    });
  });

  describe('the gate is not vacuous', () => {
    it.each([
      ['PostgreSQL paging', 'SELECT "id" FROM "execution_plans" ORDER BY "created_at" DESC LIMIT 10', 'LIMIT'],
      [
        'PostgreSQL upsert',
        'INSERT INTO "sessions" ("id") VALUES (@0) ON CONFLICT ("id") DO NOTHING',
        'upsert clause on INSERT',
      ],
      ['a typo', 'SELEC "id" FROM "sessions"', undefined],
    ])('fails %s', async (_, sql, rule) => {
      const [v] = await judge(parser, [sql]);
      expect(passes(v)).toBe(false);
      if (rule) expect(v.forbidden).toEqual([rule]);
      else expect(v.parseError).toMatch(/Expected: an SQL statement, found: SELEC/);
    });

    it('fails a recorded statement changed to page with LIMIT', async () => {
      // a page of 20 plans reads 21 rows: the 21st says whether another page follows
      const paged = distinct.find((sql) => / OFFSET 40 ROWS FETCH NEXT 21 ROWS ONLY$/.test(sql))!;
      const [v] = await judge(parser, [
        paged.replace(/ OFFSET 40 ROWS FETCH NEXT 21 ROWS ONLY$/, ' LIMIT 21 OFFSET 40'),
      ]);
      expect(v.forbidden).toContain('LIMIT');
    });
  });
});
