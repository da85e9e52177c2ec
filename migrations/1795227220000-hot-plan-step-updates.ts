import type { MigrationInterface, QueryRunner } from 'typeorm';
import { dialectOf } from '../src/store/sql/dialects';
import { sql } from './1795219400000-incremental-store';
import { indexedTotal } from './1795227120000-token-pages';

/**
 * PostgreSQL only: a plan's and a step's updates stay on their page (HOT updates) while they
 * change no indexed column, as the rollups' do since 1795227210000.
 *
 * - `IX_execution_plans_tokens` indexed the sum of a plan's two token counters, which every step
 *   with tokens moves. It now indexes a stored generated column `final_total_tokens`: that sum for
 *   a plan that ended (completed, failed or cancelled), NULL while it runs, and holds only the
 *   ended plans (a partial index). The tokens report's plan pages read the ended plans from it and
 *   the running ones of the range through `IX_execution_plans_status_created`
 *   (src/queries/token-usage.query.ts), so a running plan's token updates touch no index.
 * - `IX_plan_steps_cost_source` (cost_source, plan_id) changed when a step ended (its cost source
 *   goes from none to priced or reported). It now indexes a stored generated column
 *   `reported_plan_id`: the step's plan id when its cost is a reported one, NULL otherwise, and
 *   holds only those steps. A step's end with a priced cost leaves it NULL.
 *
 * Adding a stored column rewrites the table under an exclusive lock: on a large store, run it
 * while the workers are stopped.
 */
export class HotPlanStepUpdates1795227220000 implements MigrationInterface {
  name = 'HotPlanStepUpdates1795227220000';

  async up(queryRunner: QueryRunner): Promise<void> {
    if (dialectOf(queryRunner) !== 'postgres') return;
    const q = (name: string) => queryRunner.connection.driver.escape(name);
    const plans = q('execution_plans');
    const steps = q('plan_steps');
    const ended = `'completed', 'failed', 'cancelled'`;
    await sql(queryRunner, `DROP INDEX ${q('IX_execution_plans_tokens')}`);
    await sql(
      queryRunner,
      `ALTER TABLE ${plans} ADD COLUMN ${q('final_total_tokens')} bigint GENERATED ALWAYS AS (CASE WHEN ${q('status')} IN (${ended}) THEN ${q('total_input_tokens')} + ${q('total_output_tokens')} END) STORED`,
    );
    await sql(
      queryRunner,
      `CREATE INDEX ${q('IX_execution_plans_tokens')} ON ${plans} (${q('final_total_tokens')} DESC, ${q('id')}) WHERE ${q('final_total_tokens')} IS NOT NULL`,
    );
    await sql(queryRunner, `DROP INDEX ${q('IX_plan_steps_cost_source')}`);
    await sql(
      queryRunner,
      `ALTER TABLE ${steps} ADD COLUMN ${q('reported_plan_id')} varchar GENERATED ALWAYS AS (CASE WHEN ${q('cost_source')} = 'reported' THEN ${q('plan_id')} END) STORED`,
    );
    await sql(
      queryRunner,
      `CREATE INDEX ${q('IX_plan_steps_cost_source')} ON ${steps} (${q('reported_plan_id')}) WHERE ${q('reported_plan_id')} IS NOT NULL`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    if (dialectOf(queryRunner) !== 'postgres') return;
    const q = (name: string) => queryRunner.connection.driver.escape(name);
    const plans = q('execution_plans');
    const steps = q('plan_steps');
    await sql(queryRunner, `DROP INDEX ${q('IX_plan_steps_cost_source')}`);
    await sql(queryRunner, `ALTER TABLE ${steps} DROP COLUMN ${q('reported_plan_id')}`);
    await sql(
      queryRunner,
      `CREATE INDEX ${q('IX_plan_steps_cost_source')} ON ${steps} (${q('cost_source')}, ${q('plan_id')})`,
    );
    await sql(queryRunner, `DROP INDEX ${q('IX_execution_plans_tokens')}`);
    await sql(queryRunner, `ALTER TABLE ${plans} DROP COLUMN ${q('final_total_tokens')}`);
    await sql(
      queryRunner,
      `CREATE INDEX ${q('IX_execution_plans_tokens')} ON ${plans} (${indexedTotal('postgres', q)} DESC, ${q('id')})`,
    );
  }
}
