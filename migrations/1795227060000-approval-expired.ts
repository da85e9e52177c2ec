import type { MigrationInterface, QueryRunner } from 'typeorm';
import { dialectOf } from '../src/store/sql/dialects';
import { addColumns, sql, sqlType } from './1795219400000-incremental-store';

/**
 * `approvals.expired_at`: when the stall check found the approval past its `expires_at`,
 * undecided and unconsumed, and wrote its `approval.expired` webhook (docs/webhooks.md). Set once,
 * under the plan's head lock: a later check skips it. Null for every approval stored before
 * (those past their expiry get their webhook from the first check after this migration).
 * `IX_approvals_expiry` (expired_at, expires_at) serves the check's scan.
 */
export class ApprovalExpired1795227060000 implements MigrationInterface {
  name = 'ApprovalExpired1795227060000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const d = dialectOf(queryRunner);
    const q = (name: string) => queryRunner.connection.driver.escape(name);
    const table = q('approvals');
    await addColumns(queryRunner, d, table, [`${q('expired_at')} ${sqlType(d, 'timestamp')} NULL`]);
    await sql(
      queryRunner,
      `CREATE INDEX ${q('IX_approvals_expiry')} ON ${table} (${q('expired_at')}, ${q('expires_at')})`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    const d = dialectOf(queryRunner);
    const q = (name: string) => queryRunner.connection.driver.escape(name);
    const table = q('approvals');
    await sql(
      queryRunner,
      d === 'mysql' || d === 'mssql'
        ? `DROP INDEX ${q('IX_approvals_expiry')} ON ${table}`
        : `DROP INDEX ${q('IX_approvals_expiry')}`,
    );
    await sql(queryRunner, `ALTER TABLE ${table} DROP COLUMN ${q('expired_at')}`);
  }
}
