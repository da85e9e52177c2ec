import type { MigrationInterface, QueryRunner } from 'typeorm';
import { columnTypeFor, dialectOf, type Dialect } from '../src/store/sql/dialects';
import { addColumns, sql, sqlType } from './1795219400000-incremental-store';

/**
 * Where a plan came from (docs/fork-and-lineage.md#what-a-fork-is): `execution_plans.parent_plan_id` names the
 * plan a fork or replay was made from, `fork_kind` says which (`fork`, `replay`), `fork_layer` the
 * first layer the new plan runs itself (earlier layers are inherited from the parent) and
 * `fork_checkpoint` the parent's checkpoint it started from, if any. Indexed by parent, for the
 * lineage tree and for retention, which keeps a parent while a fork of it lives. Existing plans
 * have no parent (null).
 *
 * `workflow_dags.layers`: the DAG's layers alone (the JSON array the `dag` document ends with), so
 * a fork reads its parent's layers without the whole document, whatever the parent's size; null
 * for DAGs written before (read from `dag` instead).
 */
export class PlanLineage1795219900000 implements MigrationInterface {
  name = 'PlanLineage1795219900000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const d = dialectOf(queryRunner);
    const q = (name: string) => queryRunner.connection.driver.escape(name);
    const plans = q('execution_plans');
    await addColumns(queryRunner, d, plans, [
      `${q('parent_plan_id')} ${sqlType(d, 'externalId')} NULL`,
      `${q('fork_kind')} ${varchar(d, 10)} NULL`,
      `${q('fork_layer')} ${sqlType(d, 'int')} NULL`,
      `${q('fork_checkpoint')} ${sqlType(d, 'externalId')} NULL`,
    ]);
    await sql(queryRunner, `CREATE INDEX ${q('IX_execution_plans_parent')} ON ${plans} (${q('parent_plan_id')})`);
    await addColumns(queryRunner, d, q('workflow_dags'), [`${q('layers')} ${sqlType(d, 'longText')} NULL`]);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    const d = dialectOf(queryRunner);
    const q = (name: string) => queryRunner.connection.driver.escape(name);
    const plans = q('execution_plans');
    await sql(
      queryRunner,
      d === 'mysql' || d === 'mssql'
        ? `DROP INDEX ${q('IX_execution_plans_parent')} ON ${plans}`
        : `DROP INDEX ${q('IX_execution_plans_parent')}`,
    );
    await sql(queryRunner, `ALTER TABLE ${q('workflow_dags')} DROP COLUMN ${q('layers')}`);
    for (const c of ['parent_plan_id', 'fork_kind', 'fork_layer', 'fork_checkpoint'])
      await sql(queryRunner, `ALTER TABLE ${plans} DROP COLUMN ${q(c)}`);
  }
}

/** `nvarchar(n)` / `varchar(n)` as the dialect spells a short string. */
function varchar(d: Dialect, length: number): string {
  const t = columnTypeFor(d, { varchar: length });
  return t.length === undefined ? String(t.type) : `${String(t.type)}(${t.length})`;
}
