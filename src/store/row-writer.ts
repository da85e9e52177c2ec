import { EntityManager, In } from 'typeorm';
import { chunk, rowsPerStatement, valuesPerInList } from './batch-limits';
import type { Dialect } from './dialect';
import { insertStatement, Statement, unnestInsertStatement, unnestUpdateStatement, upsertStatement, Upsert } from './row-statements';

/** Rows per unnest statement on PostgreSQL: no parameter cap applies; this bounds one statement's size. */
const UNNEST_ROWS = 5_000;

/**
 * Row reads and writes of one transaction, chunked to each database's limits (TypeORM does not
 * chunk): multi-row statements on SQLite, MySQL/MariaDB and SQL Server, one array per column
 * (unnest) on PostgreSQL.
 */
export class RowWriter {
  constructor(
    private readonly m: EntityManager,
    private readonly dialect: Dialect,
  ) {}

  /** Insert new rows. `jsonText`: see unnestInsertStatement (PostgreSQL only; elsewhere pass text). */
  async insert(entity: string, rows: object[], jsonText?: readonly string[]): Promise<void> {
    if (rows.length === 0) return;
    if (this.dialect === 'postgres') return this.run(chunk(rows, UNNEST_ROWS).map((part) => unnestInsertStatement(this.m, entity, part, { jsonText })));
    return this.run(this.parts(entity, rows).map((part) => insertStatement(this.m, entity, part)));
  }

  /** Insert rows, or update (or just lock) the stored ones with the same key (see Upsert). */
  async upsert(entity: string, rows: object[], upsert: Upsert): Promise<void> {
    if (rows.length === 0) return;
    if (this.dialect === 'postgres') return this.run(chunk(rows, UNNEST_ROWS).map((part) => unnestInsertStatement(this.m, entity, part, { upsert })));
    return this.run(this.parts(entity, rows).map((part) => upsertStatement(this.m, this.dialect, entity, part, upsert)));
  }

  /**
   * Overwrite the `update` properties of stored rows. PostgreSQL sends only those columns (an
   * UPDATE); the other databases upsert the whole rows, which must therefore be complete.
   */
  async update(entity: string, rows: object[], key: string, update: readonly string[]): Promise<void> {
    if (rows.length === 0) return;
    if (this.dialect === 'postgres') return this.run(chunk(rows, UNNEST_ROWS).map((part) => unnestUpdateStatement(this.m, entity, part, key, update)));
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
    for (const part of chunk(values, valuesPerInList(this.dialect))) {
      const rows = await this.m.getRepository<T & object>(entity).find({ where: { [property]: In(part) } as never, withDeleted: true });
      for (const r of rows) out.push(r);
    }
    return out;
  }

  private parts<T>(entity: string, rows: T[]): T[][] {
    return chunk(rows, rowsPerStatement(this.dialect, this.m.connection.getMetadata(entity).columns.length));
  }

  private async run(statements: Statement[]): Promise<void> {
    for (const { sql, params } of statements) await this.m.query(sql, params);
  }
}
