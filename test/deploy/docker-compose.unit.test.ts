import * as fs from 'node:fs';
import * as path from 'node:path';
import { execFileSync } from 'node:child_process';
import { loadConfig } from '../../src/config/config';

// No Docker engine here: the compose file and the SQL Server init script are checked as text, and
// the URLs the services get are parsed the way the services parse them.
const root = path.join(__dirname, '..', '..');
const compose = fs.readFileSync(path.join(root, 'docker-compose.yml'), 'utf8');
const initSql = fs.readFileSync(path.join(root, 'docker', 'mssql-init.sql'), 'utf8');
const initSh = fs.readFileSync(path.join(root, 'docker', 'mssql-init.sh'), 'utf8');

function values(name: string): string[] {
  return [...compose.matchAll(new RegExp(`^\\s+${name}: (.+)$`, 'gm'))].map((m) => m[1].trim());
}

describe('docker-compose.yml', () => {
  it('puts no password in a URL: services name a user of their own, the password comes apart', () => {
    const urls = values('DATABASE_URL');
    expect(urls).toEqual([
      'mssql://plan_ledger_migrate@mssql:1433/plan_ledger?trustServerCertificate=true',
      'mssql://plan_ledger_worker@mssql:1433/plan_ledger?trustServerCertificate=true',
    ]);
    expect(values('DATABASE_PASSWORD')).toEqual([
      '${MSSQL_MIGRATE_PASSWORD:?set MSSQL_MIGRATE_PASSWORD in .env}',
      '${MSSQL_WORKER_PASSWORD:?set MSSQL_WORKER_PASSWORD in .env}',
    ]);
    // what a DBA may pick, as the worker would read it
    for (const url of urls) {
      const config = loadConfig({ DATABASE_URL: url, DATABASE_PASSWORD: "a#b/c?d%e@f:g'h" });
      expect(config.database.password).toBe("a#b/c?d%e@f:g'h");
      expect(config.database.username).not.toBe('sa');
    }
  });

  it('pins SQL Server to a cumulative update, bounds its memory and Redis memory, bounds the row locks of a retention transaction', () => {
    expect(compose).not.toMatch(/:latest\b|-latest\b/);
    expect(compose).toMatch(/image: &mssql-image mcr\.microsoft\.com\/mssql\/server:2022-CU\d+-ubuntu-22\.04/);
    expect(values('MSSQL_MEMORY_LIMIT_MB')).toEqual(['${MSSQL_MEMORY_LIMIT_MB:-2048}']);
    expect(compose).toContain('"--maxmemory", "${REDIS_MAXMEMORY:-1gb}", "--maxmemory-policy", "noeviction"');
    expect(values('RETENTION_MAX_ROWS')).toEqual(['${RETENTION_MAX_ROWS:-5000}']);
  });

  it('runs a SQL Server edition licensed for production unless told otherwise', () => {
    expect(values('MSSQL_PID')).toEqual(['${MSSQL_PID:-Express}']);
    expect(compose).not.toMatch(/MSSQL_PID: Developer/);
  });

  it("gives SQL Server a default install's server collation, the one `npm run test:mssql` runs against", () => {
    expect(values('MSSQL_COLLATION')).toEqual(['${MSSQL_COLLATION:-SQL_Latin1_General_CP1_CI_AS}']);
  });

  it('keeps SQL Server in the default set: `docker compose up -d` starts the whole stack, no service waits on a profile', () => {
    expect(compose).not.toMatch(/^\s+profiles:/m);
  });

  it('gives SQL Server and Redis time to shut down cleanly and restarts them', () => {
    const service = (name: string) => compose.split(/\n {2}(?=[a-z-]+:\n)/).find((b) => b.startsWith(`${name}:`))!;
    for (const name of ['mssql', 'redis', 'worker']) {
      expect(service(name)).toMatch(/\n {4}stop_grace_period: \d+s\n/);
      expect(service(name)).toMatch(/\n {4}restart: unless-stopped\n/);
    }
    // past docker's default 10 s: a killed SQL Server replays its log before it takes logins again
    expect(Number(service('mssql').match(/stop_grace_period: (\d+)s/)![1])).toBeGreaterThanOrEqual(60);
  });

  it('sets SQL Server up with sqlcmd -b (stop at the first error) and gives the worker no DDL rights', () => {
    expect(initSh).toMatch(/sqlcmd -b -C -S mssql -U sa /);
    expect(initSql).toMatch(/ALTER ROLE db_datareader ADD MEMBER plan_ledger_worker/);
    expect(initSql).toMatch(/ALTER ROLE db_datawriter ADD MEMBER plan_ledger_worker/);
    expect(initSql).not.toMatch(/(db_owner|db_ddladmin) ADD MEMBER plan_ledger_worker/);
  });

  it('doubles quotes of a password before it lands in a T-SQL string literal', () => {
    const quote = initSh.match(/^quote\(\) \{.*\}$/m)![0];
    const out = execFileSync('sh', ['-c', `${quote}\nquote "$1"`, 'sh', "it's a p'ss"], { encoding: 'utf8' });
    expect(out).toBe("it''s a p''ss");
  });
});

describe('Dockerfile', () => {
  const dockerfile = fs.readFileSync(path.join(root, 'Dockerfile'), 'utf8');
  const copied = [...dockerfile.matchAll(/^COPY (?!--from)(.+) \.\/?\S*$/gm)].flatMap((m) => m[1].split(/\s+/));

  it('copies what `npm ci` builds from (the build script and its helper) and what `serve` serves', () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
    for (const file of String(pkg.scripts.build).match(/\b(?:scripts|src)\/[\w./-]+/g) ?? [])
      expect(copied.some((c) => file.startsWith(c.replace(/\/$/, '')))).toBe(true);
    for (const dir of ['bin', 'src', 'migrations', 'console', 'scripts']) expect(copied).toContain(dir);
  });
});
