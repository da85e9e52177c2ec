import type { MigrationInterface, QueryRunner } from 'typeorm';
import { dialectOf, type Dialect } from '../src/store/sql/dialects';
import { sql } from './1795219400000-incremental-store';
import { dropIndex } from './1795221000000-plan-list';

/**
 * The indexes the tokens report's pages read (docs/store.md#analytics-rollups):
 *
 * - `IX_execution_plans_tokens`: the plans largest first by their tokens (input plus output), ids
 *   breaking ties, so that a page of plan lines reads a page of this index instead of sorting every
 *   plan of the range. The database computes the sum from the two token columns, so every writer
 *   of plans (the worker, a rebuild, a fork) keeps it right without knowing of it. PostgreSQL and
 *   SQLite index the expression itself; MySQL/MariaDB and SQL Server index a computed column
 *   `total_tokens` that is not stored (VIRTUAL; SQL Server: not PERSISTED): adding it writes no
 *   row, and the index build reads the table once. SQL Server accepts writes to a table with such
 *   an index only from sessions with ANSI_NULLS, ANSI_PADDING, ANSI_WARNINGS, ARITHABORT,
 *   CONCAT_NULL_YIELDS_NULL and QUOTED_IDENTIFIER on and NUMERIC_ROUNDABORT off: tedious's (the
 *   driver's) defaults.
 * - `IX_analytics_rollups_session` (session_id, kind, day): the rollup rows of a few sessions (those
 *   the parts of days at a range's ends touch), without reading the range's other rows.
 */
export class TokenPages1795227120000 implements MigrationInterface {
  name = 'TokenPages1795227120000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const d = dialectOf(queryRunner);
    const q = (name: string) => queryRunner.connection.driver.escape(name);
    const plans = q('execution_plans');
    const sum = `${q('total_input_tokens')} + ${q('total_output_tokens')}`;
    if (d === 'mysql')
      await sql(queryRunner, `ALTER TABLE ${plans} ADD COLUMN ${q('total_tokens')} BIGINT AS (${sum}) VIRTUAL`);
    if (d === 'mssql') await sql(queryRunner, `ALTER TABLE ${plans} ADD ${q('total_tokens')} AS (${sum})`);
    await sql(
      queryRunner,
      `CREATE INDEX ${q('IX_execution_plans_tokens')} ON ${plans} (${indexedTotal(d, q)} DESC, ${q('id')})`,
    );
    await sql(
      queryRunner,
      `CREATE INDEX ${q('IX_analytics_rollups_session')} ON ${q('analytics_rollups')} (${q('session_id')}, ${q('kind')}, ${q('day')})`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    const d = dialectOf(queryRunner);
    const q = (name: string) => queryRunner.connection.driver.escape(name);
    const plans = q('execution_plans');
    await sql(queryRunner, dropIndex(d, q, 'IX_analytics_rollups_session', q('analytics_rollups')));
    await sql(queryRunner, dropIndex(d, q, 'IX_execution_plans_tokens', plans));
    if (d === 'mysql' || d === 'mssql') await sql(queryRunner, `ALTER TABLE ${plans} DROP COLUMN ${q('total_tokens')}`);
  }
}

/**
 * What the index orders by: the computed column `total_tokens` where there is one, else the sum of
 * the input and output token columns (in parentheses): `total_input_tokens` and
 * `total_output_tokens` of the plans, `input_tokens` and `output_tokens` of the rollups.
 */
export function indexedTotal(d: Dialect, q: (name: string) => string, prefix: '' | 'total_' = 'total_'): string {
  return d === 'mysql' || d === 'mssql'
    ? q('total_tokens')
    : `(${q(`${prefix}input_tokens`)} + ${q(`${prefix}output_tokens`)})`;
}
