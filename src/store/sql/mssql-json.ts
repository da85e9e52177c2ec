import type { EntityManager } from 'typeorm';
import type { ColumnMetadata } from 'typeorm/metadata/ColumnMetadata';
import { chunk } from './batch-limits';
import { nvarcharMax } from './mssql-parameters';
import type { LockedHead, RowStore, SqlDialect, UnlessMatched, Upsert } from './sql-dialect';
import { unlessMatchedSql } from './unless-matched';
import type { Statement } from './values-statements';
import { ENTITY, identifierColumns, PlanHeadRow } from '../entities';
import { ID_COLLATION } from './mssql-collation';

/**
 * SQL Server's counterpart of PostgreSQL's unnest path: the rows of a statement go as one JSON
 * parameter (`nvarchar(MAX)`), read back with `OPENJSON ... WITH (typed columns)`, and a list of
 * ids the same way. The statement text then depends on the table and the kind of write only, not
 * on the number of rows nor on which values are null, so SQL Server compiles each once and reuses
 * its plan (a multi-row VALUES list compiles anew for every row count and every pattern of NULLs).
 * Values: strings and numbers as they are, booleans as JSON true/false (bit), instants as ISO 8601
 * UTC wall time without a zone (`2026-01-01T12:00:00.000`, what `datetime2(3)` reads whatever the
 * session's language and date format), null as null.
 *
 * Text in `WITH`: an OPENJSON column without COLLATE is in the database's default collation (the
 * catalog's on a contained database or Azure SQL Database), and comparing it with a key in the ids'
 * binary collation is Msg 468, "cannot resolve the collation conflict". Every column that compares
 * as an identifier is therefore declared `COLLATE Latin1_General_100_BIN2`, like its table column.
 * Bounded text is declared `nvarchar(4000)`, not the column's length: OPENJSON would cut a longer
 * value to the declared length without a word, where the INSERT into the column refuses it
 * (Msg 2628, string or binary data would be truncated), as PostgreSQL does.
 */

/** Rows per statement: no parameter cap applies; this bounds one request's size. */
const JSON_ROWS = 1_000;

/** The columns compared as identifiers, as `table.column` (the entities declare them). */
const IDENTIFIERS = new Set(identifierColumns().map((c) => `${c.table}.${c.column}`));

/** The declared type of a column, as OPENJSON's WITH clause names it (see above for text). */
function sqlType(c: ColumnMetadata): string {
  if (c.type === 'datetime2') return `datetime2(${c.precision ?? 3})`;
  if (c.type === 'decimal') return `decimal(${c.precision ?? 18}, ${c.scale ?? 0})`;
  if (c.type === 'nvarchar') {
    const text = c.length === 'MAX' ? 'nvarchar(MAX)' : 'nvarchar(4000)';
    return IDENTIFIERS.has(`${c.entityMetadata.tableName}.${c.databaseName}`)
      ? `${text} COLLATE ${ID_COLLATION}`
      : text;
  }
  return c.length ? `${String(c.type)}(${c.length})` : String(c.type);
}

function jsonValue(value: unknown): unknown {
  if (value === undefined || value === null) return null;
  if (value instanceof Date) return value.toISOString().slice(0, 23);
  return value;
}

/** `OPENJSON(@n) WITH (...)` reading every column of `entity` from rows keyed by property name. */
function openJson(m: EntityManager, entity: string, param = '@0'): string {
  const meta = m.connection.getMetadata(entity);
  const q = (name: string) => m.connection.driver.escape(name);
  const defs = meta.columns.map((c) => `${q(c.databaseName)} ${sqlType(c)} '$.${c.propertyName}'`);
  return `OPENJSON(${param}) WITH (${defs.join(', ')})`;
}

/** The rows as the JSON parameter `openJson` reads. */
function rowsParam(m: EntityManager, entity: string, rows: object[]): unknown {
  const columns = m.connection.getMetadata(entity).columns;
  const json = rows.map((row) => {
    const out: Record<string, unknown> = {};
    for (const c of columns) out[c.propertyName] = jsonValue(c.getEntityValue(row as never));
    return out;
  });
  return nvarcharMax(JSON.stringify(json));
}

/** A list of ids as one parameter, and the condition that reads it: `column IN (SELECT v FROM OPENJSON(...))`. */
export function idsIn(m: EntityManager, entity: string, property: string, column: string, param: string): string {
  const c = m.connection.getMetadata(entity).findColumnWithPropertyName(property)!;
  return `${column} IN (SELECT v FROM OPENJSON(${param}) WITH (v ${sqlType(c)} '$'))`;
}

/**
 * `column IN (...)` over a JSON array of ids (`param`): the ids are read as text in their binary
 * collation, as every id column is declared.
 */
export function jsonIdsIn(column: string, param: string): string {
  return `${column} IN (SELECT v FROM OPENJSON(${param}) WITH (v nvarchar(4000) COLLATE ${ID_COLLATION} '$'))`;
}

/** A list of ids as one JSON array parameter, declared `nvarchar(MAX)` whatever its length. */
export function idsParam(ids: readonly string[]): unknown {
  return nvarcharMax(JSON.stringify(ids));
}

/** `INSERT ... SELECT ... FROM OPENJSON(@0) WITH (...)`. */
export function jsonInsertStatement(m: EntityManager, entity: string, rows: object[]): Statement {
  const meta = m.connection.getMetadata(entity);
  const q = (name: string) => m.connection.driver.escape(name);
  const columns = meta.columns.map((c) => q(c.databaseName)).join(', ');
  return {
    sql: `INSERT INTO ${q(meta.tableName)} (${columns}) SELECT ${columns} FROM ${openJson(m, entity)}`,
    params: [rowsParam(m, entity, rows)],
  };
}

/**
 * A MERGE of the rows. `WITH (HOLDLOCK)` only where two transactions that do not share a plan's
 * head lock may insert the same key at once (`Upsert.concurrentInserts`: plan heads, sessions):
 * elsewhere the head lock already serialises the writers of a plan's rows, and HOLDLOCK's
 * key-range locks, taken in the order of the rows, would only make writers of different plans
 * wait on each other or deadlock.
 */
export function jsonMergeStatement(m: EntityManager, entity: string, rows: object[], upsert: Upsert): Statement {
  const meta = m.connection.getMetadata(entity);
  const q = (name: string) => m.connection.driver.escape(name);
  const col = (prop: string) => q(meta.findColumnWithPropertyName(prop)!.databaseName);
  const columns = meta.columns.map((c) => q(c.databaseName));
  const key = col(upsert.key);
  // lock only: a no-op on a column that is not the key (updating a key moves the row)
  const other = q(meta.columns.find((c) => c.propertyName !== upsert.key)!.databaseName);
  const sets = [
    ...upsert.update.map((p) => `${col(p)} = s.${col(p)}`),
    ...Object.entries(upsert.keep ?? {}).map(([p, how]) =>
      how === 'add'
        ? `${col(p)} = t.${col(p)} + s.${col(p)}`
        : `${col(p)} = CASE WHEN s.${col(p)} ${how === 'min' ? '<' : '>'} t.${col(p)} THEN s.${col(p)} ELSE t.${col(p)} END`,
    ),
  ];
  const hold = upsert.concurrentInserts ? ' WITH (HOLDLOCK)' : '';
  const sql =
    `MERGE INTO ${q(meta.tableName)}${hold} AS t USING ${openJson(m, entity)} AS s ON t.${key} = s.${key}` +
    ` WHEN MATCHED THEN UPDATE SET ${sets.length > 0 ? sets.join(', ') : `${other} = t.${other}`}` +
    ` WHEN NOT MATCHED THEN INSERT (${columns.join(', ')}) VALUES (${columns.map((c) => `s.${c}`).join(', ')});`;
  return { sql, params: [rowsParam(m, entity, rows)] };
}

/** SQL Server's rows: every statement reads its rows or ids from one JSON parameter. */
export class JsonRows implements RowStore {
  constructor(
    private readonly m: EntityManager,
    private readonly dialect: SqlDialect,
  ) {}

  async insert(entity: string, rows: object[]): Promise<void> {
    for (const part of chunk(rows, JSON_ROWS)) await this.run(jsonInsertStatement(this.m, entity, part));
  }

  async upsert(entity: string, rows: object[], upsert: Upsert): Promise<void> {
    for (const part of chunk(rows, JSON_ROWS)) await this.run(jsonMergeStatement(this.m, entity, part, upsert));
  }

  /** A MERGE of whole rows (they must be complete). */
  async update<T extends object>(entity: string, rows: T[], key: string, update: readonly string[]): Promise<void> {
    return this.upsert(entity, rows, { key, update });
  }

  async deleteWhereIn(entity: string, property: string, ids: string[], unless?: UnlessMatched): Promise<void> {
    const meta = this.m.connection.getMetadata(entity);
    const q = (name: string) => this.m.connection.driver.escape(name);
    const column = q(meta.findColumnWithPropertyName(property)!.databaseName);
    const spared = unless ? ` AND ${unlessMatchedSql(this.m, this.dialect, entity, unless)}` : '';
    for (const part of chunk(ids, JSON_ROWS)) {
      await this.m.query(
        `DELETE FROM ${q(meta.tableName)} WHERE ${idsIn(this.m, entity, property, column, '@0')}${spared}`,
        [idsParam(part)],
      );
    }
  }

  async findIn<T>(entity: string, property: string, values: string[]): Promise<T[]> {
    const out: T[] = [];
    for (const part of chunk(values, JSON_ROWS)) {
      const qb = this.m.getRepository<T & object>(entity).createQueryBuilder('r').withDeleted();
      const column = `${qb.alias}.${this.m.connection.driver.escape(this.m.connection.getMetadata(entity).findColumnWithPropertyName(property)!.databaseName)}`;
      const rows = await qb.where(idsIn(this.m, entity, property, column, ':ids'), { ids: idsParam(part) }).getMany();
      for (const r of rows) out.push(r);
    }
    return out;
  }

  private async run({ sql, params }: Statement): Promise<void> {
    await this.m.query(sql, params);
  }
}

/** Bumps the version of these heads, which takes their locks (see lockHeadsStatement). */
export async function bumpHeadsJson(m: EntityManager, ids: string[]): Promise<void> {
  const q = (name: string) => m.connection.driver.escape(name);
  for (const part of chunk(ids, JSON_ROWS)) {
    await m.query(
      `UPDATE ${q('plan_heads')} SET ${q('version')} = ${q('version')} + 1 WHERE ${idsIn(m, ENTITY.head, 'planId', q('plan_id'), '@0')}`,
      [idsParam(part)],
    );
  }
}

/** Create the missing heads (MERGE WITH HOLDLOCK), lock them all by a version bump, then read them. */
export async function lockHeadsJson(
  m: EntityManager,
  dialect: SqlDialect,
  sorted: PlanHeadRow[],
): Promise<Map<string, LockedHead>> {
  const ids = sorted.map((r) => r.planId);
  const rows = dialect.rows(m);
  await rows.upsert(ENTITY.head, sorted, { key: 'planId', update: [], concurrentInserts: true });
  await bumpHeadsJson(m, ids);
  const heads = new Map<string, LockedHead>();
  for (const r of await rows.findIn<PlanHeadRow>(ENTITY.head, 'planId', ids))
    heads.set(r.planId, { ...r, isNew: r.version === 1 });
  return heads;
}

/** The plan of each stored event id. */
export async function eventPlansJson(m: EntityManager, ids: string[]): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  const q = (name: string) => m.connection.driver.escape(name);
  for (const part of chunk(ids, JSON_ROWS)) {
    const rows: Array<{ event_id: string; plan_id: string }> = await m.query(
      `SELECT ${q('event_id')}, ${q('plan_id')} FROM ${q('plan_events')} WHERE ${idsIn(m, ENTITY.event, 'eventId', q('event_id'), '@0')}`,
      [idsParam(part)],
    );
    for (const r of rows) found.set(r.event_id.toLowerCase(), r.plan_id);
  }
  return found;
}
