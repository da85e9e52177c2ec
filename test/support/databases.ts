import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { parseDatabaseUrl, DatabaseTarget } from '../../src/config/database-url';
import { openDataSource, DataSourceExtras } from '../../src/store/data-source';
import { runMigrations } from '../../src/store/migrator';

export type TestDb = 'sqlite' | 'postgres' | 'mariadb' | 'mssql';

/** Admin URLs of the local servers; override with TEST_PG_URL / TEST_MARIADB_URL. */
export const PG_ADMIN_URL = process.env.TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export const MARIADB_ADMIN_URL = process.env.TEST_MARIADB_URL ?? 'mariadb://root@127.0.0.1:3306/test';
/**
 * A SQL Server login that may create databases and logins, e.g. after `docker compose up -d mssql`:
 * `TEST_MSSQL_URL='mssql://sa:<MSSQL_SA_PASSWORD>@127.0.0.1:1433/master?trustServerCertificate=true'`.
 * Unset (no SQL Server on this machine), the suites run on the other databases only.
 */
export const MSSQL_ADMIN_URL = process.env.TEST_MSSQL_URL;
/**
 * `TEST_MSSQL_ONLY=1` (set by `npm run test:mssql`): the suites that take a list of databases run
 * on SQL Server and, where their list has it, SQLite (in process: the reference the cross-database
 * tests compare with), so a machine with SQL Server and Redis but no PostgreSQL or MariaDB runs them.
 */
export const MSSQL_ONLY = MSSQL_ADMIN_URL !== undefined && process.env.TEST_MSSQL_ONLY === '1';
/** The compatibility level each test database gets (`TEST_MSSQL_LEVEL`, default 160: SQL Server 2022's). */
export const MSSQL_LEVEL = mssqlLevel(process.env.TEST_MSSQL_LEVEL ?? '160');
export const MSSQL_HOW_TO =
  'SQL Server suites skipped: run `docker compose up -d --wait mssql redis`, then `npm run test:mssql` (or TEST_MSSQL_URL=mssql://... npm run test:mssql for another server)';

const START_HINT: Record<TestDb, string> = {
  sqlite: '',
  postgres: 'start it with: pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start',
  mariadb: 'start it with: start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd',
  mssql: 'start it with: docker compose up -d mssql',
};

export interface ThrowawayDb {
  kind: TestDb;
  /** A login that owns the database (migrations, DDL). */
  url: string;
  target: DatabaseTarget;
  /**
   * The login the worker and the CLI have in production: on SQL Server one that reads and writes
   * rows only (db_datareader + db_datawriter), as docker/mssql-init.sql sets it up; elsewhere `url`.
   */
  workerUrl: string;
  workerTarget: DatabaseTarget;
  /** Drops the schema / database / file. */
  drop(): Promise<void>;
}

function mssqlLevel(text: string): number {
  if (!/^1[0-9]0$/.test(text))
    throw new Error(`TEST_MSSQL_LEVEL: expected a compatibility level such as 160, got ${text}`);
  return Number(text);
}

function uniqueName(prefix: string): string {
  return `${prefix}_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
}

async function adminQuery(url: string, kind: TestDb, sql: string): Promise<void> {
  const ds = await openDataSource(parseDatabaseUrl(url), { poolSize: 1 }).catch((err: Error) => {
    throw new Error(`${kind} is not reachable at ${url} (${err.message}); ${START_HINT[kind]}`);
  });
  try {
    await ds.query(sql);
  } finally {
    await ds.destroy();
  }
}

/**
 * A database no other test sees: a SQLite file, a PostgreSQL schema, or a MariaDB database,
 * all named uniquely. Keep it when a test fails by setting KEEP_TEST_DB=1.
 */
export async function createThrowawayDb(kind: TestDb): Promise<ThrowawayDb> {
  const name = uniqueName('pl');
  let url: string;
  let workerUrl: string | undefined;
  let drop: () => Promise<void>;
  switch (kind) {
    case 'sqlite': {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plan-ledger-test-'));
      url = `sqlite:${path.join(dir, 'db.sqlite')}`;
      drop = async () => fs.rmSync(dir, { recursive: true, force: true });
      break;
    }
    case 'postgres': {
      const u = new URL(PG_ADMIN_URL);
      u.searchParams.set('schema', name);
      url = u.toString();
      await adminQuery(PG_ADMIN_URL, kind, `CREATE SCHEMA "${name}"`);
      drop = () => adminQuery(PG_ADMIN_URL, kind, `DROP SCHEMA IF EXISTS "${name}" CASCADE`);
      break;
    }
    case 'mariadb': {
      await adminQuery(MARIADB_ADMIN_URL, kind, `CREATE DATABASE \`${name}\``);
      const u = new URL(MARIADB_ADMIN_URL);
      u.pathname = `/${name}`;
      url = u.toString();
      drop = () => adminQuery(MARIADB_ADMIN_URL, kind, `DROP DATABASE IF EXISTS \`${name}\``);
      break;
    }
    case 'mssql': {
      // as production runs it: the level of SQL Server 2022, READ_COMMITTED_SNAPSHOT on, the worker a
      // login without DDL rights
      const admin = MSSQL_ADMIN_URL;
      if (!admin) throw new Error(MSSQL_HOW_TO);
      const login = `${name}_worker`;
      const password = `Pl1-${randomBytes(12).toString('hex')}`;
      await adminQuery(admin, kind, `CREATE DATABASE [${name}]`);
      await adminQuery(admin, kind, `ALTER DATABASE [${name}] SET COMPATIBILITY_LEVEL = ${MSSQL_LEVEL}`);
      await adminQuery(admin, kind, `ALTER DATABASE [${name}] SET READ_COMMITTED_SNAPSHOT ON WITH ROLLBACK IMMEDIATE`);
      await adminQuery(
        admin,
        kind,
        `CREATE LOGIN [${login}] WITH PASSWORD = N'${password}', DEFAULT_DATABASE = [${name}], CHECK_POLICY = OFF`,
      );
      const u = new URL(admin);
      u.pathname = `/${name}`;
      url = u.toString();
      await adminQuery(
        url,
        kind,
        `CREATE USER [${login}] FOR LOGIN [${login}]; ALTER ROLE db_datareader ADD MEMBER [${login}]; ALTER ROLE db_datawriter ADD MEMBER [${login}]`,
      );
      u.username = login;
      u.password = password;
      workerUrl = u.toString();
      drop = async () => {
        await adminQuery(
          admin,
          kind,
          `IF DB_ID('${name}') IS NOT NULL BEGIN ALTER DATABASE [${name}] SET SINGLE_USER WITH ROLLBACK IMMEDIATE; DROP DATABASE [${name}] END`,
        );
        await adminQuery(admin, kind, `IF SUSER_ID('${login}') IS NOT NULL DROP LOGIN [${login}]`);
      };
      break;
    }
  }
  const keep = process.env.KEEP_TEST_DB === '1';
  const target = parseDatabaseUrl(url);
  return {
    kind,
    url,
    target,
    workerUrl: workerUrl ?? url,
    workerTarget: workerUrl ? parseDatabaseUrl(workerUrl) : target,
    drop: keep ? async () => undefined : drop,
  };
}

/** A throwaway database with the schema migrated (by its owner), and a DataSource on it as the worker's login. */
export async function createMigratedDb(
  kind: TestDb,
  extras: DataSourceExtras = {},
): Promise<{ db: ThrowawayDb; ds: DataSource; close(): Promise<void> }> {
  const db = await createThrowawayDb(kind);
  let ds = await openDataSource(db.target, extras);
  await runMigrations(ds);
  if (db.workerTarget !== db.target) {
    // migrated by the owner; used by the worker's login, as in production
    await ds.destroy();
    ds = await openDataSource(db.workerTarget, extras);
  }
  return {
    db,
    ds,
    async close() {
      if (ds.isInitialized) await ds.destroy();
      await db.drop();
    },
  };
}

/** The given databases, and SQL Server too when TEST_MSSQL_URL names one (under TEST_MSSQL_ONLY=1, SQLite and SQL Server only). */
export function withMssql(kinds: TestDb[]): TestDb[] {
  if (MSSQL_ONLY) return [...kinds.filter((kind) => kind === 'sqlite'), 'mssql'];
  return MSSQL_ADMIN_URL ? [...kinds, 'mssql'] : kinds;
}

export const ALL_TEST_DBS: TestDb[] = withMssql(['sqlite', 'postgres', 'mariadb']);
