import { FindOperator, In, Raw } from 'typeorm';
import type { SqlDialect } from './sql-dialect';

/**
 * Lists of ids in a WHERE clause. Retention, erasure and the reads look up a varying number of
 * ids; one parameter per id (`IN (@0, @1, ...)`) makes a new statement text for every length,
 * which SQL Server compiles and caches as a new plan each time. Where the dialect has an `idList`
 * (SQL Server: one JSON array read with OPENJSON), the list is one parameter and the text is the
 * same for every length; elsewhere it is TypeORM's `IN (:...ids)`.
 */

let names = 0;

/** A parameter name no other list of the same statement uses (it never appears in the SQL text). */
function freshName(): string {
  names = (names + 1) % 1_000_000;
  return `idList${names}`;
}

/** `column IN (...)` for a QueryBuilder's where string, and its parameters. */
export function idsIn(
  d: SqlDialect,
  column: string,
  ids: readonly string[],
): [condition: string, params: Record<string, unknown>] {
  const name = freshName();
  if (!d.idList) return [`${column} IN (:...${name})`, { [name]: [...ids] }];
  return [d.idList.condition(column, name), { [name]: d.idList.value(ids) }];
}

/** The find operator "is one of `ids`", for object wheres (`where({ planId: inIds(d, ids) })`). */
export function inIds(d: SqlDialect, ids: readonly string[]): FindOperator<string> {
  const idList = d.idList;
  if (!idList) return In([...ids]);
  const name = freshName();
  return Raw((column) => idList.condition(column, name), { [name]: idList.value(ids) });
}
