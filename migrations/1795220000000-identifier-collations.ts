import type { MigrationInterface, QueryRunner } from 'typeorm';
import { columnTypeFor, dialectOf, type Dialect } from '../src/store/sql/dialects';
import { sql } from './1795219400000-incremental-store';
import { dropColumnStatistics, type IdColumn } from './1795219500000-databases-alike';

/**
 * Columns added after the binary collations were set, repaired: they hold an id or a name compared
 * with one, and were created in the database's default collation, which on SQL Server and MariaDB
 * ignores case (the schema lint found them):
 * - `execution_plans.parent_plan_id`: retention compares it with `execution_plans.id`, which on SQL
 *   Server failed every run on a database whose default collation is not the ids' (Msg 468), and
 *   a parent lookup found the forks of `Plan_A` for `plan_a`;
 * - `execution_plans.fork_checkpoint`: a checkpoint id;
 * - `plan_handoffs.reason`: grouped by in handoff patterns (`Timeout` and `timeout` were one on
 *   SQL Server and MariaDB, two on PostgreSQL and SQLite);
 * - `plan_steps.provider`, `price_overrides.provider`: provider names, matched exactly.
 *
 * SQL Server changes a column's collation only with no index or statistics over it: the parent
 * index is dropped and created again, and the columns' statistics are dropped (the optimizer makes
 * them again). MariaDB/MySQL convert each column in place (can be run again after an
 * interruption). PostgreSQL and SQLite compare these byte for byte already.
 */
export class IdentifierCollations1795220000000 implements MigrationInterface {
  name = 'IdentifierCollations1795220000000';

  up(queryRunner: QueryRunner): Promise<void> {
    return run(queryRunner, 'up');
  }

  down(queryRunner: QueryRunner): Promise<void> {
    return run(queryRunner, 'down');
  }
}

const COLUMNS: Array<IdColumn & { nullable: boolean }> = [
  { table: 'execution_plans', column: 'parent_plan_id', kind: 'externalId', nullable: true },
  { table: 'execution_plans', column: 'fork_checkpoint', kind: 'externalId', nullable: true },
  { table: 'plan_steps', column: 'provider', kind: { varchar: 100 }, nullable: true },
  { table: 'plan_handoffs', column: 'reason', kind: { varchar: 50 }, nullable: false },
  { table: 'price_overrides', column: 'provider', kind: { varchar: 100 }, nullable: true },
];

const COLLATIONS = {
  mssql: { up: 'Latin1_General_100_BIN2', down: 'DATABASE_DEFAULT' },
  mysql: { up: 'utf8mb4_bin', down: 'utf8mb4_unicode_ci' },
};

function typeOf(d: Dialect, c: IdColumn): string {
  const t = columnTypeFor(d, c.kind);
  return t.length === undefined ? String(t.type) : `${String(t.type)}(${t.length})`;
}

function statements(d: Dialect, direction: 'up' | 'down'): string[] {
  const nullability = (c: { nullable: boolean }) => (c.nullable ? 'NULL' : 'NOT NULL');
  if (d === 'mysql') {
    const collation = COLLATIONS.mysql[direction];
    return COLUMNS.map(
      (c) =>
        `ALTER TABLE \`${c.table}\` MODIFY \`${c.column}\` ${typeOf(d, c)} CHARACTER SET utf8mb4 COLLATE ${collation} ${nullability(c)}`,
    );
  }
  if (d !== 'mssql') return [];
  const collation = COLLATIONS.mssql[direction];
  return [
    `DROP INDEX "IX_execution_plans_parent" ON "execution_plans"`,
    dropColumnStatistics(COLUMNS),
    ...COLUMNS.map(
      (c) =>
        `ALTER TABLE "${c.table}" ALTER COLUMN "${c.column}" ${typeOf(d, c)} COLLATE ${collation} ${nullability(c)}`,
    ),
    `CREATE INDEX "IX_execution_plans_parent" ON "execution_plans" ("parent_plan_id")`,
  ];
}

async function run(queryRunner: QueryRunner, direction: 'up' | 'down'): Promise<void> {
  for (const statement of statements(dialectOf(queryRunner), direction)) await sql(queryRunner, statement);
}
