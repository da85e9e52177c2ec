import { createHash } from 'node:crypto';
import { parseDatabaseUrl } from '../../src/config/database-url';
import { migrationSql } from '../../src/store/migrator';

/**
 * On SQL Server editions other than Enterprise, `ALTER TABLE ... ADD <column> ... NOT NULL DEFAULT`
 * writes the default into every row while it holds the table's schema-modification lock: on a big
 * table, every worker of the old version waits (and times out) for the whole rewrite. A new column
 * of a table that already exists is added NULL, and the code reads NULL as its default (or a
 * backfill in batches sets it, and a later release makes it NOT NULL): docs/schema.md, "Adding a
 * column". These migrations were released with such a column; their SQL must never change, so it
 * is pinned here (SHA-256 of their SQL Server statements).
 */
const RELEASED_NOT_NULL_ADDS: Readonly<Record<string, string>> = {
  IncrementalStore1795219400000: '5647415644b25536eab71151164d763f1d5bd37fb97b23546ffb6f0e7d4c6640',
  StepCost1795219700000: '67e2ceb6b905ede22cc60244368c45237d26b34f4c75ea74eab899b92c32453d',
};

type MigrationSql = Array<{ migration: string; statements: string[] }>;

/** The columns of `ALTER TABLE "t" ADD <list>` (a type's `(24,12)` has no space after its comma). */
function addedColumns(list: string): Array<{ column: string; definition: string }> {
  return list.split(/, (?=")/).map((definition) => ({ column: /^"(\w+)"/.exec(definition)?.[1] ?? '?', definition }));
}

/**
 * Every column a migration adds NOT NULL to a table an earlier migration created, as
 * `Migration: table.column`. Tables the same migration creates are empty: any column is fine there.
 */
function notNullAdds(migrations: MigrationSql): string[] {
  const existing = new Set<string>();
  const found: string[] = [];
  for (const { migration, statements } of migrations) {
    const created = new Set<string>();
    for (const sql of statements) {
      const create = /^CREATE TABLE "(\w+)"/.exec(sql);
      if (create) created.add(create[1]!);
      const add = /^ALTER TABLE "(\w+)" ADD (?!CONSTRAINT )(.*)$/.exec(sql);
      if (!add || !existing.has(add[1]!) || created.has(add[1]!)) continue;
      for (const c of addedColumns(add[2]!))
        if (/ NOT NULL\b/.test(c.definition)) found.push(`${migration}: ${add[1]}.${c.column}`);
    }
    for (const t of created) existing.add(t);
  }
  return found;
}

const digest = (statements: string[]) => createHash('sha256').update(statements.join(';\n')).digest('hex');

describe('columns added to existing tables on SQL Server', () => {
  let up: MigrationSql;
  beforeAll(async () => {
    up = await migrationSql(parseDatabaseUrl('mssql://sa:x@127.0.0.1:1/none'), 'up');
  });

  it('adds no NOT NULL column to an existing table, but in the migrations released so', () => {
    const found = notNullAdds(up);
    expect(found).toEqual([
      'IncrementalStore1795219400000: plan_heads.pending_events',
      'StepCost1795219700000: plan_steps.cache_read_tokens',
      'StepCost1795219700000: plan_steps.cache_write_tokens',
      'StepCost1795219700000: plan_steps.reasoning_tokens',
      'StepCost1795219700000: execution_plans.total_cost',
      'StepCost1795219700000: execution_plans.unpriced_steps',
    ]);
    const offending = [...new Set(found.map((f) => f.slice(0, f.indexOf(':'))))];
    expect(offending.filter((m) => !(m in RELEASED_NOT_NULL_ADDS))).toEqual([]);
  });

  it('keeps the SQL of the migrations released with one as it was released', () => {
    const released = up.filter((m) => m.migration in RELEASED_NOT_NULL_ADDS);
    expect(Object.fromEntries(released.map((m) => [m.migration, digest(m.statements)]))).toEqual(
      RELEASED_NOT_NULL_ADDS,
    );
  });

  it('refuses a new migration that adds a NOT NULL column with a default to an existing table', () => {
    const next: MigrationSql = [
      ...up,
      {
        migration: 'NextRelease1799999999999',
        statements: [
          'CREATE TABLE "plan_notes" ("id" nvarchar(36) NOT NULL, "pinned" bit NOT NULL CONSTRAINT "DF_plan_notes_pinned" DEFAULT 0)',
          'ALTER TABLE "plan_notes" ADD "rank" int NOT NULL CONSTRAINT "DF_plan_notes_rank" DEFAULT 0',
          'ALTER TABLE "execution_plans" ADD "labels" nvarchar(MAX) NULL, "priority" decimal(24,12) NOT NULL CONSTRAINT "DF_execution_plans_priority" DEFAULT 0',
          'ALTER TABLE "plan_steps" ADD "attempts" int NULL',
          'ALTER TABLE "plan_steps" ADD CONSTRAINT "DF_plan_steps_attempts" DEFAULT 0 FOR "attempts"',
        ],
      },
    ];
    // the new table's columns and the nullable ones pass; the NOT NULL one on execution_plans does not
    expect(notNullAdds(next).filter((f) => f.startsWith('NextRelease'))).toEqual([
      'NextRelease1799999999999: execution_plans.priority',
    ]);
  });
});
