import { EntityManager, QueryFailedError } from 'typeorm';
import type { Driver } from 'typeorm/driver/Driver';
import type { ColumnMetadata } from 'typeorm/metadata/ColumnMetadata';
import type { Upsert } from './sql-dialect';

/** The part of a better-sqlite3 Database and Statement these writes use. */
interface Db {
  prepare(sql: string): Stmt;
}
interface Stmt {
  run(...params: unknown[]): unknown;
  all(...params: unknown[]): Record<string, unknown>[];
}

/** Prepared statements per connection: the same few SQL texts serve every batch. */
const statements = new WeakMap<Db, Map<string, Stmt>>();

/**
 * SQLite (better-sqlite3, in process): one prepared single-row statement run once per row. There
 * is no round trip to save by batching rows, while a multi-row statement is parsed anew for each
 * batch size and, through TypeORM's query path, costs more per row than the row itself. Runs on
 * the transaction's connection (better-sqlite3 has one); values are prepared by the TypeORM
 * driver, so dates and booleans are stored exactly as TypeORM stores them.
 */
export class SqliteRows {
  private readonly db: Db;

  constructor(private readonly m: EntityManager) {
    this.db = (m.connection.driver as unknown as { databaseConnection: Db }).databaseConnection;
  }

  insert(entity: string, rows: object[]): void {
    const meta = this.m.connection.getMetadata(entity);
    const q = (n: string) => this.m.connection.driver.escape(n);
    const sql = `INSERT INTO ${q(meta.tableName)} (${meta.columns.map((c) => q(c.databaseName)).join(', ')}) VALUES (${meta.columns.map(() => '?').join(', ')})`;
    this.runEach(sql, meta.columns, rows);
  }

  /** `INSERT ... ON CONFLICT (key) DO NOTHING` per row; the keys of the rows it inserted (those it changed). */
  insertNew(entity: string, rows: object[], key: string): Set<string> {
    const meta = this.m.connection.getMetadata(entity);
    const q = (n: string) => this.m.connection.driver.escape(n);
    const keyColumn = meta.findColumnWithPropertyName(key)!;
    const sql =
      `INSERT INTO ${q(meta.tableName)} (${meta.columns.map((c) => q(c.databaseName)).join(', ')}) VALUES (${meta.columns.map(() => '?').join(', ')})` +
      ` ON CONFLICT (${q(keyColumn.databaseName)}) DO NOTHING`;
    const inserted = new Set<string>();
    this.runEach(sql, meta.columns, rows, (row, changes) => {
      if (changes > 0) inserted.add(String(keyColumn.getEntityValue(row as never)));
    });
    return inserted;
  }

  upsert(entity: string, rows: object[], upsert: Upsert): void {
    const meta = this.m.connection.getMetadata(entity);
    const q = (n: string) => this.m.connection.driver.escape(n);
    const col = (prop: string) => q(meta.findColumnWithPropertyName(prop)!.databaseName);
    const key = col(upsert.key);
    const sets = [
      ...upsert.update.map((p) => `${col(p)} = excluded.${col(p)}`),
      ...Object.entries(upsert.keep ?? {}).map(([p, how]) => {
        const c = col(p);
        if (how !== 'add') return `${c} = ${how === 'min' ? 'MIN' : 'MAX'}(${c}, excluded.${c})`;
        return meta.findColumnWithPropertyName(p)!.type === 'text'
          ? `${c} = ${addMoneyText(c)}`
          : `${c} = ${c} + excluded.${c}`;
      }),
    ];
    const sql =
      `INSERT INTO ${q(meta.tableName)} (${meta.columns.map((c) => q(c.databaseName)).join(', ')}) VALUES (${meta.columns.map(() => '?').join(', ')})` +
      ` ON CONFLICT (${key}) DO UPDATE SET ${sets.length > 0 ? sets.join(', ') : `${key} = excluded.${key}`}`;
    this.runEach(sql, meta.columns, rows);
  }

  /**
   * `UPDATE ... WHERE key = ?` per row, setting the `update` properties only, and of those only
   * the ones that differ from `stored(row)` when given: SQLite rewrites the index entries of every
   * column an UPDATE names, changed or not. One prepared statement per set of columns.
   */
  update<T extends object>(
    entity: string,
    rows: T[],
    key: string,
    update: readonly string[],
    stored?: (row: T) => object | undefined,
  ): void {
    const meta = this.m.connection.getMetadata(entity);
    const driver = this.m.connection.driver;
    const prepare = preparersOf(meta.columns, driver);
    const at = (prop: string) => meta.columns.indexOf(meta.findColumnWithPropertyName(prop)!);
    const keyAt = at(key);
    const columns = update.map(at);
    // one statement text per set of columns (a bit mask over `update`), built once per call
    const texts = new Map<number, string>();
    const textOf = (mask: number): string => {
      let sql = texts.get(mask);
      if (sql === undefined) {
        const set = columns
          .filter((_, i) => mask & (1 << i))
          .map((c) => `${driver.escape(meta.columns[c].databaseName)} = ?`);
        sql = `UPDATE ${driver.escape(meta.tableName)} SET ${set.join(', ')} WHERE ${driver.escape(meta.columns[keyAt].databaseName)} = ?`;
        texts.set(mask, sql);
      }
      return sql;
    };
    if (columns.length > 30) throw new Error(`update of ${entity}: at most 30 columns`);
    const all = 2 ** columns.length - 1;
    for (const row of rows) {
      const before = stored?.(row) as Record<string, unknown> | undefined;
      let mask = all;
      if (before) {
        mask = 0;
        for (let i = 0; i < columns.length; i++) {
          const c = meta.columns[columns[i]];
          if (!same(c.getEntityValue(row as never), before[c.propertyName])) mask |= 1 << i;
        }
      }
      if (mask === 0) continue;
      const values: unknown[] = [];
      for (let i = 0; i < columns.length; i++) if (mask & (1 << i)) values.push(prepare[columns[i]](row as never));
      values.push(prepare[keyAt](row as never));
      const sql = textOf(mask);
      try {
        this.statement(sql).run(...values);
      } catch (err) {
        throw new QueryFailedError(sql, values, err as Error);
      }
    }
  }

  /**
   * Rows whose `property` is one of `values` (soft-deleted ones included), as entity objects: one
   * prepared `= ?` lookup per value, cheaper here than parsing an IN list of a new length each time.
   */
  findIn<T>(entity: string, property: string, values: string[]): T[] {
    const meta = this.m.connection.getMetadata(entity);
    const driver = this.m.connection.driver;
    const q = (n: string) => driver.escape(n);
    const sql = `SELECT * FROM ${q(meta.tableName)} WHERE ${q(meta.findColumnWithPropertyName(property)!.databaseName)} = ?`;
    const stmt = this.statement(sql);
    const out: T[] = [];
    for (const value of values) {
      let raw: Record<string, unknown>[];
      try {
        raw = stmt.all(value);
      } catch (err) {
        throw new QueryFailedError(sql, [value], err as Error);
      }
      for (const r of raw) {
        const row: Record<string, unknown> = {};
        for (const c of meta.columns) row[c.propertyName] = driver.prepareHydratedValue(r[c.databaseName], c);
        out.push(row as T);
      }
    }
    return out;
  }

  /** `valueProp` of the rows whose `keyProp` is one of `keys` (one prepared lookup per key). */
  pluck(entity: string, keyProp: string, valueProp: string, keys: string[]): Map<string, unknown> {
    const meta = this.m.connection.getMetadata(entity);
    const q = (n: string) => this.m.connection.driver.escape(n);
    const key = meta.findColumnWithPropertyName(keyProp)!.databaseName;
    const value = meta.findColumnWithPropertyName(valueProp)!.databaseName;
    const sql = `SELECT ${q(key)} AS k, ${q(value)} AS v FROM ${q(meta.tableName)} WHERE ${q(key)} = ?`;
    const stmt = this.statement(sql);
    const out = new Map<string, unknown>();
    for (const k of keys) {
      let rows: Record<string, unknown>[];
      try {
        rows = stmt.all(k);
      } catch (err) {
        throw new QueryFailedError(sql, [k], err as Error);
      }
      for (const r of rows) out.set(String(r.k), r.v);
    }
    return out;
  }

  /** Runs `sql` once per row; `ran`: told each row and the rows that run changed. */
  private runEach(
    sql: string,
    columns: ColumnMetadata[],
    rows: object[],
    ran?: (row: object, changes: number) => void,
  ): void {
    const stmt = this.statement(sql);
    const prepare = preparersOf(columns, this.m.connection.driver);
    const values = new Array<unknown>(columns.length);
    for (const row of rows) {
      for (let i = 0; i < columns.length; i++) values[i] = prepare[i](row as Record<string, unknown>);
      let info: { changes?: number } | undefined;
      try {
        info = stmt.run(...values) as { changes?: number } | undefined;
      } catch (err) {
        // as TypeORM's own queries fail: the driver's error (its code, its message) inside a QueryFailedError
        throw new QueryFailedError(sql, [...values], err as Error);
      }
      ran?.(row, Number(info?.changes ?? 0));
    }
  }

  private statement(sql: string): Stmt {
    let cache = statements.get(this.db);
    if (!cache) statements.set(this.db, (cache = new Map()));
    let stmt = cache.get(sql);
    if (!stmt) cache.set(sql, (stmt = this.db.prepare(sql))); // a few dozen texts: the store's own
    return stmt;
  }
}

/** A row's value of one column as the statement's parameter. */
type Prepare = (row: Record<string, unknown>) => unknown;

/** Per column list of an entity (its metadata's own array): how each value becomes a parameter. */
const preparers = new WeakMap<ColumnMetadata[], Prepare[]>();

function preparersOf(columns: ColumnMetadata[], driver: Driver): Prepare[] {
  let list = preparers.get(columns);
  if (!list) preparers.set(columns, (list = columns.map((c) => preparerOf(c, driver))));
  return list;
}

/** Column types whose values the TypeORM SQLite driver passes through unchanged (preparePersistentValue). */
const AS_IS = new Set<unknown>(['varchar', 'text', 'integer']);

/**
 * What the TypeORM driver's preparePersistentValue makes of a column's value, with the common
 * cases done directly: a plain column's value as it is, a Date of a `datetime` column as the
 * driver's UTC text (`YYYY-MM-DD HH:MM:SS.SSS`, the ISO text's parts for years 0 to 9999). Every
 * other column and value (transformers, other types, other years) goes through the driver.
 */
function preparerOf(c: ColumnMetadata, driver: Driver): Prepare {
  const viaDriver: Prepare = (row) => parameter(driver.preparePersistentValue(c.getEntityValue(row), c));
  if (c.embeddedMetadata || c.relationMetadata || c.referencedColumn || c.transformer) return viaDriver;
  const prop = c.propertyName;
  if (c.type === 'datetime' || c.type === Date) {
    // the column's last instant and its text: rows of one plan or transaction repeat an instant
    let lastTime = NaN;
    let lastText = '';
    return (row) => {
      const v = row[prop];
      if (!(v instanceof Date)) return viaDriver(row);
      const t = v.getTime();
      if (t === lastTime) return lastText;
      if (!(t >= YEAR_0 && t < YEAR_10000)) return viaDriver(row);
      const iso = v.toISOString();
      lastText = `${iso.slice(0, 10)} ${iso.slice(11, 23)}`;
      lastTime = t;
      return lastText;
    };
  }
  if (AS_IS.has(c.type)) return (row) => parameter(row[prop]);
  return viaDriver;
}

/** 0000-01-01T00:00:00Z and 10000-01-01T00:00:00Z: toISOString writes four-digit years between. */
const YEAR_0 = -62_167_219_200_000;
const YEAR_10000 = 253_402_300_800_000;

/** A prepared value as better-sqlite3 takes it: no undefined, no booleans. */
function parameter(v: unknown): unknown {
  return v === undefined ? null : typeof v === 'boolean' ? (v ? 1 : 0) : v;
}

/** Equal stored values: Dates by time, the rest by identity. */
function same(a: unknown, b: unknown): boolean {
  if (a instanceof Date || b instanceof Date)
    return a instanceof Date && b instanceof Date && a.getTime() === b.getTime();
  return a === b;
}

/**
 * The sum of a stored money column and the new row's, as the column form (12 decimals): the text
 * without its point is an integer of pico-dollars, summed exactly as sumMoney does, then written
 * back with its sign, whole part and 12 decimals.
 */
function addMoneyText(c: string): string {
  const units = (v: string) => `CAST(REPLACE(${v}, '.', '') AS INTEGER)`;
  const sum = `(${units(c)} + ${units(`excluded.${c}`)})`;
  return (
    `(CASE WHEN ${sum} < 0 THEN '-' ELSE '' END) || (ABS(${sum}) / 1000000000000) || '.' || ` +
    `SUBSTR('000000000000' || (ABS(${sum}) % 1000000000000), -12)`
  );
}
