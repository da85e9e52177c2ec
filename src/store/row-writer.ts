import { EntityManager, In } from 'typeorm';
import { chunk, rowsPerStatement, valuesPerInList } from './batch-limits';
import type { Dialect } from './dialect';
import { pgArrayLiteral } from './postgres-array';
import { SqliteRows } from './sqlite-rows';
import { insertStatement, Statement, unnestInsertStatement, unnestUpdateStatement, upsertStatement, Upsert } from './row-statements';

/** Rows per unnest statement on PostgreSQL: no parameter cap applies; this bounds one statement's size. */
const UNNEST_ROWS = 5_000;

/**
 * Row reads and writes of one transaction, chunked to each database's limits (TypeORM does not
 * chunk): one array per column (unnest) on PostgreSQL, multi-row statements on MySQL/MariaDB and
 * SQL Server, prepared single-row statements on SQLite (sqlite-rows.ts).
 */
export class RowWriter {
  private readonly sqlite: SqliteRows | undefined;

  constructor(
    private readonly m: EntityManager,
    private readonly dialect: Dialect,
  ) {
    this.sqlite = dialect === 'sqlite' ? new SqliteRows(m) : undefined;
  }

  /** Insert new rows. `jsonText`: see unnestInsertStatement (PostgreSQL only; elsewhere pass text). */
  async insert(entity: string, rows: object[], jsonText?: readonly string[]): Promise<void> {
    if (rows.length === 0) return;
    if (this.dialect === 'postgres') return this.run(chunk(rows, UNNEST_ROWS).map((part) => unnestInsertStatement(this.m, entity, part, { jsonText })));
    if (this.sqlite) return this.sqlite.insert(entity, rows);
    return this.run(this.parts(entity, rows).map((part) => insertStatement(this.m, entity, part)));
  }

  /** Insert rows, or update (or just lock) the stored ones with the same key (see Upsert). */
  async upsert(entity: string, rows: object[], upsert: Upsert): Promise<void> {
    if (rows.length === 0) return;
    if (this.dialect === 'postgres') return this.run(chunk(rows, UNNEST_ROWS).map((part) => unnestInsertStatement(this.m, entity, part, { upsert })));
    if (this.sqlite) return this.sqlite.upsert(entity, rows, upsert);
    return this.run(this.parts(entity, rows).map((part) => upsertStatement(this.m, this.dialect, entity, part, upsert)));
  }

  /**
   * Overwrite the `update` properties of stored rows. PostgreSQL and SQLite send only those
   * columns (an UPDATE); MySQL/MariaDB and SQL Server upsert the whole rows, which must therefore
   * be complete. `stored`: a row as read before, so SQLite can leave out what did not change
   * (it rewrites the index entries of every column an UPDATE names, changed or not).
   */
  async update<T extends object>(entity: string, rows: T[], key: string, update: readonly string[], stored?: (row: T) => object | undefined): Promise<void> {
    if (rows.length === 0) return;
    if (this.dialect === 'postgres') return this.run(chunk(rows, UNNEST_ROWS).map((part) => unnestUpdateStatement(this.m, entity, part, key, update)));
    if (this.sqlite) return this.sqlite.update(entity, rows, key, update, stored);
    return this.upsert(entity, rows, { key, update });
  }

  /** DELETE by a column (soft-deleted rows included: DELETE is not soft-delete scoped). */
  async deleteWhereIn(entity: string, property: string, ids: string[]): Promise<void> {
    for (const part of chunk(ids, valuesPerInList(this.dialect))) {
      await this.m.createQueryBuilder().delete().from(entity).where({ [property]: In(part) }).execute();
    }
  }

  /** Rows whose `property` is one of `values`, soft-deleted ones included. */
  async findIn<T>(entity: string, property: string, values: string[]): Promise<T[]> {
    const out: T[] = [];
    if (values.length === 0) return out;
    if (this.dialect === 'postgres') return this.findAny<T>(entity, property, values);
    if (this.sqlite) return this.sqlite.findIn<T>(entity, property, values);
    for (const part of chunk(values, valuesPerInList(this.dialect))) {
      const rows = await this.m.getRepository<T & object>(entity).find({ where: { [property]: In(part) } as never, withDeleted: true });
      for (const r of rows) out.push(r);
    }
    return out;
  }

  /**
   * PostgreSQL: one array parameter, and rows renamed to their properties directly. The pg driver
   * already gives these columns their JS types (Date, number, boolean, string), so TypeORM's
   * hydration would only add CPU.
   */
  private async findAny<T>(entity: string, property: string, values: string[]): Promise<T[]> {
    const meta = this.m.connection.getMetadata(entity);
    const column = meta.findColumnWithPropertyName(property)!;
    const q = (name: string) => this.m.connection.driver.escape(name);
    const raw: Record<string, unknown>[] = await this.m.query(`SELECT * FROM ${q(meta.tableName)} WHERE ${q(column.databaseName)} = ANY($1::${column.type as string}[])`, [pgArrayLiteral(values)]);
    const names = meta.columns.map((c) => [c.databaseName, c.propertyName, c.type === 'bigint'] as const);
    return raw.map((r) => {
      const row: Record<string, unknown> = {};
      // bigint arrives as a string from pg (token totals; exact as numbers below 2^53)
      for (const [db, prop, big] of names) row[prop] = big && r[db] !== null ? Number(r[db]) : r[db];
      return row as T;
    });
  }

  private parts<T>(entity: string, rows: T[]): T[][] {
    return chunk(rows, rowsPerStatement(this.dialect, this.m.connection.getMetadata(entity).columns.length));
  }

  private async run(statements: Statement[]): Promise<void> {
    for (const { sql, params } of statements) await this.m.query(sql, params);
  }
}
