import type { MigrationInterface, QueryRunner } from 'typeorm';
import { dialectOf } from '../src/store/sql/dialects';
import { sql } from './1795219400000-incremental-store';

/** The computed `total_tokens` columns of MySQL/MariaDB, the sum each holds, and the index on it. */
const TOTALS = [
  {
    table: 'execution_plans',
    sum: ['total_input_tokens', 'total_output_tokens'],
    index: 'IX_execution_plans_tokens',
    on: (q: (name: string) => string) => `${q('total_tokens')} DESC, ${q('id')}`,
  },
  {
    table: 'analytics_rollups',
    sum: ['input_tokens', 'output_tokens'],
    index: 'IX_analytics_rollups_total',
    on: (q: (name: string) => string) => `${q('kind')}, ${q('total_tokens')} DESC`,
  },
] as const;

/**
 * MySQL/MariaDB: the `total_tokens` columns that IX_execution_plans_tokens and
 * IX_analytics_rollups_total index are stored (`STORED`) instead of computed on read (`VIRTUAL`).
 * MariaDB 10.11 answers some reads through an index on a VIRTUAL column without rows it holds:
 * with a rowid filter or an index merge beside that index (e.g. `deleted_at IS NULL` through
 * IX_execution_plans_deleted), a page of the tokens report's plan lines came back short, and the
 * pages after it were lost. A STORED column's index is kept by the row's own writes, as any other
 * column's. Each table is rebuilt once (one ALTER TABLE); the other databases are not touched
 * (PostgreSQL and SQLite index the expression, SQL Server's index on its computed column holds the
 * values).
 */
export class StoredTokenTotals1795227170000 implements MigrationInterface {
  name = 'StoredTokenTotals1795227170000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await this.recreate(queryRunner, 'STORED');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await this.recreate(queryRunner, 'VIRTUAL');
  }

  private async recreate(queryRunner: QueryRunner, kind: 'STORED' | 'VIRTUAL'): Promise<void> {
    if (dialectOf(queryRunner) !== 'mysql') return;
    const q = (name: string) => queryRunner.connection.driver.escape(name);
    for (const t of TOTALS) {
      const sum = t.sum.map(q).join(' + ');
      await sql(
        queryRunner,
        `ALTER TABLE ${q(t.table)} DROP INDEX ${q(t.index)}, DROP COLUMN ${q('total_tokens')}, ` +
          `ADD COLUMN ${q('total_tokens')} BIGINT AS (${sum}) ${kind}, ADD INDEX ${q(t.index)} (${t.on(q)})`,
      );
    }
  }
}
