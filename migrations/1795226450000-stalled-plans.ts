import type { MigrationInterface, QueryRunner } from 'typeorm';
import { dialectOf, type Dialect } from '../src/store/sql/dialects';
import { addColumns, sql, sqlType } from './1795219400000-incremental-store';

/**
 * Stalled plans (docs/store.md#stalled-plans), three columns of `plan_heads`:
 *
 * - `deadline_ms`: the plan's own `deadlineMs` (plan.created), null when it gave none (STALL_AFTER);
 * - `stall_due_at`: when the running plan becomes stalled if no event comes first; null while the
 *   plan is not running. Set by the worker with every event, indexed: the stall check reads
 *   `stall_due_at <= now` as one index range, however many plans are stored;
 * - `stalled_at`: when the stall check found the plan stalled; null again with its next event.
 *   Indexed: `plans list --status stalled` and the gauge read the stalled plans only.
 *
 * Plans running when this migration runs have no `stall_due_at` until their next event.
 */
export class StalledPlans1795226450000 implements MigrationInterface {
  name = 'StalledPlans1795226450000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const d = dialectOf(queryRunner);
    const q = (name: string) => queryRunner.connection.driver.escape(name);
    const heads = q('plan_heads');
    await addColumns(queryRunner, d, heads, [
      `${q('deadline_ms')} ${sqlType(d, 'int')} NULL`,
      `${q('stall_due_at')} ${sqlType(d, 'timestamp')} NULL`,
      `${q('stalled_at')} ${sqlType(d, 'timestamp')} NULL`,
    ]);
    await sql(queryRunner, `CREATE INDEX ${q('IX_plan_heads_stall_due')} ON ${heads} (${q('stall_due_at')})`);
    await sql(queryRunner, `CREATE INDEX ${q('IX_plan_heads_stalled')} ON ${heads} (${q('stalled_at')})`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    const d = dialectOf(queryRunner);
    const q = (name: string) => queryRunner.connection.driver.escape(name);
    const heads = q('plan_heads');
    await sql(queryRunner, dropIndex(d, q, 'IX_plan_heads_stalled', heads));
    await sql(queryRunner, dropIndex(d, q, 'IX_plan_heads_stall_due', heads));
    for (const column of ['stalled_at', 'stall_due_at', 'deadline_ms'])
      await sql(queryRunner, `ALTER TABLE ${heads} DROP COLUMN ${q(column)}`);
  }
}

function dropIndex(d: Dialect, q: (name: string) => string, name: string, table: string): string {
  return d === 'mysql' || d === 'mssql' ? `DROP INDEX ${q(name)} ON ${table}` : `DROP INDEX ${q(name)}`;
}
