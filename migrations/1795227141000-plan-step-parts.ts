import type { MigrationInterface, QueryRunner } from 'typeorm';
import { dialectOf } from '../src/store/sql/dialects';
import { sql } from './1795219400000-incremental-store';
import { dropIndex } from './1795221000000-plan-list';

/**
 * `IX_plan_steps_parts`: the steps of a few plans that reported cache or reasoning tokens (the
 * tokens report's plan page sums them for its plans, often the largest, of hundreds of steps each).
 * PostgreSQL and SQLite index only those steps (a partial index on the report's own condition);
 * MySQL/MariaDB and SQL Server, which have no partial index for that condition, index
 * (plan_id, cache_read_tokens, cache_write_tokens, reasoning_tokens), so the condition is read from
 * the index, not from the steps' rows.
 */
export class PlanStepParts1795227141000 implements MigrationInterface {
  name = 'PlanStepParts1795227141000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const d = dialectOf(queryRunner);
    const q = (name: string) => queryRunner.connection.driver.escape(name);
    const parts = [q('cache_read_tokens'), q('cache_write_tokens'), q('reasoning_tokens')];
    const on = `${q('IX_plan_steps_parts')} ON ${q('plan_steps')}`;
    await sql(
      queryRunner,
      d === 'mysql' || d === 'mssql'
        ? `CREATE INDEX ${on} (${[q('plan_id'), ...parts].join(', ')})`
        : `CREATE INDEX ${on} (${q('plan_id')}) WHERE (${parts.map((p) => `${p} > 0`).join(' OR ')})`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    const d = dialectOf(queryRunner);
    const q = (name: string) => queryRunner.connection.driver.escape(name);
    await sql(queryRunner, dropIndex(d, q, 'IX_plan_steps_parts', q('plan_steps')));
  }
}
