import type { MigrationInterface, QueryRunner } from 'typeorm';
import { columnTypeFor, dialectOf, type ColumnKind, type Dialect } from '../src/store/sql/dialects';
import { sql } from './1795219400000-incremental-store';
import { BINARY_COLLATION } from './1795219500000-databases-alike';

/**
 * - `price_overrides`: negotiated or internal prices (`plan-ledger prices set`): a model pattern,
 *   an optional provider, the instant from which they apply, USD per million tokens. Steps stored
 *   from then on with a time at or after `effective_from` are priced by the newest one in force.
 * - `price_reprices`: one audit row per `plan-ledger prices reprice --yes`: what it selected, how
 *   many steps and plans it changed, the totals before and after, the diff per model (JSON).
 * Ids compare byte for byte (the binary collation of every id column on SQL Server and MySQL); on
 * MariaDB/MySQL both tables are utf8mb4 whatever the database's default character set.
 */
export class PriceOverrides1795219800000 implements MigrationInterface {
  name = 'PriceOverrides1795219800000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const d = dialectOf(queryRunner);
    const q = (name: string) => queryRunner.connection.driver.escape(name);
    const col = (name: string, kind: ColumnKind | { varchar: number }, nullable = false) =>
      `${q(name)} ${type(d, kind)} ${nullable ? 'NULL' : 'NOT NULL'}`;
    const binary = BINARY_COLLATION[d];
    // MariaDB/MySQL: utf8mb4 like every other table, whatever the database's default (latin1 would lose emoji)
    const tableOptions = d === 'mysql' ? ' DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci' : '';
    const id = (kind: ColumnKind) =>
      binary ? `${q('id')} ${type(d, kind)} COLLATE ${binary} NOT NULL` : col('id', kind);
    await sql(
      queryRunner,
      `CREATE TABLE ${q('price_overrides')} (${[
        id('externalId'),
        col('model_pattern', { varchar: 100 }),
        col('provider', { varchar: 100 }, true),
        col('effective_from', 'timestamp'),
        col('input_per_mtok', 'money'),
        col('output_per_mtok', 'money'),
        col('cache_read_per_mtok', 'money', true),
        col('cache_write_per_mtok', 'money', true),
        col('currency', { varchar: 3 }),
        col('created_at', 'timestamp'),
        `CONSTRAINT ${q('PK_price_overrides')} PRIMARY KEY (${q('id')})`,
      ].join(', ')})${tableOptions}`,
    );
    await sql(
      queryRunner,
      `CREATE TABLE ${q('price_reprices')} (${[
        id('uuid'),
        col('ran_at', 'timestamp'),
        col('from_at', 'timestamp'),
        col('to_at', 'timestamp'),
        col('model', { varchar: 100 }, true),
        col('steps', 'int'),
        col('plans', 'int'),
        col('old_total', 'money'),
        col('new_total', 'money'),
        col('diff', 'longText'),
        `CONSTRAINT ${q('PK_price_reprices')} PRIMARY KEY (${q('id')})`,
      ].join(', ')})${tableOptions}`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    const q = (name: string) => queryRunner.connection.driver.escape(name);
    await sql(queryRunner, `DROP TABLE ${q('price_reprices')}`);
    await sql(queryRunner, `DROP TABLE ${q('price_overrides')}`);
  }
}

/** A column kind's SQL type: `decimal(24,12)`, `nvarchar(100)`, `datetime2(3)`. */
function type(d: Dialect, kind: ColumnKind | { varchar: number }): string {
  const t = columnTypeFor(d, kind);
  if (t.scale !== undefined) return `${String(t.type)}(${t.precision},${t.scale})`;
  const size = t.length ?? (t.precision !== undefined ? String(t.precision) : undefined);
  return size === undefined ? String(t.type) : `${String(t.type)}(${size})`;
}
