import type { MigrationInterface, QueryRunner } from 'typeorm';
import { columnTypeFor, dialectOf, type Dialect } from '../src/store/sql/dialects';
import type { ColumnKind } from '../src/store/sql/column-kinds';
import { sql } from './1795219400000-incremental-store';
import { BINARY_COLLATION } from './1795219500000-databases-alike';

/**
 * `approvals`: one row per `approval.requested`, decided by `approval.decided` and consumed once
 * (src/store/entities/approval.entity.ts, docs/approvals.md). Additive: a new table, filled by the
 * worker from the events it stores from now on. `IX_approvals_requested_at` serves the inbox
 * (oldest first), `IX_approvals_plan_id` the approvals of one plan.
 */
export class Approvals1795225100000 implements MigrationInterface {
  name = 'Approvals1795225100000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const d = dialectOf(queryRunner);
    const q = (name: string) => queryRunner.connection.driver.escape(name);
    const binary = BINARY_COLLATION[d] ? ` COLLATE ${BINARY_COLLATION[d]}` : '';
    const tableOptions = d === 'mysql' ? ' DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci' : '';
    const column = ([name, kind, options]: Column) =>
      `${q(name)} ${type(d, kind)}${options.includes('id') ? binary : ''} ${options.includes('null') ? 'NULL' : 'NOT NULL'}`;
    const table = q('approvals');
    await sql(
      queryRunner,
      `CREATE TABLE ${table} (${[
        ...COLUMNS.map(column),
        `CONSTRAINT ${q('PK_approvals')} PRIMARY KEY (${q('approval_id')})`,
      ].join(', ')})${tableOptions}`,
    );
    await sql(queryRunner, `CREATE INDEX ${q('IX_approvals_requested_at')} ON ${table} (${q('requested_at')})`);
    await sql(queryRunner, `CREATE INDEX ${q('IX_approvals_plan_id')} ON ${table} (${q('plan_id')})`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await sql(queryRunner, `DROP TABLE ${queryRunner.connection.driver.escape('approvals')}`);
  }
}

/** Name, kind, and `id` (compared byte for byte: the binary collation) and/or `null`. */
type Column = [string, ColumnKind | { varchar: number }, string[]];

const COLUMNS: Column[] = [
  ['approval_id', 'externalId', ['id']],
  ['plan_id', 'externalId', ['id']],
  ['session_id', 'externalId', ['id']],
  ['step_id', 'externalId', ['id']],
  ['tool', { varchar: 200 }, ['id', 'null']],
  ['args_digest', { varchar: 64 }, []],
  ['expires_at', 'timestamp', []],
  ['assignee', { varchar: 200 }, ['id', 'null']],
  ['reason', 'longText', ['null']],
  ['requested_at', 'timestamp', []],
  ['request_seq', 'int', []],
  ['request_event_id', 'uuid', ['id']],
  ['decision', { varchar: 10 }, ['null']],
  ['decided_by', { varchar: 200 }, ['id', 'null']],
  ['feedback', 'longText', ['null']],
  ['edited_args_digest', { varchar: 64 }, ['null']],
  ['decided_at', 'timestamp', ['null']],
  ['consumed_at', 'timestamp', ['null']],
  ['consumed_by', { varchar: 200 }, ['id', 'null']],
];

/** A column kind's SQL type: `nvarchar(100)`, `datetime2(3)`. */
function type(d: Dialect, kind: ColumnKind | { varchar: number }): string {
  const t = columnTypeFor(d, kind);
  const size = t.length ?? (t.precision !== undefined ? String(t.precision) : undefined);
  return size === undefined ? String(t.type) : `${String(t.type)}(${size})`;
}
