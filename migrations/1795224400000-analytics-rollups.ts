import type { MigrationInterface, QueryRunner } from 'typeorm';
import { rebuildRollups } from '../src/store/rollups/rollup-rebuild';
import { columnTypeFor, dialectOf, type Dialect } from '../src/store/sql/dialects';
import type { ColumnKind } from '../src/store/sql/column-kinds';
import { sql } from './1795219400000-incremental-store';
import { BINARY_COLLATION } from './1795219500000-databases-alike';

/**
 * `analytics_rollups`: the analytics' sums per UTC day and key (src/store/entities/analytics-rollup.entity.ts),
 * kept by every writer of plans in its own transaction, so the analytics read O(days x keys)
 * rows instead of every step (docs/store.md#analytics-rollups). The primary key is an id derived
 * from the day and the key; `IX_analytics_rollups_kind_day` serves the reads (one kind, a range
 * of days).
 *
 * Existing plans: the rollups are filled from the stored plans and steps by `migrate` itself
 * (`--print-sql` prints the schema change; the rows need the data).
 * `plan-ledger analytics rebuild-rollups` fills them again.
 */
export class AnalyticsRollups1795224400000 implements MigrationInterface {
  name = 'AnalyticsRollups1795224400000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const d = dialectOf(queryRunner);
    const q = (name: string) => queryRunner.connection.driver.escape(name);
    const binary = BINARY_COLLATION[d] ? ` COLLATE ${BINARY_COLLATION[d]}` : '';
    const tableOptions = d === 'mysql' ? ' DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci' : '';
    const zero = (column: string, value: string) =>
      `NOT NULL${d === 'mssql' ? ` CONSTRAINT ${q(`DF_analytics_rollups_${column}`)}` : ''} DEFAULT ${value}`;
    const counts = COUNTS.map((c) => `${q(c)} ${type(d, 'bigint')} ${zero(c, '0')}`);
    const table = q('analytics_rollups');
    await sql(
      queryRunner,
      `CREATE TABLE ${table} (${[
        `${q('id')} ${type(d, 'uuid')}${binary} NOT NULL`,
        `${q('day')} ${type(d, { varchar: 10 })} NOT NULL`,
        `${q('kind')} ${type(d, { varchar: 20 })} NOT NULL`,
        `${q('session_id')} ${type(d, 'externalId')}${binary} NULL`,
        `${q('agent_id')} ${type(d, { varchar: 100 })}${binary} NULL`,
        `${q('model')} ${type(d, { varchar: 100 })}${binary} NULL`,
        `${q('status')} ${type(d, { varchar: 20 })} NULL`,
        ...counts,
        `${q('cost')} ${type(d, 'money')} ${zero('cost', d === 'sqlite' ? "'0.000000000000'" : '0')}`,
        `CONSTRAINT ${q('PK_analytics_rollups')} PRIMARY KEY (${q('id')})`,
      ].join(', ')})${tableOptions}`,
    );
    await sql(
      queryRunner,
      `CREATE INDEX ${q('IX_analytics_rollups_kind_day')} ON ${table} (${q('kind')}, ${q('day')})`,
    );
    if (d === 'mssql') await sql(queryRunner, `ALTER TABLE ${table} SET (LOCK_ESCALATION = DISABLE)`);
    if (!inMemory(queryRunner)) await rebuildRollups(queryRunner.manager);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await sql(queryRunner, `DROP TABLE ${queryRunner.connection.driver.escape('analytics_rollups')}`);
  }
}

const COUNTS = [
  'items',
  'input_tokens',
  'output_tokens',
  'cache_read_tokens',
  'cache_write_tokens',
  'reasoning_tokens',
  'token_steps',
  'costed_steps',
  'priced_steps',
  'unpriced_steps',
];

/** A column kind's SQL type: `decimal(24,12)`, `nvarchar(100)`, `bigint`. */
function type(d: Dialect, kind: ColumnKind | { varchar: number }): string {
  const t = columnTypeFor(d, kind);
  if (t.scale !== undefined) return `${String(t.type)}(${t.precision},${t.scale})`;
  const size = t.length ?? (t.precision !== undefined ? String(t.precision) : undefined);
  return size === undefined ? String(t.type) : `${String(t.type)}(${size})`;
}

/** `--print-sql`: statements are recorded, not run, and nothing can be read. */
function inMemory(queryRunner: QueryRunner): boolean {
  return (queryRunner as unknown as { sqlMemoryMode?: boolean }).sqlMemoryMode === true;
}
