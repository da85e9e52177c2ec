import type { MigrationInterface, QueryRunner } from 'typeorm';
import { dialectOf } from '../src/store/sql/dialects';
import { sql } from './1795219400000-incremental-store';
import { indexedTotal } from './1795227120000-token-pages';

/**
 * PostgreSQL only: the rollup rows' updates stay on their page (HOT updates) when they change no
 * indexed column. `IX_analytics_rollups_total` indexed the sum of `input_tokens` and
 * `output_tokens` of every row, so every rollup update that moved tokens (each batch of steps
 * moves its day's `step` rows) wrote an entry into each of the table's indexes. The index is now on
 * a stored generated column `total_tokens`: the sum for `session-total` rows, the only ones the
 * tokens report reads through it, NULL for every other kind, whose updates then leave every
 * indexed column as it was. The table leaves 30 % of each page free for the new row versions
 * (fillfactor 70), as the tables events update row by row do.
 *
 * MySQL/MariaDB and SQL Server already index a `total_tokens` column (1795227140000,
 * 1795227170000) and have no HOT updates; SQLite keeps the expression.
 */
export class RollupHotUpdates1795227210000 implements MigrationInterface {
  name = 'RollupHotUpdates1795227210000';

  async up(queryRunner: QueryRunner): Promise<void> {
    if (dialectOf(queryRunner) !== 'postgres') return;
    const q = (name: string) => queryRunner.connection.driver.escape(name);
    const table = q('analytics_rollups');
    await sql(queryRunner, `DROP INDEX ${q('IX_analytics_rollups_total')}`);
    await sql(
      queryRunner,
      `ALTER TABLE ${table} ADD COLUMN ${q('total_tokens')} bigint GENERATED ALWAYS AS (CASE WHEN ${q('kind')} = 'session-total' THEN ${q('input_tokens')} + ${q('output_tokens')} END) STORED`,
    );
    await sql(
      queryRunner,
      `CREATE INDEX ${q('IX_analytics_rollups_total')} ON ${table} (${q('kind')}, ${q('total_tokens')} DESC)`,
    );
    await sql(queryRunner, `ALTER TABLE ${table} SET (fillfactor = 70)`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    if (dialectOf(queryRunner) !== 'postgres') return;
    const q = (name: string) => queryRunner.connection.driver.escape(name);
    const table = q('analytics_rollups');
    await sql(queryRunner, `ALTER TABLE ${table} RESET (fillfactor)`);
    await sql(queryRunner, `DROP INDEX ${q('IX_analytics_rollups_total')}`);
    await sql(queryRunner, `ALTER TABLE ${table} DROP COLUMN ${q('total_tokens')}`);
    await sql(
      queryRunner,
      `CREATE INDEX ${q('IX_analytics_rollups_total')} ON ${table} (${q('kind')}, ${indexedTotal('postgres', q, '')} DESC)`,
    );
  }
}
