import 'reflect-metadata';
import { DataSource, DataSourceOptions, Logger as TypeOrmLogger } from 'typeorm';
import type { DatabaseTarget } from '../config/database-url';
import { buildEntitySchemas } from './entities';
import { MIGRATIONS } from '../../migrations';
import { PlanLedgerNamingStrategy } from './naming-strategy';
import { DIALECTS } from './sql/dialects';
import * as fs from 'node:fs';
import * as path from 'node:path';

export interface DataSourceExtras {
  /** Connection pool size (ignored on SQLite). @defaultValue 10 */
  poolSize?: number;
  /** TypeORM query logging, for debugging only. @defaultValue false */
  logging?: boolean;
  logger?: TypeOrmLogger;
  /** Request timeout in ms where the driver has one (SQL Server); 0: none. @defaultValue the URL's, else the driver's */
  requestTimeoutMs?: number;
}

/** DataSource options for a DATABASE_URL target; nothing connects until `initialize()`. */
export function dataSourceOptions(target: DatabaseTarget, extras: DataSourceExtras = {}): DataSourceOptions {
  const common = {
    entities: buildEntitySchemas(DIALECTS[target.dialect]),
    migrations: MIGRATIONS,
    migrationsRun: false,
    synchronize: false,
    namingStrategy: new PlanLedgerNamingStrategy(),
    logging: extras.logging ?? false,
    ...(extras.logger ? { logger: extras.logger } : {}),
  };
  return DIALECTS[target.dialect].dataSourceOptions(target, common, extras.poolSize ?? 10, {
    ...(extras.requestTimeoutMs !== undefined ? { requestTimeoutMs: extras.requestTimeoutMs } : {}),
  });
}

export function createDataSource(target: DatabaseTarget, extras: DataSourceExtras = {}): DataSource {
  return DIALECTS[target.dialect].prepareDataSource(new DataSource(dataSourceOptions(target, extras)));
}

/**
 * Connect, creating what a fresh machine lacks: the SQLite file's folder, what the dialect's
 * `afterOpen` creates (the PostgreSQL schema).
 * Errors carry the redacted URL so the operator sees which database was meant.
 */
export async function openDataSource(target: DatabaseTarget, extras: DataSourceExtras = {}): Promise<DataSource> {
  if (target.file && target.file !== ':memory:') fs.mkdirSync(path.dirname(target.file), { recursive: true });
  const ds = createDataSource(target, extras);
  try {
    await ds.initialize();
    await DIALECTS[target.dialect].afterOpen(ds, target);
  } catch (err) {
    if (ds.isInitialized) await ds.destroy().catch(() => undefined);
    const message = (err as Error).message || String(err);
    // eslint-disable-next-line preserve-caught-error -- one line for an operator, with the redacted URL; the driver's error may hold it unredacted
    throw new Error(`cannot open database ${target.redacted}: ${message}`);
  }
  return ds;
}

/**
 * Fails with one line naming the fix when the schema is missing: a bare "no such table" from the
 * driver tells an operator nothing about plan-ledger migrate.
 */
export async function assertSchema(ds: DataSource, target: DatabaseTarget, purpose: string): Promise<void> {
  await ds.query('SELECT 1 FROM plan_events WHERE 1 = 0').catch((err: Error) => {
    throw new Error(
      `database ${target.redacted} is not ready for ${purpose} (${err.message}); run: plan-ledger migrate`,
    );
  });
}
