import type { MigrationInterface, QueryRunner } from 'typeorm';
import { rebuildRollups } from '../src/store/rollups/rollup-rebuild';
import { sql } from './1795219400000-incremental-store';
import { inMemory } from './1795224800000-rollup-session-tokens';

/**
 * `analytics_rollups` rows of kind `handoff`: the handoffs of each day's plans per from-agent,
 * to-agent and reason, so that `analytics handoffs` reads whole days from the rollups
 * (docs/store.md#analytics-rollups). No column changes: the rows use the table's existing columns.
 *
 * Existing plans: `migrate` fills the new rows from the stored handoffs itself, a page of plans at
 * a time (`--print-sql` prints nothing for it; the rows need the data). The other kinds are left
 * as they are. `plan-ledger analytics rebuild-rollups` fills every kind again.
 */
export class HandoffRollups1795227090000 implements MigrationInterface {
  name = 'HandoffRollups1795227090000';

  async up(queryRunner: QueryRunner): Promise<void> {
    if (!inMemory(queryRunner)) await rebuildRollups(queryRunner.manager, { kinds: ['handoff'] });
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    const q = (name: string) => queryRunner.connection.driver.escape(name);
    await sql(queryRunner, `DELETE FROM ${q('analytics_rollups')} WHERE ${q('kind')} = 'handoff'`);
  }
}
