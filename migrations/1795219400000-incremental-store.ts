import type { MigrationInterface, QueryRunner } from 'typeorm';
import { Query } from 'typeorm/driver/Query';
import { columnTypeFor, ColumnKind, Dialect } from '../src/store/sql/dialects';
import { dialectOf } from '../src/store/sql/dialects';

/**
 * What the incremental store needs (docs/store.md#incremental-behind-a-watermark):
 * - `plan_heads.applied_seq`, `pending_events`, `gap_since`: the plan's watermark. Events with
 *   seq up to applied_seq are applied to the plan's rows; later ones wait for the gap before them to
 *   fill. Indexed on gap_since so the worker finds plans that waited too long.
 * - `plan_handoffs.step_key`: the executor's stepId, so an edit can re-point a handoff without
 *   reading the plan's event log.
 *
 * - PostgreSQL: the tables events update row by row leave room on each page (fillfactor), so an
 *   update that changes no indexed column stays on its page and skips every index (a HOT update).
 *   Heads and plans, updated by nearly every event, keep half of each page free; steps, larger and
 *   updated about twice each, 30 %. Measured on plan rows updated in 2,000-row batches: 22 us of
 *   server CPU per row at the default (no HOT update), 14 at 70, 9 at 50 (BENCHMARKS.md, "Store").
 *
 * Existing data: a plan with rows was rebuilt from its whole log, so every stored event is
 * applied (applied_seq = last_seq); a plan without rows waits for its plan.created. Handoffs get
 * their step key from the step they point at (one pointing nowhere keeps null).
 *
 * Plain ALTER statements per dialect: TypeORM's addColumn rebuilds SQLite tables from what it
 * reads of them, and reads the table from the server first, which `--print-sql` cannot do. They go
 * through `sql()`, which `--print-sql` records instead of running (SQL memory mode).
 */
export class IncrementalStore1795219400000 implements MigrationInterface {
  name = 'IncrementalStore1795219400000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const d = dialectOf(queryRunner);
    const q = (name: string) => queryRunner.connection.driver.escape(name);
    const heads = q('plan_heads');
    const columns = [
      `${q('applied_seq')} ${sqlType(d, 'int')} NULL`,
      `${q('pending_events')} ${sqlType(d, 'int')} NOT NULL${d === 'mssql' ? ` CONSTRAINT ${q('DF_plan_heads_pending_events')}` : ''} DEFAULT 0`,
      `${q('gap_since')} ${sqlType(d, 'timestamp')} NULL`,
    ];
    await addColumns(queryRunner, d, heads, columns);
    await addColumns(queryRunner, d, q('plan_handoffs'), [`${q('step_key')} ${sqlType(d, 'externalId')} NULL`]);
    await sql(queryRunner, `CREATE INDEX ${q('IX_plan_heads_gap')} ON ${heads} (${q('gap_since')})`);
    if (d === 'postgres')
      for (const [t, fill] of Object.entries(FILLFACTOR))
        await sql(queryRunner, `ALTER TABLE ${q(t)} SET (fillfactor = ${fill})`);
    const hasRows = `EXISTS (SELECT 1 FROM ${q('execution_plans')} p WHERE p.${q('id')} = ${heads}.${q('plan_id')})`;
    await sql(queryRunner, `UPDATE ${heads} SET ${q('applied_seq')} = ${q('last_seq')} WHERE ${hasRows}`);
    await sql(queryRunner, `UPDATE ${heads} SET ${q('pending_events')} = ${q('event_count')} WHERE NOT ${hasRows}`);
    await sql(
      queryRunner,
      `UPDATE ${q('plan_handoffs')} SET ${q('step_key')} = (SELECT s.${q('step_key')} FROM ${q('plan_steps')} s WHERE s.${q('id')} = ${q('plan_handoffs')}.${q('step_id')}) WHERE ${q('step_id')} IS NOT NULL`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    const d = dialectOf(queryRunner);
    const q = (name: string) => queryRunner.connection.driver.escape(name);
    const heads = q('plan_heads');
    if (d === 'postgres')
      for (const t of Object.keys(FILLFACTOR)) await sql(queryRunner, `ALTER TABLE ${q(t)} RESET (fillfactor)`);
    await sql(
      queryRunner,
      d === 'mysql' || d === 'mssql'
        ? `DROP INDEX ${q('IX_plan_heads_gap')} ON ${heads}`
        : `DROP INDEX ${q('IX_plan_heads_gap')}`,
    );
    if (d === 'mssql')
      await sql(queryRunner, `ALTER TABLE ${heads} DROP CONSTRAINT ${q('DF_plan_heads_pending_events')}`);
    for (const column of ['applied_seq', 'pending_events', 'gap_since'])
      await sql(queryRunner, `ALTER TABLE ${heads} DROP COLUMN ${q(column)}`);
    await sql(queryRunner, `ALTER TABLE ${q('plan_handoffs')} DROP COLUMN ${q('step_key')}`);
  }
}

/** PostgreSQL: percent of each page new rows may fill, for the tables events update row by row. */
const FILLFACTOR: Record<string, number> = { plan_heads: 50, execution_plans: 50, plan_steps: 70, sessions: 70 };

/** Run one statement, or record it in SQL memory mode (queryRunner.query would run it regardless). */
export function sql(queryRunner: QueryRunner, statement: string): Promise<void> {
  return (queryRunner as unknown as { executeQueries(up: Query[], down: Query[]): Promise<void> }).executeQueries(
    [new Query(statement)],
    [],
  );
}

/** `type(length)` / `type(precision)` of a column kind, as the other migrations declare it. */
export function sqlType(d: Dialect, kind: ColumnKind): string {
  const t = columnTypeFor(d, kind);
  const size = t.length ?? (t.precision !== undefined ? String(t.precision) : undefined);
  return size === undefined ? String(t.type) : `${t.type}(${size})`;
}

/** One ALTER per table where the dialect takes a list; SQLite adds one column per statement. */
export async function addColumns(
  queryRunner: QueryRunner,
  d: Dialect,
  table: string,
  columns: string[],
): Promise<void> {
  if (d === 'sqlite') {
    for (const c of columns) await sql(queryRunner, `ALTER TABLE ${table} ADD COLUMN ${c}`);
    return;
  }
  const add = d === 'mssql' ? `ADD ${columns.join(', ')}` : columns.map((c) => `ADD ${c}`).join(', ');
  await sql(queryRunner, `ALTER TABLE ${table} ${add}`);
}
