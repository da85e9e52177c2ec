import type { EntityManager } from 'typeorm';
import type { SqlDialect, UnlessMatched } from './sql-dialect';

/**
 * The condition of a DELETE from `entity` (its table named, not aliased) that spares the rows
 * `unless` matches: `NOT EXISTS (SELECT 1 FROM <other> m WHERE m.c = <table>.c AND ...)`, each
 * column compared byte for byte (sameText), the other table's soft-deleted rows included.
 */
export function unlessMatchedSql(m: EntityManager, dialect: SqlDialect, entity: string, unless: UnlessMatched): string {
  const q = (name: string) => m.connection.driver.escape(name);
  const target = m.connection.getMetadata(entity);
  const other = m.connection.getMetadata(unless.entity);
  const column = (meta: typeof target, property: string) => {
    const c = meta.findColumnWithPropertyName(property);
    if (!c) throw new Error(`${meta.name} has no property ${property}`);
    return q(c.databaseName);
  };
  const on = unless.on.map((p) =>
    dialect.sameText(`${q('m')}.${column(other, p)}`, `${q(target.tableName)}.${column(target, p)}`),
  );
  return `NOT EXISTS (SELECT 1 FROM ${q(other.tableName)} ${q('m')} WHERE ${on.join(' AND ')})`;
}
