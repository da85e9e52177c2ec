import { EntitySchema, EntitySchemaColumnOptions } from 'typeorm';
import { formatMoney, moneyFromColumn } from '../../pricing';
import { ColumnKind, columnType, ColumnTypes } from '../sql/column-kinds';

/**
 * Entities are EntitySchemas built per dialect rather than decorated classes: a decorator's column
 * type is fixed at import time, and a type valid on SQL Server (`datetime2`, `nvarchar(MAX)`) is
 * rejected by the PostgreSQL driver and vice versa. The kinds are the migration's, so the mapping
 * and the DDL cannot drift apart.
 */
export interface ColumnSpec {
  column: string;
  kind: ColumnKind | { varchar: number };
  primary?: boolean;
  nullable?: boolean;
  /** The column's database default (columns added later with one), used by inserts that leave it out. */
  default?: string | number;
  /** The soft-delete column: finds and QueryBuilder selects skip rows where it is set. */
  deleteDate?: boolean;
  /**
   * A short string compared with literals only, never with an id, a key or another column, nor
   * grouped by (a status, a title): the database's default collation is fine for it. Every other
   * bounded string (ids, names the analytics group by) compares byte for byte, in the binary
   * collation the schema lint checks (schema-lint.ts).
   */
  freeText?: boolean;
}

/** Builds an entity's schema for a dialect's column types; `tableName` and `columns` say what it declares. */
export interface EntityFactory<T> {
  (types: ColumnTypes): EntitySchema<T>;
  readonly tableName: string;
  readonly columns: readonly ColumnSpec[];
}

export function defineEntity<T>(
  name: string,
  tableName: string,
  columns: Record<keyof T & string, ColumnSpec>,
): EntityFactory<T> {
  const build = (types: ColumnTypes) =>
    new EntitySchema<T>({
      name,
      tableName,
      columns: Object.fromEntries(
        Object.entries<ColumnSpec>(columns).map(([prop, spec]) => [prop, toColumnOptions(types, spec)]),
      ) as Record<keyof T, EntitySchemaColumnOptions>,
    });
  return Object.assign(build, { tableName, columns: Object.values<ColumnSpec>(columns) });
}

/**
 * Whether a column holds an id, a key or a name compared byte for byte (grouped by, compared with
 * another column): ids, and every bounded string not declared `freeText`. Long text never is.
 */
export function comparesAsIdentifier(spec: ColumnSpec): boolean {
  if (spec.kind === 'externalId' || spec.kind === 'uuid') return true;
  return typeof spec.kind === 'object' && spec.freeText !== true;
}

function toColumnOptions(types: ColumnTypes, spec: ColumnSpec): EntitySchemaColumnOptions {
  const type = columnType(types, spec.kind);
  // mysql's `tinyint` would hydrate as 0/1; TypeORM's `boolean` is the same column read as true/false
  if (spec.kind === 'boolean') type.type = types.entityBoolean;
  return {
    name: spec.column,
    type: type.type as EntitySchemaColumnOptions['type'],
    ...(type.length && type.length !== 'MAX' ? { length: Number(type.length) } : {}),
    ...(type.length === 'MAX' ? { length: 'MAX' } : {}),
    ...(typeof type.precision === 'number' ? { precision: type.precision } : {}),
    ...(typeof type.scale === 'number' ? { scale: type.scale } : {}),
    primary: spec.primary ?? false,
    nullable: spec.nullable ?? false,
    ...(spec.deleteDate ? { deleteDate: true } : {}),
    ...(spec.default !== undefined ? { default: spec.default } : {}),
    // PostgreSQL, MySQL/MariaDB and SQL Server drivers return 64-bit integers as strings; these
    // counts stay far below 2^53, so a number is exact (and `+=` adds instead of concatenating)
    ...(spec.kind === 'bigint' ? { transformer: BIGINT_AS_NUMBER } : {}),
    // every driver's form of a DECIMAL (string, or a number from SQL Server's) read as the column form
    ...(spec.kind === 'money' ? { transformer: MONEY_AS_TEXT } : {}),
  };
}

const BIGINT_AS_NUMBER = {
  from: (v: unknown) => (v === null || v === undefined ? v : Number(v)),
  to: (v: unknown) => v,
};

const MONEY_AS_TEXT = {
  from: (v: unknown) => {
    if (v === null || v === undefined) return null;
    return formatMoney(moneyFromColumn(v)!);
  },
  to: (v: unknown) => v,
};

export const ext = (column: string, extra: Partial<ColumnSpec> = {}): ColumnSpec => ({
  column,
  kind: 'externalId',
  ...extra,
});
export const uuid = (column: string, extra: Partial<ColumnSpec> = {}): ColumnSpec => ({
  column,
  kind: 'uuid',
  ...extra,
});
export const text = (column: string, nullable = true): ColumnSpec => ({ column, kind: 'longText', nullable });
export const str = (column: string, length: number, nullable = false): ColumnSpec => ({
  column,
  kind: { varchar: length },
  nullable,
});
/** A short string compared with literals only (a status, a title): see ColumnSpec.freeText. */
export const label = (column: string, length: number, nullable = false): ColumnSpec => ({
  ...str(column, length, nullable),
  freeText: true,
});
export const int = (column: string, nullable = false): ColumnSpec => ({ column, kind: 'int', nullable });
export const bigint = (column: string): ColumnSpec => ({ column, kind: 'bigint' });
export const bool = (column: string): ColumnSpec => ({ column, kind: 'boolean' });
export const ts = (column: string, nullable = false): ColumnSpec => ({ column, kind: 'timestamp', nullable });
export const deletedAt: ColumnSpec = { column: 'deleted_at', kind: 'timestamp', nullable: true, deleteDate: true };
export const money = (column: string, nullable = true): ColumnSpec => ({ column, kind: 'money', nullable });
/** A count added after the first schema: NOT NULL DEFAULT 0. */
export const count = (column: string): ColumnSpec => ({ column, kind: 'int', default: 0 });
/** A total added after the first schema: NOT NULL DEFAULT 0. */
export const moneyTotal = (column: string): ColumnSpec => ({ column, kind: 'money', default: 0 });
