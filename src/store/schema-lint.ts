import type { DataSource } from 'typeorm';
import { identifierColumns } from './entities';
import { sqlDialectOf, type SqlDialect } from './sql/dialects';
import type { TextColumnFacts } from './sql/sql-dialect';

/**
 * The collation lint: every column that holds an id, a key or a name compared with one
 * (`identifierColumns`, declared by the entities) must compare byte for byte, in the ids' binary
 * collation of its database. A column in another collation (the database's default, which on SQL
 * Server and MariaDB ignores case) finds `Plan_A` for `plan_a`, and on SQL Server a comparison
 * with a binary column fails outright (Msg 468, "cannot resolve the collation conflict").
 *
 * It reads the schema as migrated: each dialect's `textColumns` from the live database, or, for
 * SQL Server where no server runs, the columns the recorded `migrate --print-sql` DDL leaves.
 */

export type { TextColumnFacts };

/** One line per identifier column whose collation does not compare byte for byte. */
export function lintCollations(dialect: SqlDialect, facts: readonly TextColumnFacts[]): string[] {
  const found = new Map(facts.map((f) => [`${f.table}.${f.column}`, f]));
  const problems: string[] = [];
  for (const c of identifierColumns()) {
    const f = found.get(`${c.table}.${c.column}`);
    // absent: not a text column here (PostgreSQL's uuid), or not in this schema
    if (!f || f.comparesBytes) continue;
    const has = f.collation ?? "the database's default collation";
    problems.push(
      `${c.table}.${c.column} is in ${has}, not ${dialect.identifierCollation}: ids and the names compared with them must compare byte for byte`,
    );
  }
  return problems;
}

/** The collation lint of a live database (its migrated schema). */
export async function lintSchemaCollations(ds: DataSource): Promise<string[]> {
  const dialect = sqlDialectOf(ds);
  return lintCollations(dialect, await dialect.textColumns(ds));
}
