import { EntityManager, In, IsNull } from 'typeorm';
import type { Driver } from 'typeorm/driver/Driver';
import type { ColumnMetadata } from 'typeorm/metadata/ColumnMetadata';
import { ENTITY } from './entities';
import { pgArrayLiteral } from './postgres-array';

/**
 * The statements the event store runs, as QueryBuilders: the store executes them; the SQL Server
 * test renders them (`getQueryAndParameters()`) on a DataSource that never connects.
 */

/**
 * A multi-row INSERT as SQL text and parameters. TypeORM's InsertQueryBuilder re-scans its
 * parameter map for every value (a third of the worker's CPU in a profile at 500-row batches);
 * this builds the same statement directly, with the driver's own value preparation:
 * `preparePersistentValue` (dates, booleans per dialect) and, on SQL Server, typed parameters
 * (`parametrizeValue`: a JS Date would otherwise bind as legacy `datetime`).
 */
export function insertStatement(m: EntityManager, entity: string, rows: object[]): { sql: string; params: unknown[] } {
  const driver = m.connection.driver as Driver & { parametrizeValue?: (c: ColumnMetadata, v: unknown) => unknown };
  const meta = m.connection.getMetadata(entity);
  const typed = driver.options.type === 'mssql' && driver.parametrizeValue;
  const params: unknown[] = [];
  const tuples = rows.map((row) => {
    const values = meta.columns.map((column) => {
      const value = driver.preparePersistentValue(column.getEntityValue(row as never), column);
      if (value === null || value === undefined) return 'NULL';
      params.push(typed ? driver.parametrizeValue!(column, value) : value);
      return driver.createParameter(`p${params.length - 1}`, params.length - 1);
    });
    return `(${values.join(', ')})`;
  });
  const columns = meta.columns.map((c) => driver.escape(c.databaseName)).join(', ');
  return { sql: `INSERT INTO ${driver.escape(meta.tableName)} (${columns}) VALUES ${tuples.join(', ')}`, params };
}

/**
 * PostgreSQL: the same INSERT with one array parameter per column, unnested server-side. The text
 * is the same whatever the number of rows, and the server parses one array per column instead of
 * planning a VALUES list of rows x columns parameters: ~1.7x the rows per second of a multi-row
 * VALUES INSERT here, with less CPU on both sides (BENCHMARKS.md, "End to end"). Row values are
 * the store's own (strings, numbers, booleans, Dates, null); the entities have no transformers.
 * `upsertKey`: insert or lock, as upsertStatement. `jsonText`: text columns whose row values are
 * still JS values (an event's payload): all rows' values go as one JSON array, which the server
 * splits into each element's JSON text, exactly JSON.stringify's (the json type keeps its input
 * text). That saves a stringify and an escape pass per row on the worker, its busiest process.
 */
export function unnestInsertStatement(
  m: EntityManager,
  entity: string,
  rows: object[],
  options: { upsertKey?: string; jsonText?: readonly string[] } = {},
): { sql: string; params: string[] } {
  const driver = m.connection.driver;
  const meta = m.connection.getMetadata(entity);
  const json = new Set(options.jsonText);
  const params = meta.columns.map((c) => {
    const values = rows.map((row) => (row as Record<string, unknown>)[c.propertyName]);
    return json.has(c.propertyName) ? JSON.stringify(values) : pgArrayLiteral(values);
  });
  const columns = meta.columns.map((c) => driver.escape(c.databaseName)).join(', ');
  const arrays = meta.columns
    .map((c, i) =>
      json.has(c.propertyName)
        ? `ARRAY(SELECT j.v::text FROM json_array_elements($${i + 1}::json) WITH ORDINALITY AS j(v, n) ORDER BY j.n)`
        : `$${i + 1}::${c.type as string}[]`,
    )
    .join(', ');
  const k = options.upsertKey && driver.escape(options.upsertKey);
  const conflict = k ? ` ON CONFLICT (${k}) DO UPDATE SET ${k} = EXCLUDED.${k}` : '';
  return { sql: `INSERT INTO ${driver.escape(meta.tableName)} (${columns}) SELECT * FROM unnest(${arrays})${conflict}`, params };
}

/**
 * Insert rows, or touch the existing ones (`SET key = key`): unlike INSERT IGNORE / ON CONFLICT DO
 * NOTHING this takes the row's exclusive lock at once, so two writers never both hold a shared
 * lock and then deadlock upgrading it (MySQL's INSERT IGNORE does exactly that). On SQL Server
 * TypeORM emits a MERGE matching on `key` (the primary key here) without a WHEN MATCHED branch:
 * READ COMMITTED drops its shared locks at once, the bump UPDATE takes the lock, and a concurrent
 * insert of the same key fails with 2627, which the store retries.
 */
export function upsertStatement(m: EntityManager, entity: string, key: string, rows: object[]) {
  return m.createQueryBuilder().insert().into(entity).values(rows).orUpdate([key], [key]).updateEntity(false);
}

/** Bump plan heads' version; the UPDATE is what takes (or waits for) the plan locks. */
export function bumpHeadsStatement(m: EntityManager, planIds: string[], now: Date) {
  return m
    .createQueryBuilder()
    .update(ENTITY.head)
    .set({ version: () => 'version + 1', updatedAt: now })
    .where({ planId: In(planIds) });
}

/** PostgreSQL: bumpHeadsStatement returning the heads, which saves reading them back. */
export const BUMP_HEADS_RETURNING_SQL =
  'UPDATE plan_heads SET version = version + 1, updated_at = $1 WHERE plan_id = ANY($2::varchar[]) RETURNING plan_id, version, deleted_at';

/** Recount plan heads' events and last seq from the stored log (plans seen before this batch). */
export function recountHeadsStatement(m: EntityManager, planIds: string[]) {
  return m
    .createQueryBuilder()
    .update(ENTITY.head)
    .set({
      eventCount: () => '(SELECT COUNT(*) FROM plan_events e WHERE e.plan_id = plan_heads.plan_id)',
      lastSeq: () => '(SELECT MAX(e.seq) FROM plan_events e WHERE e.plan_id = plan_heads.plan_id)',
    })
    .where({ planId: In(planIds) });
}

/** A session spans its plans: first plan created to last plan activity. Derived, so order-independent. */
export function refreshSessionsStatement(m: EntityManager, sessionIds: string[]) {
  return m
    .createQueryBuilder()
    .update(ENTITY.session)
    .set({
      createdAt: () => 'COALESCE((SELECT MIN(p.created_at) FROM execution_plans p WHERE p.session_id = sessions.id), created_at)',
      updatedAt: () => 'COALESCE((SELECT MAX(p.updated_at) FROM execution_plans p WHERE p.session_id = sessions.id), updated_at)',
    })
    .where({ id: In(sessionIds) });
}

/** Events arriving for a plan retention already soft-deleted are stored soft-deleted too. */
export function softDeleteEventsStatement(m: EntityManager, planId: string, deletedAt: Date) {
  return m.createQueryBuilder().update(ENTITY.event).set({ deletedAt }).where({ planId, deletedAt: IsNull() });
}

/** DELETE of a plan's projection rows (soft-deleted ones included: DELETE is not soft-delete scoped). */
export function deleteWhereInStatement(m: EntityManager, entity: string, property: string, ids: string[]) {
  return m.createQueryBuilder().delete().from(entity).where({ [property]: In(ids) });
}
