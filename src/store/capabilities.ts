import type { DataSource } from 'typeorm';
import type { DatabaseTarget } from '../config/database-url';
import type { Logger } from '../shared/logger';
import { sqlDialectOf } from './sql/dialects';
import type { CapabilityPurpose } from './sql/sql-dialect';

/**
 * Asks the database, in one statement, whether it can run what `purpose` sends (the dialect's
 * `capabilities`: on SQL Server the compatibility level OPENJSON needs and the login's
 * permissions, on PostgreSQL the login's privileges), and refuses in one line naming everything
 * missing, before a migration half-runs or a worker dead-letters its first batch. What is worth
 * knowing but not missing (SQL Server's containment, collation and RCSI) is logged.
 */
export async function assertCapabilities(
  ds: DataSource,
  target: DatabaseTarget,
  purpose: CapabilityPurpose,
  logger?: Logger,
): Promise<void> {
  const probe = sqlDialectOf(ds).capabilities;
  if (!probe) return;
  const tables = ds.entityMetadatas.map((m) => m.tableName);
  const { sql, params } = probe.statement(purpose, tables);
  const rows: Record<string, unknown>[] = await ds.query(sql, params);
  const { missing, notes } = probe.read(rows, purpose);
  if (notes.length > 0) logger?.info({ database: target.redacted, notes }, 'database capabilities');
  if (missing.length > 0) {
    const who = purpose === 'migrate' ? 'plan-ledger migrate' : 'the worker';
    throw new Error(`database ${target.redacted} cannot serve ${who}: ${missing.join('; ')}`);
  }
}
