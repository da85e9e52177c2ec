/**
 * `npm run test:mssql` without a SQL Server to test with: it fails with exit code 2 and one line
 * on stderr that says what is missing and how to start a server. Run as a user runs it, a child
 * process from a folder without a .env file.
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { freePort } from '../worker/helpers/private-postgres';

const ROOT = path.join(__dirname, '..', '..');
const TSX = path.join(ROOT, 'node_modules', '.bin', 'tsx');
const SCRIPT = path.join(ROOT, 'scripts', 'test-mssql.ts');
const HOW_TO_START =
  "start one with `docker compose up -d --wait mssql redis` (the MSSQL_*_PASSWORD lines of .env.example in .env), or name one: TEST_MSSQL_URL='mssql://<login>:<password>@<host>:1433/master?trustServerCertificate=true'";

function run(env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'plan-ledger-test-mssql-'));
  const base = { ...process.env };
  delete base.TEST_MSSQL_URL;
  delete base.MSSQL_SA_PASSWORD;
  return new Promise((resolve) => {
    execFile(TSX, [SCRIPT], { cwd, env: { ...base, ...env }, timeout: 60_000 }, (err, stdout, stderr) => {
      fs.rmSync(cwd, { recursive: true, force: true });
      resolve({ code: err ? ((err as { code?: number }).code ?? null) : 0, stdout, stderr });
    });
  });
}

describe('npm run test:mssql without a server', () => {
  it('names none: exit code 2 and one line saying how to start one', async () => {
    const r = await run({});
    expect(r).toEqual({
      code: 2,
      stdout: '',
      stderr: `test:mssql: no SQL Server to test: TEST_MSSQL_URL and MSSQL_SA_PASSWORD are unset; ${HOW_TO_START}\n`,
    });
  });

  it('names one that does not answer: exit code 2 and one line with where, why, and how to start one', async () => {
    const port = await freePort();
    const r = await run({
      TEST_MSSQL_URL: `mssql://sa:secret-pw@127.0.0.1:${port}/master?trustServerCertificate=true&connectionTimeout=5000`,
    });
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr.split('\n')).toEqual([expect.any(String), '']);
    expect(r.stderr).toMatch(new RegExp(`^test:mssql: cannot connect to SQL Server at 127\\.0\\.0\\.1:${port} \\(`));
    expect(r.stderr).toContain(`Failed to connect to 127.0.0.1:${port}`);
    expect(r.stderr).toContain(HOW_TO_START);
    expect(r.stderr).not.toContain('secret-pw');
  });

  it('names a URL of another database: exit code 2 and one line saying so', async () => {
    const r = await run({ TEST_MSSQL_URL: 'postgres://postgres@127.0.0.1:5432/test' });
    expect(r).toEqual({
      code: 2,
      stdout: '',
      stderr: 'test:mssql: TEST_MSSQL_URL is not an mssql:// URL (postgres://postgres@127.0.0.1:5432/test)\n',
    });
  });
});
