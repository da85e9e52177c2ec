import { parseDatabaseUrl } from '../../src/config/database-url';
import { migrationSql } from '../../src/store/migrator';
import { judge, passes, TsqlParser } from '../support/tsql-gate';

/**
 * No SQL Server runs here: the DDL of ReportedCostSteps (the index the cost report's reported
 * steps are read through) as `migrate --print-sql` prints it for SQL Server, parsed by both T-SQL
 * parsers of the syntax gate.
 */
describe('ReportedCostSteps: the SQL sent to SQL Server (generated, no server)', () => {
  let parser: TsqlParser;
  beforeAll(() => {
    parser = new TsqlParser();
  });
  afterAll(() => parser.close());

  it('creates the index on (cost_source, plan_id); the revert drops it', async () => {
    const target = parseDatabaseUrl('mssql://sa:x@127.0.0.1:1/none');
    const of = async (direction: 'up' | 'down') =>
      (await migrationSql(target, direction)).find((m) => m.migration === 'ReportedCostSteps1795227080000')!.statements;
    const up = await of('up');
    const down = await of('down');
    expect(up).toEqual(['CREATE INDEX "IX_plan_steps_cost_source" ON "plan_steps" ("cost_source", "plan_id")']);
    expect(down).toEqual(['DROP INDEX "IX_plan_steps_cost_source" ON "plan_steps"']);
    const failing = (await judge(parser, [...up, ...down])).filter((v) => !passes(v)).map((v) => v.sql);
    expect(failing).toEqual([]);
  });
});
