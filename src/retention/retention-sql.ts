import { DeleteQueryBuilder, EntityManager, IsNull, LessThanOrEqual, Not, UpdateQueryBuilder } from 'typeorm';
import { idsIn, inIds } from '../store/sql/id-lists';
import { lockHeadsStatement } from '../store/ledger/log-statements';
import { PLAN_TABLES } from '../store/plan-tables';
import { sqlDialectOf } from '../store/sql/dialects';
import type { SqlDialect } from '../store/sql/sql-dialect';

/**
 * Every statement retention sends, built with TypeORM's QueryBuilder so quoting, parameter style
 * (`$1`, `?`, `@0`) and pagination are the driver's job. They are plain functions of an
 * EntityManager so the SQL Server text can be generated and checked without a server. Bulk
 * statements skip entity listeners: there are none, and they would only add work per statement.
 */

/** The tables a plan owns, children first: the order a purge deletes in (foreign keys). */
export { PLAN_TABLES };

export type PlanTableSpec = (typeof PLAN_TABLES)[number];
export type PlanTable = PlanTableSpec['table'];

export const tableSpec = (table: PlanTable): PlanTableSpec => PLAN_TABLES.find((t) => t.table === table)!;

/** The tables of a plan that has events but no `plan.created` yet (no execution_plans row). */
export const ORPHAN_TABLES: readonly PlanTableSpec[] = [tableSpec('plan_events'), tableSpec('plan_heads')];
/** What a DAG expiry covers: what only resuming a workflow needs. */
export const DAG_TABLES: readonly PlanTableSpec[] = [tableSpec('workflow_checkpoints'), tableSpec('workflow_dags')];

/**
 * Plan ids per statement. Each statement binds the ids plus at most 4 other values; retention
 * inserts nothing, so only the dialect's parameter cap bounds it (its `maxIdsPerStatement`).
 */
export function maxIdsPerStatement(dialect: SqlDialect): number {
  return dialect.maxIdsPerStatement;
}

/** A timestamp parameter, as the dialect binds one (SQL Server: `datetime2(3)`, like the columns). */
export function instant(m: EntityManager, value: Date): unknown {
  return sqlDialectOf(m.connection).instant(value);
}

/** A timestamp as the driver returned it (Date, or SQLite's UTC text), or null. */
export function toDate(raw: unknown): Date | null {
  if (raw === null || raw === undefined) return null;
  if (raw instanceof Date) return raw;
  const text = String(raw);
  // SQLite: TypeORM stores UTC as 'YYYY-MM-DD HH:MM:SS.SSS' with no zone
  return new Date(/[zZ]|[+-]\d\d:?\d\d$/.test(text) ? text : `${text.replace(' ', 'T')}Z`);
}

/** The lock every writer of a plan takes first (the store's statement: one lock, one place). */
export function lockHeads(m: EntityManager, planIds: string[]): UpdateQueryBuilder<object> {
  return lockHeadsStatement(m, sqlDialectOf(m), planIds);
}

/** Soft delete: stamp the live rows of these plans. */
export function stampRows(m: EntityManager, spec: PlanTableSpec, ids: string[], now: Date): UpdateQueryBuilder<object> {
  return m
    .createQueryBuilder()
    .update(spec.entity)
    .set({ deletedAt: now })
    .where({ [spec.planKey]: inIds(sqlDialectOf(m), ids), deletedAt: IsNull() })
    .callListeners(false);
}

/** Restore: clear the stamp of every soft-deleted row of these plans. */
export function unstampRows(m: EntityManager, spec: PlanTableSpec, ids: string[]): UpdateQueryBuilder<object> {
  return m
    .createQueryBuilder()
    .update(spec.entity)
    .set({ deletedAt: null })
    .where({ [spec.planKey]: inIds(sqlDialectOf(m), ids), deletedAt: Not(IsNull()) })
    .callListeners(false);
}

/** Hard delete of these plans' rows; with `deletedBefore`, only rows soft-deleted by then. */
export function deleteRows(
  m: EntityManager,
  spec: PlanTableSpec,
  ids: string[],
  deletedBefore?: Date,
): DeleteQueryBuilder<object> {
  const where: Record<string, unknown> = { [spec.planKey]: inIds(sqlDialectOf(m), ids) };
  if (deletedBefore) where.deletedAt = LessThanOrEqual(instant(m, deletedBefore));
  return m.createQueryBuilder().delete().from(spec.entity).where(where).callListeners(false);
}

/** Rows a soft delete / restore / purge would touch, for dry runs and restore checks. */
export async function countRows(
  m: EntityManager,
  spec: PlanTableSpec,
  ids: string[],
  which: 'live' | 'deleted' | 'all' | { deletedBefore: Date },
): Promise<number> {
  const qb = m
    .createQueryBuilder()
    .select('COUNT(*)', 'n')
    .from(spec.entity, 't')
    .withDeleted()
    .where(...idsIn(sqlDialectOf(m), `t.${spec.planKey}`, ids));
  if (which === 'live') qb.andWhere('t.deletedAt IS NULL');
  else if (which === 'deleted') qb.andWhere('t.deletedAt IS NOT NULL');
  else if (which !== 'all') qb.andWhere('t.deletedAt <= :before', { before: instant(m, which.deletedBefore) });
  const row = await qb.getRawOne<{ n: unknown }>();
  return Number(row?.n ?? 0);
}

/** Rows changed by an UPDATE/DELETE, whatever the driver reports them as. */
export function affected(result: { affected?: number | null }): number {
  return result.affected ?? 0;
}
