import { DefaultNamingStrategy, Table } from 'typeorm';

/**
 * Every constraint gets a readable name. Keys, indexes and checks are named in the migration
 * itself; SQL Server default constraints are the one kind TypeORM names on its own (a hash), so
 * they are named here: `DF_<table>_<column>`.
 */
export class PlanLedgerNamingStrategy extends DefaultNamingStrategy {
  override defaultConstraintName(tableOrName: Table | string, columnName: string): string {
    const table = typeof tableOrName === 'string' ? tableOrName : tableOrName.name;
    return `DF_${table.split('.').pop()}_${columnName}`;
  }
}
