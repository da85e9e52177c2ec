import type { MigrationInterface, QueryRunner } from 'typeorm';
import { dialectOf } from '../src/store/sql/dialects';
import { addColumns, sql, sqlType } from './1795219400000-incremental-store';
import { dropIndex } from './1795221000000-plan-list';

/**
 * `plan_heads.stall_check_at`: when the stall check next looks at a running plan
 * (docs/store.md#stalled-plans), indexed (`IX_plan_heads_stall_check`) in place of `stall_due_at`
 * (`IX_plan_heads_stall_due` is dropped). The worker moves `stall_due_at` with every event of a
 * running plan; with that column indexed, every head update changed an indexed column, so
 * PostgreSQL could not update a head on its page without touching its indexes (a HOT update). The
 * check time is set when the plan starts running and by the stall check, which moves it up to the
 * due time of a plan whose events pushed that on.
 *
 * Existing heads: the check time is the due time.
 */
export class StallCheckTimes1795227200000 implements MigrationInterface {
  name = 'StallCheckTimes1795227200000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const d = dialectOf(queryRunner);
    const q = (name: string) => queryRunner.connection.driver.escape(name);
    const heads = q('plan_heads');
    await addColumns(queryRunner, d, heads, [`${q('stall_check_at')} ${sqlType(d, 'timestamp')} NULL`]);
    await sql(queryRunner, `UPDATE ${heads} SET ${q('stall_check_at')} = ${q('stall_due_at')}`);
    await sql(queryRunner, `CREATE INDEX ${q('IX_plan_heads_stall_check')} ON ${heads} (${q('stall_check_at')})`);
    await sql(queryRunner, dropIndex(d, q, 'IX_plan_heads_stall_due', heads));
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    const d = dialectOf(queryRunner);
    const q = (name: string) => queryRunner.connection.driver.escape(name);
    const heads = q('plan_heads');
    await sql(queryRunner, `CREATE INDEX ${q('IX_plan_heads_stall_due')} ON ${heads} (${q('stall_due_at')})`);
    await sql(queryRunner, dropIndex(d, q, 'IX_plan_heads_stall_check', heads));
    await sql(queryRunner, `ALTER TABLE ${heads} DROP COLUMN ${q('stall_check_at')}`);
  }
}
