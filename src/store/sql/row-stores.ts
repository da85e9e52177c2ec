import { EntityManager, In } from 'typeorm';
import { chunk, rowsPerStatement, valuesPerInList } from './batch-limits';
import { pgArrayLiteral } from './postgres-array';
import { unnestInsertStatement, unnestUpdateStatement } from './postgres-statements';
import type { RowStore, SqlDialect, UnlessMatched, Upsert } from './sql-dialect';
import { unlessMatchedSql } from './unless-matched';
import { SqliteRows } from './sqlite-rows';
import { insertStatement, Statement, TupleOptions } from './values-statements';

/** Rows per unnest statement on PostgreSQL: no parameter cap applies; this bounds one statement's size. */
const UNNEST_ROWS = 5_000;

/** What every database does alike: DELETE and IN-list reads, chunked to its parameter cap. */
abstract class ChunkedRows implements RowStore {
  constructor(
    protected readonly m: EntityManager,
    protected readonly dialect: SqlDialect,
  ) {}

  abstract insert(entity: string, rows: object[], jsonText?: readonly string[]): Promise<void>;
  abstract upsert(entity: string, rows: object[], upsert: Upsert): Promise<void>;
  abstract update<T extends object>(
    entity: string,
    rows: T[],
    key: string,
    update: readonly string[],
    stored?: (row: T) => object | undefined,
  ): Promise<void>;

  async deleteWhereIn(entity: string, property: string, ids: string[], unless?: UnlessMatched): Promise<void> {
    for (const part of chunk(ids, valuesPerInList(this.dialect))) {
      const qb = this.m
        .createQueryBuilder()
        .delete()
        .from(entity)
        .where({ [property]: In(part) });
      if (unless) qb.andWhere(unlessMatchedSql(this.m, this.dialect, entity, unless));
      await qb.execute();
    }
  }

  async findIn<T>(entity: string, property: string, values: string[]): Promise<T[]> {
    const out: T[] = [];
    for (const part of chunk(values, valuesPerInList(this.dialect))) {
      const rows = await this.m
        .getRepository<T & object>(entity)
        .find({ where: { [property]: In(part) } as never, withDeleted: true });
      for (const r of rows) out.push(r);
    }
    return out;
  }

  protected async run(statements: Statement[]): Promise<void> {
    for (const { sql, params } of statements) await this.m.query(sql, params);
  }
}

/**
 * MySQL/MariaDB and SQL Server: multi-row VALUES statements, as many rows each as the parameter
 * and row caps allow; an update is an upsert of whole rows, with the dialect's own upsert clause.
 */
export class ValuesRows extends ChunkedRows {
  constructor(
    m: EntityManager,
    dialect: SqlDialect,
    private readonly upsertStatement: (m: EntityManager, entity: string, rows: object[], upsert: Upsert) => Statement,
    private readonly tuples: TupleOptions = {},
  ) {
    super(m, dialect);
  }

  async insert(entity: string, rows: object[]): Promise<void> {
    if (rows.length === 0) return;
    return this.run(this.parts(entity, rows).map((part) => insertStatement(this.m, entity, part, this.tuples)));
  }

  async upsert(entity: string, rows: object[], upsert: Upsert): Promise<void> {
    if (rows.length === 0) return;
    return this.run(this.parts(entity, rows).map((part) => this.upsertStatement(this.m, entity, part, upsert)));
  }

  async update<T extends object>(entity: string, rows: T[], key: string, update: readonly string[]): Promise<void> {
    return this.upsert(entity, rows, { key, update });
  }

  override async findIn<T>(entity: string, property: string, values: string[]): Promise<T[]> {
    if (values.length === 0) return [];
    return super.findIn<T>(entity, property, values);
  }

  private parts<T>(entity: string, rows: T[]): T[][] {
    return chunk(rows, rowsPerStatement(this.dialect, this.m.connection.getMetadata(entity).columns.length));
  }
}

/**
 * PostgreSQL: one array parameter per column (unnest), so the statement text is the same whatever
 * the number of rows; an update sends only the columns it changes.
 */
export class UnnestRows extends ChunkedRows {
  async insert(entity: string, rows: object[], jsonText?: readonly string[]): Promise<void> {
    if (rows.length === 0) return;
    return this.run(chunk(rows, UNNEST_ROWS).map((part) => unnestInsertStatement(this.m, entity, part, { jsonText })));
  }

  async upsert(entity: string, rows: object[], upsert: Upsert): Promise<void> {
    if (rows.length === 0) return;
    return this.run(chunk(rows, UNNEST_ROWS).map((part) => unnestInsertStatement(this.m, entity, part, { upsert })));
  }

  async update<T extends object>(entity: string, rows: T[], key: string, update: readonly string[]): Promise<void> {
    if (rows.length === 0) return;
    return this.run(chunk(rows, UNNEST_ROWS).map((part) => unnestUpdateStatement(this.m, entity, part, key, update)));
  }

  /** `INSERT ... ON CONFLICT (key) DO NOTHING RETURNING key`: a key another transaction is inserting waits for it. */
  async insertNew(entity: string, rows: object[], key: string): Promise<Set<string>> {
    const inserted = new Set<string>();
    if (rows.length === 0) return inserted;
    const column = this.m.connection.driver.escape(
      this.m.connection.getMetadata(entity).findColumnWithPropertyName(key)!.databaseName,
    );
    for (const part of chunk(rows, UNNEST_ROWS)) {
      const { sql, params } = unnestInsertStatement(this.m, entity, part);
      const returned: Record<string, unknown>[] = await this.m.query(
        `${sql} ON CONFLICT (${column}) DO NOTHING RETURNING ${column} AS k`,
        params,
      );
      for (const r of returned) inserted.add(String(r.k));
    }
    return inserted;
  }

  /**
   * One array parameter, and rows renamed to their properties directly. The pg driver already
   * gives these columns their JS types (Date, number, boolean, string), so TypeORM's hydration
   * would only add CPU.
   */
  override async findIn<T>(entity: string, property: string, values: string[]): Promise<T[]> {
    if (values.length === 0) return [];
    const meta = this.m.connection.getMetadata(entity);
    const column = meta.findColumnWithPropertyName(property)!;
    const q = (name: string) => this.m.connection.driver.escape(name);
    const raw: Record<string, unknown>[] = await this.m.query(
      `SELECT * FROM ${q(meta.tableName)} WHERE ${q(column.databaseName)} = ANY($1::${column.type as string}[])`,
      [pgArrayLiteral(values)],
    );
    const names = meta.columns.map((c) => [c.databaseName, c.propertyName, c.type === 'bigint'] as const);
    return raw.map((r) => {
      const row: Record<string, unknown> = {};
      // bigint arrives as a string from pg (token totals; exact as numbers below 2^53)
      for (const [db, prop, big] of names) row[prop] = big && r[db] !== null ? Number(r[db]) : r[db];
      return row as T;
    });
  }
}

/** SQLite: prepared single-row statements on the transaction's connection (sqlite-rows.ts). */
export class SqliteRowStore extends ChunkedRows {
  private readonly sqlite: SqliteRows;

  constructor(m: EntityManager, dialect: SqlDialect) {
    super(m, dialect);
    this.sqlite = new SqliteRows(m);
  }

  async insert(entity: string, rows: object[]): Promise<void> {
    if (rows.length > 0) this.sqlite.insert(entity, rows);
  }

  async upsert(entity: string, rows: object[], upsert: Upsert): Promise<void> {
    if (rows.length > 0) this.sqlite.upsert(entity, rows, upsert);
  }

  async insertNew(entity: string, rows: object[], key: string): Promise<Set<string>> {
    return rows.length === 0 ? new Set() : this.sqlite.insertNew(entity, rows, key);
  }

  async update<T extends object>(
    entity: string,
    rows: T[],
    key: string,
    update: readonly string[],
    stored?: (row: T) => object | undefined,
  ): Promise<void> {
    if (rows.length > 0) this.sqlite.update(entity, rows, key, update, stored);
  }

  override async findIn<T>(entity: string, property: string, values: string[]): Promise<T[]> {
    return values.length === 0 ? [] : this.sqlite.findIn<T>(entity, property, values);
  }
}
