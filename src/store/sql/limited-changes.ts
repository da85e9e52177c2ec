import type { EntityManager } from 'typeorm';
import type { LimitedChange } from './sql-dialect';

/** What each dialect's limited change (changeSome) is made of, from the entity's metadata. */
export interface LimitedTarget {
  /** The table, as the driver quotes it. */
  table: string;
  /** The plan key's column, quoted. */
  key: string;
  /** The `deleted_at` column, quoted. */
  deletedAt: string;
  /** The stamp as the driver binds a `deleted_at` value; undefined for a DELETE. */
  stamp: unknown;
}

export function limitedTarget(m: EntityManager, change: LimitedChange): LimitedTarget {
  const driver = m.connection.driver;
  const meta = m.connection.getMetadata(change.entity);
  const column = (prop: string) => {
    const c = meta.findColumnWithPropertyName(prop);
    if (!c) throw new Error(`${change.entity} has no column ${prop}`);
    return c;
  };
  const deletedAt = column('deletedAt');
  return {
    table: driver.escape(meta.tableName),
    key: driver.escape(column(change.planKey).databaseName),
    deletedAt: driver.escape(deletedAt.databaseName),
    stamp: change.stamp === undefined ? undefined : driver.preparePersistentValue(change.stamp, deletedAt),
  };
}

/** Sends a limited change's statement in the transaction of `m`; the rows it changed, as the driver counts them. */
export async function runLimited(m: EntityManager, sql: string, params: unknown[]): Promise<number> {
  if (!m.queryRunner) throw new Error('a limited change runs in a transaction');
  const result = (await m.queryRunner.query(sql, params, true)) as { affected?: number | null };
  return result.affected ?? 0;
}
