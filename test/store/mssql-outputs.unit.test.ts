/**
 * Migration OutputsStoredOnce on SQL Server, checked on recorded SQL (no server here): the move of
 * stored outputs to their events, and `down`'s copy back, send T-SQL that parses in both parsers
 * of the gate, page with TOP, bind every value as a parameter, and move a row only to the event
 * that carried exactly its output.
 */
import type { QueryRunner } from 'typeorm';
import { OutputsStoredOnce1795225200000 } from '../../migrations/1795225200000-outputs-stored-once';
import { paramValue, recordingMssql, type Recorded } from '../support/recording-mssql';
import { judge, passes, TsqlParser } from '../support/tsql-gate';

const PLAN = 'plan-1';
const OUTPUT = 'caf\u00e9 \u{1F600}\r\n';
const EARLY = '00000000-0000-4000-8000-000000000001';
const LATE = '00000000-0000-4000-8000-000000000002';
const OTHER = '00000000-0000-4000-8000-000000000003';

const payload = (stepId: string, outputContent: string) => JSON.stringify({ stepId, outputContent });

/** A database with two rows holding outputs: `a`, completed twice with its bytes, and `b`, whose output no event carried. */
function storedOutputs(sql: string): Array<Record<string, unknown>> | undefined {
  // what TypeORM asks before it looks the column up: a database where it is not added yet
  if (/^SELECT SCHEMA_NAME\(\)/.test(sql)) return [{ schema_name: 'dbo' }];
  if (/^SELECT DB_NAME\(\)/.test(sql)) return [{ db_name: 'none' }];
  if (/^SELECT DISTINCT TOP \(20\) "plan_id"/.test(sql)) return pages.shift() ?? [];
  if (/^SELECT "id" AS id, "plan_id" AS plan_id, "step_key"/.test(sql))
    return [
      { id: 'row-a', plan_id: PLAN, step_key: 'a', output_content: OUTPUT },
      { id: 'row-b', plan_id: PLAN, step_key: 'b', output_content: 'changed by hand' },
    ];
  if (/FROM "plan_events" WHERE "plan_id" IN/.test(sql))
    return [
      { event_id: LATE, plan_id: PLAN, seq: 9, payload: payload('a', OUTPUT) },
      { event_id: EARLY, plan_id: PLAN, seq: 4, payload: payload('a', OUTPUT) },
      { event_id: OTHER, plan_id: PLAN, seq: 6, payload: payload('b', 'what the event said') },
    ];
  if (/^SELECT TOP \(200\) s\."id"/.test(sql)) return copies.shift() ?? [];
  return undefined;
}
let pages: Array<Array<Record<string, unknown>>> = [];
let copies: Array<Array<Record<string, unknown>>> = [];

async function run(step: 'up' | 'down'): Promise<Recorded[]> {
  const { ds, statements } = await recordingMssql(storedOutputs);
  const runner: QueryRunner = ds.createQueryRunner();
  await new OutputsStoredOnce1795225200000()[step](runner);
  return statements;
}

describe('SQL Server: step outputs moved to the log', () => {
  let parser: TsqlParser;
  beforeAll(() => (parser = new TsqlParser()));
  afterAll(() => parser.close());

  it('adds the column, then moves a row only to the last event that carried its bytes', async () => {
    pages = [[{ plan_id: PLAN }]];
    const statements = await run('up');
    expect(statements.map((s) => s.sql).filter((sql) => sql.startsWith('ALTER TABLE'))).toEqual([
      'ALTER TABLE "plan_steps" ADD "output_event_id" nvarchar(36) COLLATE Latin1_General_100_BIN2 NULL',
    ]);
    const updates = statements.filter((s) => s.sql.startsWith('UPDATE'));
    expect(updates.map((u) => [u.sql, u.params.map(paramValue)])).toEqual([
      ['UPDATE "plan_steps" SET "output_event_id" = @0, "output_content" = NULL WHERE "id" = @1', [LATE, 'row-a']],
    ]);
    // the page after the last plan id read
    expect(statements.filter((s) => s.sql.startsWith('SELECT DISTINCT')).map((s) => s.params.map(paramValue))).toEqual([
      [''],
      [PLAN],
    ]);
    const verdicts = await judge(parser, [...new Set(statements.map((s) => s.sql))]);
    expect(verdicts.filter((v) => !passes(v)).map((v) => v.sql)).toEqual([]);
  });

  it('down copies each output back from its event, then drops the column', async () => {
    copies = [[{ id: 'row-a', event_id: LATE, payload: payload('a', OUTPUT) }]];
    const statements = await run('down');
    const updates = statements.filter((s) => s.sql.startsWith('UPDATE'));
    expect(updates.map((u) => [u.sql, u.params.map(paramValue)])).toEqual([
      ['UPDATE "plan_steps" SET "output_content" = @0, "output_event_id" = NULL WHERE "id" = @1', [OUTPUT, 'row-a']],
    ]);
    expect(statements[statements.length - 1].sql).toBe('ALTER TABLE "plan_steps" DROP COLUMN "output_event_id"');
    const verdicts = await judge(parser, [...new Set(statements.map((s) => s.sql))]);
    expect(verdicts.filter((v) => !passes(v)).map((v) => v.sql)).toEqual([]);
  });
});
