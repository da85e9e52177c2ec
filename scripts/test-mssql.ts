/**
 * `npm run test:mssql`: the env-gated SQL Server suites, run as production runs SQL Server, then a
 * short report to paste into an issue (docs/sql-server.md#npm-run-testmssql).
 *
 * The server: TEST_MSSQL_URL (a login that may create databases and logins), else the compose
 * file's SQL Server on 127.0.0.1:1433 as `sa` with MSSQL_SA_PASSWORD (from the environment or
 * ./.env, as docker compose reads it). Each test database gets compatibility level 160 and
 * READ_COMMITTED_SNAPSHOT, and the worker a login with db_datareader and db_datawriter only
 * (test/support/databases.ts); the suites that take a list of databases run on SQL Server and
 * in-process SQLite only (TEST_MSSQL_ONLY=1), so SQL Server and Redis are all it needs.
 *
 * Exit codes: 0 every test passed, 1 a test failed, 2 no SQL Server or Redis to test with (one
 * line on stderr says which and how to start it).
 */
import { execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import IORedis from 'ioredis';
import type { DataSource } from 'typeorm';
import { parseDatabaseUrl } from '../src/config/database-url';
import { escapeControl } from '../src/shared/terminal-text';
import { openDataSource } from '../src/store/data-source';

const ROOT = path.join(__dirname, '..');

/** The env-gated SQL Server suites: every test file that runs on SQL Server when TEST_MSSQL_URL names one. */
export const MSSQL_SUITES: readonly string[] = [
  'test/store/mssql-production.test.ts',
  'test/store/mssql-server.test.ts',
  'test/store/migrations.test.ts',
  'test/store/schema-lint.test.ts',
  'test/store/approvals.test.ts',
  'test/store/approvals-order.property.test.ts',
  'test/cli/approvals-repair.cli.test.ts',
  'test/store/databases-alike.test.ts',
  'test/store/plan-event-store.test.ts',
  'test/store/plan-fork.store.test.ts',
  'test/store/plan-row-cache.test.ts',
  'test/store/plan-watermark.test.ts',
  'test/store/order-independence.property.test.ts',
  'test/store/voided-seq.property.test.ts',
  'test/store/price-overrides.test.ts',
  'test/store/reprice-race.test.ts',
  'test/store/reprice-pages.test.ts',
  'test/store/money-exact.cross-db.test.ts',
  'test/store/step-cost.test.ts',
  'test/store/timestamp-range.test.ts',
  'test/store/outputs-stored-once.test.ts',
  'test/worker/worker-runtime.test.ts',
  'test/worker/worker-retries.test.ts',
  'test/worker/worker-poison.test.ts',
  'test/worker/mssql-kill-drill.test.ts',
  'test/queries/analytics-rollups.property.test.ts',
  'test/queries/rollups-rebuild.cli.test.ts',
  'test/queries/rollup-handoffs-again.test.ts',
  'test/queries/token-plan-pages.cross-db.test.ts',
  'test/retention/retention.test.ts',
  'test/retention/retention-reads.test.ts',
  'test/retention/retention-writer.test.ts',
  'test/retention/row-bounds.test.ts',
  'test/retention/session-erasure.test.ts',
  'test/retention/session-race.test.ts',
  'test/retention/dag-expiry.test.ts',
  'test/retention/fork-retention.test.ts',
  'test/queries/read-side.cross-db.test.ts',
  'test/queries/trailing-spaces.cross-db.test.ts',
  'test/queries/plan-lineage.test.ts',
  'test/queries/steps-output.cli.test.ts',
  'test/fork/fork-dag.test.ts',
  'test/fork/fork-race.test.ts',
  'test/fork/plans-fork.cli.test.ts',
  'test/webhooks/webhook-outbox.cross-db.test.ts',
  'test/webhooks/webhook-admin-api.test.ts',
  'test/stalled/stall-check.test.ts',
  'test/stalled/stall-cluster.test.ts',
  'test/stalled/stalled-worker.test.ts',
  'test/stalled/stall-webhooks.test.ts',
  'test/console/console-approvals.test.ts',
];

/** The server collation a default SQL Server install (and the compose file) has. */
export const PRODUCTION_COLLATION = 'SQL_Latin1_General_CP1_CI_AS';

const START =
  "start one with `docker compose up -d --wait mssql redis` (the MSSQL_*_PASSWORD lines of .env.example in .env), or name one: TEST_MSSQL_URL='mssql://<login>:<password>@<host>:1433/master?trustServerCertificate=true'";

/** Where the admin login connects: the URL, and host:port for messages. */
export type AdminTarget = { url: string; where: string } | { error: string };

/** `KEY=value` lines of a .env file (docker compose's syntax: `#` comments, optional quotes). */
export function readDotenv(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split(/\r?\n/)) {
    const m = line.match(/^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$/);
    if (!m) continue;
    const quoted = m[2].match(/^(['"])(.*)\1$/);
    out[m[1]] = quoted ? quoted[2] : m[2];
  }
  return out;
}

/** The admin login: TEST_MSSQL_URL, else the compose file's `sa` with MSSQL_SA_PASSWORD. */
export function adminTarget(env: NodeJS.ProcessEnv, dotenv: Record<string, string>): AdminTarget {
  const named = env.TEST_MSSQL_URL;
  if (named) {
    try {
      const target = parseDatabaseUrl(named);
      if (target.dialect !== 'mssql') return { error: `TEST_MSSQL_URL is not an mssql:// URL (${target.redacted})` };
      return { url: named, where: `${target.host ?? 'localhost'}:${target.port ?? 1433}` };
    } catch (err) {
      return { error: `TEST_MSSQL_URL: ${(err as Error).message}` };
    }
  }
  const password = env.MSSQL_SA_PASSWORD || dotenv.MSSQL_SA_PASSWORD;
  if (!password) return { error: `no SQL Server to test: TEST_MSSQL_URL and MSSQL_SA_PASSWORD are unset; ${START}` };
  const u = new URL('mssql://127.0.0.1:1433/master?trustServerCertificate=true&connectionTimeout=10000');
  u.username = 'sa';
  u.password = encodeURIComponent(password);
  return { url: u.toString(), where: '127.0.0.1:1433' };
}

/** What the report says of the server and of a database made the way the suites make theirs. */
export interface ServerFacts {
  version: string;
  update: string;
  edition: string;
  collation: string;
  level: number;
  rcsi: boolean;
  databaseCollation: string;
  workerRoles: string[];
}

async function serverProperties(admin: DataSource) {
  const [row] = await admin.query(
    `SELECT CAST(SERVERPROPERTY('ProductVersion') AS nvarchar(128)) AS version,
            CAST(COALESCE(SERVERPROPERTY('ProductUpdateLevel'), SERVERPROPERTY('ProductLevel')) AS nvarchar(128)) AS [update],
            CAST(SERVERPROPERTY('Edition') AS nvarchar(128)) AS edition,
            CAST(SERVERPROPERTY('Collation') AS nvarchar(128)) AS collation`,
  );
  return row as { version: string; update: string; edition: string; collation: string };
}

/** Makes one test database as the suites do, reads what it got, and drops it. */
async function testDatabaseFacts() {
  const { createThrowawayDb } = await import('../test/support/databases');
  const db = await createThrowawayDb('mssql');
  const ds = await openDataSource(db.target, { poolSize: 1 });
  try {
    const [row] = await ds.query(
      `SELECT compatibility_level AS level, is_read_committed_snapshot_on AS rcsi, collation_name AS collation
         FROM sys.databases WHERE name = DB_NAME()`,
    );
    const roles: Array<{ name: string }> = await ds.query(
      `SELECT r.name AS name FROM sys.database_role_members m
         JOIN sys.database_principals r ON r.principal_id = m.role_principal_id
         JOIN sys.database_principals u ON u.principal_id = m.member_principal_id
        WHERE u.name = @0 ORDER BY r.name`,
      [db.workerTarget.username],
    );
    return {
      level: Number(row.level),
      rcsi: row.rcsi === true || row.rcsi === 1,
      databaseCollation: String(row.collation),
      workerRoles: roles.map((r) => r.name),
    };
  } finally {
    await ds.destroy();
    await db.drop();
  }
}

/** The server's facts, or the one line that says it cannot be reached. */
export async function readServer(target: { url: string; where: string }): Promise<ServerFacts | { error: string }> {
  let admin: DataSource;
  try {
    admin = await openDataSource(parseDatabaseUrl(target.url), { poolSize: 1 });
  } catch (err) {
    const reason = String((err as Error).message).split('\n')[0];
    return { error: `cannot connect to SQL Server at ${target.where} (${reason}); ${START}` };
  }
  try {
    return { ...(await serverProperties(admin)), ...(await testDatabaseFacts()) };
  } finally {
    await admin.destroy();
  }
}

/** Whether Redis answers, or the one line that says it does not. */
export async function checkRedis(url: string): Promise<{ error: string } | undefined> {
  const redis = new IORedis(url, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 5_000 });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    await redis.ping();
    return undefined;
  } catch (err) {
    const where = new URL(url);
    where.password = where.password ? '***' : '';
    return {
      error: `no Redis answers at ${where} (${(err as Error).message}); start it with \`docker compose up -d redis\``,
    };
  } finally {
    redis.disconnect();
  }
}

/** What Jest's --json output says. */
export interface JestSummary {
  numPassedTests: number;
  numFailedTests: number;
  numPendingTests: number;
  numTotalTestSuites: number;
  numFailedTestSuites: number;
  testResults: Array<{
    name: string;
    message?: string;
    assertionResults: Array<{ fullName: string; status: string }>;
  }>;
}

/** The failed tests (file › test), or files that failed without a test failing (they did not load). */
function failures(summary: JestSummary): string[] {
  return summary.testResults.flatMap((file) => {
    const rel = path.relative(ROOT, file.name);
    const failed = file.assertionResults.filter((a) => a.status === 'failed').map((a) => `${rel} › ${a.fullName}`);
    if (failed.length === 0 && file.message) return [`${rel}: ${file.message.trim().split('\n')[0]}`];
    return failed;
  });
}

/** The report, in Markdown, to paste into an issue. */
export function formatReport(options: {
  facts: ServerFacts;
  summary: JestSummary;
  seconds: number;
  commit: string;
}): string {
  const { facts, summary, seconds, commit } = options;
  const failed = failures(summary);
  const collationNote = facts.collation === PRODUCTION_COLLATION ? '' : ` (not the default ${PRODUCTION_COLLATION})`;
  const lines = [
    '### plan-ledger `npm run test:mssql`',
    `- plan-ledger: commit ${commit}, node ${process.version}, ${os.platform()}`,
    `- server: SQL Server ${facts.version} ${facts.update}, ${facts.edition}`,
    `- server collation: ${facts.collation}${collationNote}`,
    `- test databases: compatibility level ${facts.level}, READ_COMMITTED_SNAPSHOT ${facts.rcsi ? 'on' : 'OFF'}, collation ${facts.databaseCollation}; worker login roles: ${facts.workerRoles.join(', ') || 'none'}`,
    `- ran: ${summary.numTotalTestSuites} test files on SQL Server, SQLite as the reference (store, worker with two workers and the connection-kill drill, retention, reads, fork)`,
    `- result: ${summary.numPassedTests} passed, ${summary.numFailedTests} failed, ${summary.numPendingTests} skipped; ${summary.numFailedTestSuites} of ${summary.numTotalTestSuites} files failed; ${seconds} s`,
    ...(failed.length ? ['- failed:', ...failed.slice(0, 20).map((f) => `  - ${f}`)] : []),
    ...(failed.length > 20 ? [`  - and ${failed.length - 20} more`] : []),
  ];
  return lines.map(escapeControl).join('\n');
}

/** Runs the suites in one Jest process; its summary, and its exit code. */
function runSuites(url: string): Promise<{ summary?: JestSummary; code: number }> {
  const out = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'plan-ledger-test-mssql-')), 'jest.json');
  const jest = require.resolve('jest/bin/jest.js');
  const args = [jest, '--runInBand', '--runTestsByPath', '--json', `--outputFile=${out}`, ...MSSQL_SUITES];
  const env = { ...process.env, TEST_MSSQL_URL: url, TEST_MSSQL_ONLY: '1' };
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: 'inherit' });
    child.on('exit', (code) => {
      const summary = fs.existsSync(out) ? (JSON.parse(fs.readFileSync(out, 'utf8')) as JestSummary) : undefined;
      fs.rmSync(path.dirname(out), { recursive: true, force: true });
      resolve({ summary, code: code ?? 1 });
    });
  });
}

function commitOf(): string {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
  } catch {
    return 'unknown (not a git checkout)';
  }
}

/** One line on stderr, and exit 2 (nothing to test with) or the code given. */
function refuse(line: string, code = 2): never {
  process.stderr.write(`test:mssql: ${escapeControl(line)}\n`);
  process.exit(code);
}

async function main(): Promise<void> {
  const dotenvFile = path.join(process.cwd(), '.env');
  const dotenv = fs.existsSync(dotenvFile) ? readDotenv(fs.readFileSync(dotenvFile, 'utf8')) : {};
  const target = adminTarget(process.env, dotenv);
  if ('error' in target) refuse(target.error);
  // the suites read TEST_MSSQL_URL when test/support/databases.ts loads, readServer included
  process.env.TEST_MSSQL_URL = target.url;
  const redisDown = await checkRedis(process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379');
  const facts = await readServer(target);
  if ('error' in facts) refuse(facts.error);
  if (redisDown) refuse(redisDown.error);
  const started = Date.now();
  const { summary, code } = await runSuites(target.url);
  if (!summary) refuse(`Jest wrote no results (exit code ${code}); its output is above`, 1);
  const seconds = Math.round((Date.now() - started) / 1000);
  process.stdout.write(`\n${formatReport({ facts, summary, seconds, commit: commitOf() })}\n`);
  process.exit(code === 0 ? 0 : 1);
}

if (require.main === module) {
  main().catch((err: Error) => refuse(`${err.message.split('\n')[0]}`));
}
