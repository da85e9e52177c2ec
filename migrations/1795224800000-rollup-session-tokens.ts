import type { MigrationInterface, QueryRunner } from 'typeorm';
import { rebuildRollups } from '../src/store/rollups/rollup-rebuild';
import { sql } from './1795219400000-incremental-store';

/**
 * `analytics_rollups` rows of kind `session-tokens`: the cache read, cache write and reasoning
 * tokens of each session's steps per UTC day, so that the tokens report reads its session lines
 * from the rollups (docs/store.md#analytics-rollups). No column changes: the rows use the
 * table's existing counters.
 *
 * Existing plans: `migrate` fills the new rows from the stored steps itself, a page of plans at a
 * time (`--print-sql` prints nothing for it; the rows need the data). The other kinds are left
 * as they are. `plan-ledger analytics rebuild-rollups` fills every kind again.
 */
export class RollupSessionTokens1795224800000 implements MigrationInterface {
  name = 'RollupSessionTokens1795224800000';

  async up(queryRunner: QueryRunner): Promise<void> {
    if (!inMemory(queryRunner)) await rebuildRollups(queryRunner.manager, { kinds: ['session-tokens'] });
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    const q = (name: string) => queryRunner.connection.driver.escape(name);
    await sql(queryRunner, `DELETE FROM ${q('analytics_rollups')} WHERE ${q('kind')} = 'session-tokens'`);
  }
}

/** `--print-sql`: statements are recorded, not run, and nothing can be read. */
export function inMemory(queryRunner: QueryRunner): boolean {
  return (queryRunner as unknown as { sqlMemoryMode?: boolean }).sqlMemoryMode === true;
}
