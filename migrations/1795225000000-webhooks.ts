import type { MigrationInterface, QueryRunner } from 'typeorm';
import { columnTypeFor, dialectOf, type ColumnKind, type Dialect } from '../src/store/sql/dialects';
import { sql } from './1795219400000-incremental-store';
import { BINARY_COLLATION } from './1795219500000-databases-alike';

/**
 * Webhooks (docs/webhooks.md):
 * - `webhook_subscriptions`: where to send (URL), the signing secret, the event types wanted
 *   (`*`: all), whether it is enabled (`plan-ledger webhooks add|list|remove`).
 * - `webhook_deliveries`: the transactional outbox, one row per triggering event and subscription,
 *   written in the transaction that stores the event; the delivery loop claims due rows with a
 *   lease (`lease_owner`, `lease_until`), and records each attempt (`attempts`, `next_attempt_at`,
 *   `status`: pending, delivered or dead). `IX_webhook_deliveries_due` serves the claim.
 * Ids compare byte for byte (the binary collation on SQL Server and MySQL); on MariaDB/MySQL both
 * tables are utf8mb4 whatever the database's default character set.
 */
export class Webhooks1795225000000 implements MigrationInterface {
  name = 'Webhooks1795225000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const d = dialectOf(queryRunner);
    const q = (name: string) => queryRunner.connection.driver.escape(name);
    const binary = BINARY_COLLATION[d] ? ` COLLATE ${BINARY_COLLATION[d]}` : '';
    const col = (name: string, kind: ColumnKind | { varchar: number }, nullable = false, id = false) =>
      `${q(name)} ${type(d, kind)}${id ? binary : ''} ${nullable ? 'NULL' : 'NOT NULL'}`;
    const tableOptions = d === 'mysql' ? ' DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci' : '';
    await sql(
      queryRunner,
      `CREATE TABLE ${q('webhook_subscriptions')} (${[
        col('id', 'externalId', false, true),
        col('url', { varchar: 2000 }),
        col('secret', { varchar: 100 }),
        col('event_types', { varchar: 500 }),
        col('enabled', 'boolean'),
        col('created_at', 'timestamp'),
        `CONSTRAINT ${q('PK_webhook_subscriptions')} PRIMARY KEY (${q('id')})`,
      ].join(', ')})${tableOptions}`,
    );
    const deliveries = q('webhook_deliveries');
    await sql(
      queryRunner,
      `CREATE TABLE ${deliveries} (${[
        col('id', 'uuid', false, true),
        col('subscription_id', 'externalId', false, true),
        col('event_type', { varchar: 50 }),
        col('event_id', 'uuid', false, true),
        col('plan_id', 'externalId', false, true),
        col('payload', 'longText'),
        col('status', { varchar: 20 }),
        col('attempts', 'int'),
        col('next_attempt_at', 'timestamp'),
        col('lease_owner', 'uuid', true, true),
        col('lease_until', 'timestamp', true),
        col('last_error', { varchar: 500 }, true),
        col('created_at', 'timestamp'),
        col('delivered_at', 'timestamp', true),
        `CONSTRAINT ${q('PK_webhook_deliveries')} PRIMARY KEY (${q('id')})`,
      ].join(', ')})${tableOptions}`,
    );
    await sql(
      queryRunner,
      `CREATE INDEX ${q('IX_webhook_deliveries_due')} ON ${deliveries} (${q('status')}, ${q('next_attempt_at')})`,
    );
    await sql(
      queryRunner,
      `CREATE INDEX ${q('IX_webhook_deliveries_subscription')} ON ${deliveries} (${q('subscription_id')})`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    const q = (name: string) => queryRunner.connection.driver.escape(name);
    await sql(queryRunner, `DROP TABLE ${q('webhook_deliveries')}`);
    await sql(queryRunner, `DROP TABLE ${q('webhook_subscriptions')}`);
  }
}

/** A column kind's SQL type: `nvarchar(100)`, `datetime2(3)`, `bit`. */
function type(d: Dialect, kind: ColumnKind | { varchar: number }): string {
  const t = columnTypeFor(d, kind);
  if (t.scale !== undefined) return `${String(t.type)}(${t.precision},${t.scale})`;
  const size = t.length ?? (t.precision !== undefined ? String(t.precision) : undefined);
  return size === undefined ? String(t.type) : `${String(t.type)}(${size})`;
}
