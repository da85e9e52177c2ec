import type { MigrationInterface, QueryRunner } from 'typeorm';
import { dialectOf } from '../src/store/sql/dialects';
import { addColumns, sql, sqlType } from './1795219400000-incremental-store';

/**
 * `plan_heads.restored_at`: when `plans restore` last brought a plan back. Retention ages a
 * finished plan from its end (`completed_at`) and from this instant, no longer from the head's
 * `updated_at`, which every late event moved (issue 14: ages count from the end, as the help
 * says). Existing restores are not known: null, so a plan restored before this migration ages
 * from its end like any other. Plain ALTER statements, as in IncrementalStore1795219400000.
 */
export class PlanRestoredAt1795219600000 implements MigrationInterface {
  name = 'PlanRestoredAt1795219600000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const d = dialectOf(queryRunner);
    const q = (name: string) => queryRunner.connection.driver.escape(name);
    await addColumns(queryRunner, d, q('plan_heads'), [`${q('restored_at')} ${sqlType(d, 'timestamp')} NULL`]);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    const q = (name: string) => queryRunner.connection.driver.escape(name);
    await sql(queryRunner, `ALTER TABLE ${q('plan_heads')} DROP COLUMN ${q('restored_at')}`);
  }
}
