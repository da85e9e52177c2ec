import { parseDatabaseUrl } from '../../src/config/database-url';
import { formatMoney, moneyFromColumn } from '../../src/pricing';
import { ENTITY, moneyColumns, type ExecutionPlanRow, type PlanStepRow } from '../../src/store/entities';
import { migrationSql } from '../../src/store/migrator';
import { PlanEventStore } from '../../src/store/plan-event-store';
import { MssqlTables, tediousDecimal } from '../support/mssql-tables';
import { moneyPlan } from '../support/money-plan';
import { recordingMssql } from '../support/recording-mssql';
import { recordWorkload } from '../support/tsql-workload';

/**
 * No SQL Server here. tedious reads a DECIMAL as a JS number, so an amount with more than about 15
 * significant digits changes on its way back; every money column SQL Server reads must therefore
 * travel as text. Checked on what the migrations declare, on every statement of the recorded
 * workload, and by a round trip through the store on tables that answer as the driver does
 * (test/support/mssql-tables.ts: a DECIMAL read as tedious reads it, unless the SQL converts it).
 */
const MONEY = moneyColumns();
const IS_MONEY = new Set(MONEY.map((c) => c.column));

/** `list` without its `CONVERT(varchar(40), ...)` expressions (whatever they hold: a column, a SUM, a CASE). */
function withoutTextConversions(list: string): string {
  const open = 'CONVERT(varchar(40), ';
  let out = '';
  let at = 0;
  for (let start = list.indexOf(open); start >= 0; start = list.indexOf(open, at)) {
    out += list.slice(at, start);
    let depth = 0;
    let i = start + 'CONVERT'.length;
    do {
      if (list[i] === '(') depth++;
      else if (list[i] === ')') depth--;
      i++;
    } while (depth > 0 && i < list.length);
    at = i;
  }
  return out + list.slice(at);
}

/**
 * The money columns whose value a SELECT list reads outside `CONVERT(varchar(40), ...)`, as
 * `alias.column` (a test whether one is NULL reads no value).
 */
function moneyReadAsNumber(sql: string): string[] {
  const list = sql.slice(0, sql.indexOf(' FROM '));
  const converted = withoutTextConversions(list).replace(/"\w+"\."\w+" IS (NOT )?NULL/g, '');
  return [...converted.matchAll(/"(\w+)"\."(\w+)"/g)].filter((m) => IS_MONEY.has(m[2]!)).map((m) => `${m[1]}.${m[2]}`);
}

describe('money on SQL Server', () => {
  it('declares every money column DECIMAL(24,12): 12 digits before the point hold $10^9', async () => {
    const ddl = (await migrationSql(parseDatabaseUrl('mssql://sa:x@127.0.0.1:1/none'))).flatMap((m) => m.statements);
    const declared = MONEY.map(({ table, column }) => {
      const on = ddl.filter((sql) => new RegExp(`^(CREATE TABLE|ALTER TABLE) "${table}"`).test(sql));
      const types = on.flatMap((sql) => [...sql.matchAll(new RegExp(`"${column}" (\\w+(?:\\(\\d+,\\d+\\))?)`, 'g'))]);
      return { table, column, types: [...new Set(types.map((m) => m[1]))] };
    });
    expect(declared).toEqual(MONEY.map((c) => ({ ...c, types: ['decimal(24,12)'] })));
  });

  it('reads every money column of every recorded statement as text', async () => {
    const failed: string[] = [];
    const sections = await recordWorkload((what, ok) => {
      if (!ok) failed.push(what);
    });
    expect(failed).toEqual([]);
    const selects = [...new Set(sections.flatMap((s) => s.statements.map((r) => r.sql)))].filter((sql) =>
      /^SELECT /.test(sql),
    );
    const reading = selects.filter((sql) =>
      MONEY.some((c) => sql.slice(0, sql.indexOf(' FROM ')).includes(`"${c.column}"`)),
    );
    // entity reads of plans, steps and price overrides, the reprice's pages and the summed reads
    expect(reading.length).toBeGreaterThanOrEqual(8);
    expect(reading.flatMap((sql) => moneyReadAsNumber(sql).map((ref) => `${ref} in ${sql.slice(0, 120)}`))).toEqual([]);
  });

  it.each([1, 2, 3])(
    'round-trips amounts up to $10^9 and their total exactly through the store (seed %i)',
    async (seed) => {
      const plan = moneyPlan(`plan_money_${seed}`, seed);
      // as the driver would read them, most of these amounts would come back changed
      const changed = Object.values(plan.costs).filter((c) => formatMoney(moneyFromColumn(tediousDecimal(c))!) !== c);
      expect(changed.length).toBeGreaterThan(Object.keys(plan.costs).length / 2);

      const tables = new MssqlTables();
      const { ds } = await recordingMssql(tables.answer);
      tables.bind(ds);
      // no row cache: each event reads the plan's total back, adds its step's cost and writes it
      const store = new PlanEventStore(ds, undefined, { rowCacheBytes: 0 });
      for (const e of plan.events) await store.persist([e]);
      expect(tables.unknown).toEqual([]);

      const [stored] = tables.rows('execution_plans');
      expect(stored?.total_cost).toBe(plan.total);
      const row = await ds.getRepository<ExecutionPlanRow>(ENTITY.plan).findOneByOrFail({ id: plan.planId });
      expect(row.totalCost).toBe(plan.total);
      const steps = await ds.getRepository<PlanStepRow>(ENTITY.step).findBy({ planId: plan.planId });
      expect(Object.fromEntries(steps.map((s) => [s.stepKey, s.cost]))).toEqual(plan.costs);
    },
  );
});
