import type { MigrationInterface, QueryRunner } from 'typeorm';
import { dialectOf } from '../src/store/sql/dialects';
import { sql } from './1795219400000-incremental-store';
import { dropIndex } from './1795221000000-plan-list';

/**
 * `IX_plan_steps_cost_source` (cost_source, plan_id): the cost report's reported-vs-priced lines
 * (src/queries/reported-costs.query.ts) read the steps whose cost is a reported one, then their
 * plans; with this index that is one index range of those steps, not a scan of every step stored,
 * whatever the range asked for. The plan id in the key lets the join to the plans read no step row
 * for the plans outside the range.
 */
export class ReportedCostSteps1795227080000 implements MigrationInterface {
  name = 'ReportedCostSteps1795227080000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const q = (name: string) => queryRunner.connection.driver.escape(name);
    await sql(
      queryRunner,
      `CREATE INDEX ${q('IX_plan_steps_cost_source')} ON ${q('plan_steps')} (${q('cost_source')}, ${q('plan_id')})`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    const d = dialectOf(queryRunner);
    const q = (name: string) => queryRunner.connection.driver.escape(name);
    await sql(queryRunner, dropIndex(d, q, 'IX_plan_steps_cost_source', q('plan_steps')));
  }
}
