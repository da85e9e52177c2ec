import * as path from 'node:path';
import { redactUrl } from '../shared/redact-url';

export { redactUrl } from '../shared/redact-url';

/**
 * The four SQL families plan-ledger supports. MariaDB and MySQL share one family: same types,
 * same driver (mysql2), TypeORM only differs in the `type` string.
 */
export type Dialect = 'sqlite' | 'postgres' | 'mysql' | 'mssql';

/** What DATABASE_URL resolves to. `redacted` is the URL with any password replaced by `***`. */
export interface DatabaseTarget {
  dialect: Dialect;
  /** TypeORM driver type: mariadb keeps its own name, everything else is its family. */
  driver: 'better-sqlite3' | 'postgres' | 'mysql' | 'mariadb' | 'mssql';
  url: string;
  redacted: string;
  /** SQLite: file path or `:memory:`. */
  file?: string;
  host?: string;
  port?: number;
  username?: string;
  password?: string;
  database?: string;
  /** PostgreSQL: schema (search_path) from `?schema=`; tests use one schema each. */
  schema?: string;
  /** mssql options from the query string (`encrypt`, `trustServerCertificate`). */
  params: Record<string, string>;
}

export const DEFAULT_SQLITE_FILE = './data/plan-ledger.sqlite';

/** The mssql:// query parameters plan-ledger reads, checked so a typo is an error, not a default. */
const MSSQL_PARAMS: Readonly<Record<string, ParamKind>> = {
  encrypt: 'boolean',
  trustServerCertificate: 'boolean',
  requestTimeout: 'ms',
  connectionTimeout: 'ms',
  // an Always On listener spanning subnets: connect to all its addresses at once, not one after the other
  multiSubnetFailover: 'boolean',
};

type ParamKind = 'boolean' | 'ms';

/** Each URL scheme: its database family, driver, default port, and (when listed) the only query parameters it takes. */
const SCHEMES: Record<
  string,
  { dialect: Dialect; driver: DatabaseTarget['driver']; port: number; params?: Readonly<Record<string, ParamKind>> }
> = {
  'postgres:': { dialect: 'postgres', driver: 'postgres', port: 5432 },
  'postgresql:': { dialect: 'postgres', driver: 'postgres', port: 5432 },
  'mysql:': { dialect: 'mysql', driver: 'mysql', port: 3306 },
  'mariadb:': { dialect: 'mysql', driver: 'mariadb', port: 3306 },
  'mssql:': { dialect: 'mssql', driver: 'mssql', port: 1433, params: MSSQL_PARAMS },
  'sqlserver:': { dialect: 'mssql', driver: 'mssql', port: 1433, params: MSSQL_PARAMS },
};

const EXPECTED =
  'expected sqlite:<file>, or postgres:// mysql:// mariadb:// mssql:// followed by [user[:password]@]host[:port]/database';

/** Parse DATABASE_URL; throws an Error whose message says what is wrong and what is expected. */
export function parseDatabaseUrl(raw: string): DatabaseTarget {
  const url = raw.trim();
  if (url.startsWith('sqlite:')) return parseSqlite(url);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error(`"${redactUrl(url)}" is not a URL; ${EXPECTED}`);
  }
  const scheme = SCHEMES[parsed.protocol];
  if (!scheme) throw new Error(`unsupported scheme "${parsed.protocol}"; ${EXPECTED}`);
  if (!parsed.hostname) throw new Error(`"${redactUrl(url)}" has no host; ${EXPECTED}`);
  const database = decodeURIComponent(parsed.pathname.replace(/^\//, ''));
  if (!database) throw new Error(`"${redactUrl(url)}" names no database (the path after the host); ${EXPECTED}`);
  const port = parsed.port ? Number(parsed.port) : scheme.port;
  const params = Object.fromEntries(parsed.searchParams.entries());
  if (scheme.params) checkParams(params, scheme.params, parsed.protocol, url);
  return {
    dialect: scheme.dialect,
    driver: scheme.driver,
    url,
    redacted: redactUrl(url),
    host: parsed.hostname.replace(/^\[|\]$/g, ''),
    port,
    username: parsed.username ? decodeURIComponent(parsed.username) : undefined,
    password: parsed.password ? decodeURIComponent(parsed.password) : undefined,
    database,
    schema: params.schema,
    params,
  };
}

function checkParams(
  params: Record<string, string>,
  known: Readonly<Record<string, ParamKind>>,
  protocol: string,
  url: string,
): void {
  for (const [name, value] of Object.entries(params)) {
    const kind = known[name];
    if (!kind)
      throw new Error(
        `"${redactUrl(url)}": unknown parameter "${name}"; ${protocol}// takes ${Object.keys(known).join(', ')}`,
      );
    if (kind === 'boolean' && value !== 'true' && value !== 'false')
      throw new Error(`"${redactUrl(url)}": ${name} must be true or false, not "${value}"`);
    if (kind === 'ms' && !/^[1-9][0-9]{0,8}$/.test(value))
      throw new Error(`"${redactUrl(url)}": ${name} must be a number of milliseconds, not "${value}"`);
  }
}

/**
 * The target with its password taken from DATABASE_PASSWORD instead of the URL: any character a
 * DBA picks (`# / ? % @ :`) works, with no URL encoding. A password in both places is refused, so
 * an operator never wonders which one is used.
 */
export function withPassword(target: DatabaseTarget, password: string): DatabaseTarget {
  if (target.file !== undefined) throw new Error('a SQLite database has no password; unset DATABASE_PASSWORD');
  if (target.password !== undefined)
    throw new Error(
      `"${target.redacted}" holds a password already; put it in DATABASE_URL or DATABASE_PASSWORD, not both`,
    );
  if (!target.username)
    throw new Error(
      `"${target.redacted}" names no user for DATABASE_PASSWORD; write it as scheme://user@host/database`,
    );
  const u = new URL(target.url);
  u.password = encodeURIComponent(password);
  return { ...target, password, url: u.toString() };
}

function parseSqlite(url: string): DatabaseTarget {
  // sqlite:./data/x.sqlite, sqlite:/abs/x.sqlite, sqlite:///abs/x.sqlite, sqlite::memory:
  let file = url.slice('sqlite:'.length);
  if (file.startsWith('//')) file = file.slice(2);
  if (!file) throw new Error(`"${url}" names no file; expected sqlite:./data/plan-ledger.sqlite or sqlite::memory:`);
  if (file !== ':memory:') file = path.resolve(file);
  return { dialect: 'sqlite', driver: 'better-sqlite3', url, redacted: url, file, params: {} };
}
