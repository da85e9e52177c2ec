import 'reflect-metadata';
import { DataSource, DataSourceOptions, Logger as TypeOrmLogger } from 'typeorm';
import type { DatabaseTarget } from '../config/database-url';
import { buildEntitySchemas } from './entities';
import { MIGRATIONS } from '../../migrations';
import { PlanLedgerNamingStrategy } from './naming-strategy';
import { typeMssqlParameters } from './mssql-parameters';
import * as fs from 'node:fs';
import * as path from 'node:path';

export interface DataSourceExtras {
  /** Connection pool size (ignored on SQLite). @defaultValue 10 */
  poolSize?: number;
  /** TypeORM query logging, for debugging only. @defaultValue false */
  logging?: boolean;
  logger?: TypeOrmLogger;
}

/** DataSource options for a DATABASE_URL target; nothing connects until `initialize()`. */
export function dataSourceOptions(target: DatabaseTarget, extras: DataSourceExtras = {}): DataSourceOptions {
  const common = {
    entities: buildEntitySchemas(target.dialect),
    migrations: MIGRATIONS,
    migrationsRun: false,
    synchronize: false,
    namingStrategy: new PlanLedgerNamingStrategy(),
    logging: extras.logging ?? false,
    ...(extras.logger ? { logger: extras.logger } : {}),
  };
  const pool = extras.poolSize ?? 10;
  switch (target.driver) {
    case 'better-sqlite3':
      return {
        ...common,
        type: 'better-sqlite3',
        database: target.file!,
        // WAL lets readers (CLI, demo) run while the worker writes; writers are serialised in code.
        enableWAL: true,
        timeout: 10_000,
        prepareDatabase: (db: { pragma(s: string): unknown }) => {
          db.pragma('foreign_keys = ON');
          db.pragma('synchronous = NORMAL');
          // 32 MiB of page cache (SQLite's default: 2 MiB): events of many plans at once touch
          // rows all over the tables; bench:e2e interleaved SQLite +13 % (64 MiB gained nothing more)
          db.pragma('cache_size = -32768');
        },
      };
    case 'postgres':
      return {
        ...common,
        type: 'postgres',
        url: withoutParams(target.url),
        ...(target.schema ? { schema: target.schema } : {}),
        poolSize: pool,
        // raw SQL (the PRD's analytics queries) must see the same schema as TypeORM does
        extra: target.schema ? { options: `-c search_path=${target.schema}` } : {},
      };
    case 'mysql':
    case 'mariadb':
      return {
        ...common,
        type: target.driver,
        host: target.host,
        port: target.port,
        username: target.username,
        password: target.password,
        database: target.database,
        timezone: 'Z',
        charset: 'utf8mb4_unicode_ci',
        poolSize: pool,
      };
    case 'mssql':
      return {
        ...common,
        type: 'mssql',
        host: target.host!,
        port: target.port,
        username: target.username,
        password: target.password,
        database: target.database,
        pool: { max: pool, min: 0 },
        // the driver's default is 15 s; a long retention batch or a busy server may need more
        requestTimeout: mssqlTimeout(target, 'requestTimeout', 15_000),
        connectionTimeout: mssqlTimeout(target, 'connectionTimeout', 15_000),
        options: {
          // TypeORM sets useUTC:false unless told; every instant here is UTC
          useUTC: true,
          // encrypted and verified unless the URL says otherwise (docker-compose's self-signed
          // server says trustServerCertificate=true; production servers should not need it)
          encrypt: target.params.encrypt !== 'false',
          trustServerCertificate: target.params.trustServerCertificate === 'true',
        },
      };
  }
}

function withoutParams(url: string): string {
  const u = new URL(url);
  u.searchParams.delete('schema');
  return u.toString();
}

/** `?requestTimeout=` / `?connectionTimeout=` of an mssql:// URL, in milliseconds (checked by parseDatabaseUrl). */
function mssqlTimeout(target: DatabaseTarget, name: string, fallback: number): number {
  const v = target.params[name];
  return v === undefined ? fallback : Number(v);
}

export function createDataSource(target: DatabaseTarget, extras: DataSourceExtras = {}): DataSource {
  const ds = new DataSource(dataSourceOptions(target, extras));
  // SQL Server: declared parameter types that do not vary with the values (mssql-parameters.ts)
  return target.dialect === 'mssql' ? typeMssqlParameters(ds) : ds;
}

/**
 * Connect, creating what a fresh machine lacks: the SQLite file's folder, the PostgreSQL schema.
 * Errors carry the redacted URL so the operator sees which database was meant.
 */
export async function openDataSource(target: DatabaseTarget, extras: DataSourceExtras = {}): Promise<DataSource> {
  if (target.file && target.file !== ':memory:') fs.mkdirSync(path.dirname(target.file), { recursive: true });
  const ds = createDataSource(target, extras);
  try {
    await ds.initialize();
    if (target.dialect === 'postgres' && target.schema) {
      await ds.query(`CREATE SCHEMA IF NOT EXISTS "${target.schema.replace(/"/g, '""')}"`);
    }
  } catch (err) {
    if (ds.isInitialized) await ds.destroy().catch(() => undefined);
    const message = (err as Error).message || String(err);
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
    throw new Error(`database ${target.redacted} is not ready for ${purpose} (${err.message}); run: plan-ledger migrate`);
  });
}
