import { DataSource, SelectQueryBuilder } from 'typeorm';
import type { ColumnMetadata } from 'typeorm/metadata/ColumnMetadata';

/**
 * Money read as text on SQL Server. tedious reads a DECIMAL as a JS number (a binary double, about
 * 15 significant digits), and a money column holds up to 24 (DECIMAL(24,12)): a total of a few
 * thousand dollars already comes back with its last decimals changed, and a read-modify-write of a
 * total keeps the error. The driver has no option to return DECIMAL as text, so every read of a
 * money column converts it to text in the SQL: `CONVERT(varchar(40), column)` (all 12 decimals, no
 * exponent), which the entities' money transformer reads exactly.
 */
export function moneyText(column: string): string {
  return `CONVERT(varchar(40), ${column})`;
}

/** The method of SelectQueryBuilder that renders one entity column of a select list. */
type BuildSelection = (aliasName: string, column: ColumnMetadata, includeHydrationTransform?: boolean) => string;

interface SelectionBuilder {
  buildColumnSelectionExpression: BuildSelection;
  dataSource: DataSource;
}

let installed = false;

/**
 * Make every entity read of a SQL Server DataSource (find, QueryBuilder selects of entity
 * columns, raw selects by property path) select its DECIMAL columns through `moneyText`. TypeORM
 * renders each selected entity column in one method of SelectQueryBuilder (where it already
 * converts spatial columns for the same reason); it is wrapped once per process, and the wrapper
 * changes only the selections of SQL Server DataSources. ORDER BY and WHERE still use the column.
 */
export function selectMoneyAsText(ds: DataSource): DataSource {
  if (installed) return ds;
  installed = true;
  const proto = SelectQueryBuilder.prototype as unknown as SelectionBuilder;
  const build = proto.buildColumnSelectionExpression;
  proto.buildColumnSelectionExpression = function (this: SelectionBuilder, aliasName, column, hydrate = true) {
    const path = build.call(this, aliasName, column, hydrate);
    return hydrate && column.type === 'decimal' && this.dataSource.options.type === 'mssql' ? moneyText(path) : path;
  };
  return ds;
}
