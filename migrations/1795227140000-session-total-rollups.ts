import type { MigrationInterface, QueryRunner } from 'typeorm';
import { rebuildRollups } from '../src/store/rollups/rollup-rebuild';
import { dialectOf } from '../src/store/sql/dialects';
import { sql } from './1795219400000-incremental-store';
import { inMemory } from './1795224800000-rollup-session-tokens';
import { dropIndex } from './1795221000000-plan-list';
import { indexedTotal } from './1795227120000-token-pages';

/**
 * `analytics_rollups` rows of kind `session-total`: one per session, of all days (`day`
 * 0000-00-00), its plans and their tokens (docs/store.md#analytics-rollups), and
 * `IX_analytics_rollups_total` (kind, input plus output tokens descending): the tokens report's
 * session page reads the sessions largest of all time first, a few of them, instead of summing
 * every session of a long range. PostgreSQL and SQLite index the expression; MySQL/MariaDB and SQL
 * Server a computed column `total_tokens` that is not stored, as IX_execution_plans_tokens does
 * (1795227120000-token-pages.ts, the SQL Server session settings included).
 *
 * Existing plans: `migrate` fills the new rows from the stored plans and steps itself, a page of
 * plans at a time (`--print-sql` prints nothing for it; the rows need the data).
 */
export class SessionTotalRollups1795227140000 implements MigrationInterface {
  name = 'SessionTotalRollups1795227140000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const d = dialectOf(queryRunner);
    const q = (name: string) => queryRunner.connection.driver.escape(name);
    const table = q('analytics_rollups');
    const sum = `${q('input_tokens')} + ${q('output_tokens')}`;
    if (d === 'mysql')
      await sql(queryRunner, `ALTER TABLE ${table} ADD COLUMN ${q('total_tokens')} BIGINT AS (${sum}) VIRTUAL`);
    if (d === 'mssql') await sql(queryRunner, `ALTER TABLE ${table} ADD ${q('total_tokens')} AS (${sum})`);
    await sql(
      queryRunner,
      `CREATE INDEX ${q('IX_analytics_rollups_total')} ON ${table} (${q('kind')}, ${indexedTotal(d, q, '')} DESC)`,
    );
    if (!inMemory(queryRunner)) await rebuildRollups(queryRunner.manager, { kinds: ['session-total'] });
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    const d = dialectOf(queryRunner);
    const q = (name: string) => queryRunner.connection.driver.escape(name);
    const table = q('analytics_rollups');
    await sql(queryRunner, `DELETE FROM ${table} WHERE ${q('kind')} = 'session-total'`);
    await sql(queryRunner, dropIndex(d, q, 'IX_analytics_rollups_total', table));
    if (d === 'mysql' || d === 'mssql') await sql(queryRunner, `ALTER TABLE ${table} DROP COLUMN ${q('total_tokens')}`);
  }
}
