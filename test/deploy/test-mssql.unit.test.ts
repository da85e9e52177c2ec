import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseDatabaseUrl } from '../../src/config/database-url';
import {
  adminTarget,
  formatReport,
  type JestSummary,
  MSSQL_SUITES,
  readDotenv,
  type ServerFacts,
} from '../../scripts/test-mssql';

const ROOT = path.join(__dirname, '..', '..');
/** An import of what turns SQL Server on in a suite (test/support/databases.ts). */
const IMPORTS_THE_SWITCH =
  /import \{[^}]*\b(withMssql|ALL_TEST_DBS|MSSQL_ADMIN_URL)\b[^}]*\} from '\.\.\/support\/databases'/;

/** Test files under test/, relative to the root. */
function testFiles(dir = path.join(ROOT, 'test')): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return testFiles(full);
    return e.name.endsWith('.test.ts') ? [path.relative(ROOT, full)] : [];
  });
}

describe('npm run test:mssql', () => {
  it('is a script of package.json', () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
    expect(pkg.scripts['test:mssql']).toBe('tsx scripts/test-mssql.ts');
  });

  it('runs every test file that runs on SQL Server when TEST_MSSQL_URL names one, and only those', () => {
    const gated = testFiles()
      .filter((file) => IMPORTS_THE_SWITCH.test(fs.readFileSync(path.join(ROOT, file), 'utf8')))
      .sort();
    expect([...MSSQL_SUITES].sort()).toEqual(gated);
    expect(MSSQL_SUITES).toContain('test/worker/mssql-kill-drill.test.ts');
  });

  describe('the server it tests', () => {
    it('TEST_MSSQL_URL when set', () => {
      const url = 'mssql://admin:pw@db.example:14330/master?trustServerCertificate=true';
      expect(adminTarget({ TEST_MSSQL_URL: url, MSSQL_SA_PASSWORD: 'other' }, {})).toEqual({
        url,
        where: 'db.example:14330',
      });
    });

    it("else the compose file's sa, with MSSQL_SA_PASSWORD from the environment or .env, any character kept", () => {
      const password = `a#b/c?d%e@f:g'h"`;
      for (const [env, dotenv] of [
        [{ MSSQL_SA_PASSWORD: password }, {}],
        [{}, readDotenv(`# compose\nMSSQL_SA_PASSWORD='${password}'\nOTHER=1\n`)],
      ]) {
        const target = adminTarget(env, dotenv);
        if ('error' in target) throw new Error(target.error);
        expect(target.where).toBe('127.0.0.1:1433');
        expect(parseDatabaseUrl(target.url)).toMatchObject({ username: 'sa', password, host: '127.0.0.1', port: 1433 });
      }
    });

    it('reads .env as docker compose does: comments, export, quotes, spaces around =', () => {
      expect(readDotenv(`# a comment\nexport A=1\nB = "two words"\nC='x=y'\n  \nnot a line\n`)).toEqual({
        A: '1',
        B: 'two words',
        C: 'x=y',
      });
    });
  });

  describe('the report', () => {
    const facts: ServerFacts = {
      version: '16.0.4135.4',
      update: 'CU14',
      edition: 'Express Edition (64-bit)',
      collation: 'SQL_Latin1_General_CP1_CI_AS',
      level: 160,
      rcsi: true,
      databaseCollation: 'SQL_Latin1_General_CP1_CI_AS',
      workerRoles: ['db_datareader', 'db_datawriter'],
    };
    const file = (name: string, results: Array<[string, string]>, message = '') => ({
      name: path.join(ROOT, name),
      message,
      assertionResults: results.map(([fullName, status]) => ({ fullName, status })),
    });
    const summary: JestSummary = {
      numPassedTests: 2,
      numFailedTests: 1,
      numPendingTests: 0,
      numTotalTestSuites: 2,
      numFailedTestSuites: 1,
      testResults: [
        file('test/store/a.test.ts', [['stores \u001b[2Jevery event', 'failed']], 'boom'),
        file('test/store/b.test.ts', [
          ['x', 'passed'],
          ['y', 'passed'],
        ]),
      ],
    };

    it('says what the server is, how the test databases were set up, what ran and what failed', () => {
      const report = formatReport({ facts, summary, seconds: 12, commit: 'abc1234' }).split('\n');
      expect(report[0]).toBe('### plan-ledger `npm run test:mssql`');
      expect(report.slice(2)).toEqual([
        '- server: SQL Server 16.0.4135.4 CU14, Express Edition (64-bit)',
        '- server collation: SQL_Latin1_General_CP1_CI_AS',
        '- test databases: compatibility level 160, READ_COMMITTED_SNAPSHOT on, collation SQL_Latin1_General_CP1_CI_AS; worker login roles: db_datareader, db_datawriter',
        '- ran: 2 test files on SQL Server, SQLite as the reference (store, worker with two workers and the connection-kill drill, retention, reads, fork)',
        '- result: 2 passed, 1 failed, 0 skipped; 1 of 2 files failed; 12 s',
        '- failed:',
        '  - test/store/a.test.ts › stores \\u001b[2Jevery event',
      ]);
      expect(report[1]).toMatch(/^- plan-ledger: commit abc1234, node v\d+/);
    });

    it('says when the server collation is not the default, and names a file that failed to load', () => {
      const other = { ...facts, collation: 'Latin1_General_CI_AS', rcsi: false };
      const broken = { ...summary, testResults: [file('test/store/c.test.ts', [], 'Cannot find module x\n  at ...')] };
      const report = formatReport({ facts: other, summary: broken, seconds: 1, commit: 'abc1234' });
      expect(report).toContain(
        '- server collation: Latin1_General_CI_AS (not the default SQL_Latin1_General_CP1_CI_AS)',
      );
      expect(report).toContain('READ_COMMITTED_SNAPSHOT OFF');
      expect(report).toContain('  - test/store/c.test.ts: Cannot find module x');
    });
  });
});
