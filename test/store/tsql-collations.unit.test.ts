import { parseDatabaseUrl } from '../../src/config/database-url';
import { migrationSql } from '../../src/store/migrator';
import { schemaFromDdl, type MssqlSchema } from '../support/mssql-schema';
import { collationConflicts, type Conflict } from '../support/tsql-collations';
import { judge, TsqlParser } from '../support/tsql-gate';
import { recordWorkload } from '../support/tsql-workload';

/**
 * No SQL Server runs here, and a parser accepts a comparison that SQL Server refuses: a column in
 * the ids' binary collation compared with one in the database's default (Msg 468, "cannot resolve
 * the collation conflict"). Every comparison and join of every statement the recorded workload
 * sends is resolved against the schema the recorded DDL leaves (test/support/tsql-collations.ts),
 * and the two sides must be in one collation.
 */

const TRANSACTION_MARKERS = new Set(['BEGIN TRANSACTION', 'COMMIT', 'ROLLBACK']);
const show = (c: Conflict) => `${c.sql.slice(0, 160)}...\n  ${c.left}  vs  ${c.right}`;

describe('collations of the comparisons SQL Server is sent', () => {
  let parser: TsqlParser;
  let schema: MssqlSchema;
  let conflicts: Conflict[];
  let resolved: string[];

  async function check(sqls: string[]) {
    const verdicts = await judge(parser, sqls);
    return verdicts.map((v) => {
      if (!v.ast) throw new Error(`does not parse: ${v.sql}\n${v.parseError}`);
      return collationConflicts(v.sql, v.ast, schema);
    });
  }

  beforeAll(async () => {
    parser = new TsqlParser();
    const ddl = (await migrationSql(parseDatabaseUrl('mssql://sa:x@127.0.0.1:1/none'))).flatMap((m) => m.statements);
    schema = schemaFromDdl(ddl);
    const sections = await recordWorkload(() => undefined);
    const distinct = [...new Set(sections.flatMap((s) => s.statements.map((r) => r.sql)))].filter(
      (sql) => !TRANSACTION_MARKERS.has(sql),
    );
    const verdicts = await check(distinct);
    conflicts = verdicts.flatMap((v) => v.conflicts);
    resolved = verdicts.flatMap((v) => v.resolved);
  });

  afterAll(() => parser.close());

  it('compares no two sides in different collations', () => {
    expect(conflicts.map(show)).toEqual([]);
  });

  it('resolves the comparisons that matter: keys against OPENJSON rows and id lists, joins, parents', () => {
    const has = (re: RegExp) => resolved.some((r) => re.test(r));
    expect({
      'a MERGE on a key': has(/^plan_heads\.plan_id ~ OPENJSON column plan_id$/),
      'an id list': has(/^plan_events\.event_id ~ OPENJSON column v$/),
      'a join': has(/^plan_heads\.plan_id ~ execution_plans\.id$|^execution_plans\.id ~ plan_heads\.plan_id$/),
      "a fork's parent": has(/^execution_plans\.parent_plan_id ~ execution_plans\.id$/),
    }).toEqual({ 'a MERGE on a key': true, 'an id list': true, 'a join': true, "a fork's parent": true });
    expect(resolved.length).toBeGreaterThan(50);
  });

  describe('the check is not vacuous', () => {
    it('fails an OPENJSON id list without a COLLATE against a binary column, passes it with one', async () => {
      const [bad, good] = await check([
        `SELECT "event_id" FROM "plan_events" WHERE "event_id" IN (SELECT v FROM OPENJSON(@0) WITH (v nvarchar(36) '$'))`,
        `SELECT "event_id" FROM "plan_events" WHERE "event_id" IN (SELECT v FROM OPENJSON(@0) WITH (v nvarchar(36) COLLATE Latin1_General_100_BIN2 '$'))`,
      ]);
      expect(bad.conflicts.map((c) => [c.left, c.right])).toEqual([
        [
          'plan_events.event_id (implicit, Latin1_General_100_BIN2)',
          "OPENJSON column v (implicit, the database's default)",
        ],
      ]);
      expect(good.conflicts).toEqual([]);
    });

    it('fails a join of a binary column with one in the database default', async () => {
      const [v] = await check([
        `SELECT "p"."id" FROM "execution_plans" "p" INNER JOIN "plan_steps" "s" ON "s"."status" = "p"."id"`,
      ]);
      expect(v.conflicts).toHaveLength(1);
    });

    it('passes a parameter, a literal and an explicit COLLATE against any column', async () => {
      const [v] = await check([
        `SELECT "id" FROM "execution_plans" WHERE "id" = @0 AND "status" = N'done' AND "status" COLLATE Latin1_General_100_BIN2 = "id"`,
      ]);
      expect(v.conflicts).toEqual([]);
      expect(v.resolved).toEqual(['COLLATE Latin1_General_100_BIN2 ~ execution_plans.id']);
    });
  });
});
