import { runCli } from '../support/cli';
import { createThrowawayDb } from '../support/databases';
import { MIGRATIONS } from '../../migrations';

/** Every migration, oldest first (test/store/migrations.test.ts names them one by one). */
const ALL = MIGRATIONS.map((m) => m.name);

describe('plan-ledger migrate (child process)', () => {
  it('applies, reports up to date, and reverts on a throwaway PostgreSQL schema', async () => {
    const db = await createThrowawayDb('postgres');
    try {
      const env = { DATABASE_URL: db.url };
      const first = await runCli(['migrate'], env);
      expect(first.stderr).toBe('');
      expect(first).toMatchObject({
        code: 0,
        stdout: ALL.map((name) => `applied ${name}\n`).join(''),
      });
      expect(await runCli(['migrate'], env)).toMatchObject({ code: 0, stdout: 'schema is up to date\n' });
      const reverted = await runCli(['migrate', '--revert-all', '--json'], env);
      expect(reverted.code).toBe(0);
      expect(JSON.parse(reverted.stdout)).toMatchObject({
        reverted: [...ALL].reverse(),
      });
    } finally {
      await db.drop();
    }
  });

  it('prints T-SQL for an mssql:// URL with no server reachable', async () => {
    const result = await runCli(['migrate', '--print-sql'], { DATABASE_URL: 'mssql://sa:x@127.0.0.1:1/none' });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('CREATE TABLE "execution_plans"');
    expect(result.stdout).toContain('nvarchar(MAX)');
  });

  it.each([
    ['foo://bar', 'DATABASE_URL: unsupported scheme "foo:"'],
    ['postgres://user:hunter2@/db', 'DATABASE_URL:'],
    ['mysql://root@127.0.0.1', 'names no database'],
  ])('rejects DATABASE_URL=%s with one line, exit 2, no stack, no password', async (url, text) => {
    const result = await runCli(['migrate'], { DATABASE_URL: url });
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toContain(text);
    expect(result.stderr).not.toContain('hunter2');
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });

  it('names every bad variable at once', async () => {
    const result = await runCli(['migrate'], { DATABASE_URL: 'nope', REDIS_URL: 'http://x', LOG_LEVEL: 'loud' });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/DATABASE_URL: .*REDIS_URL: .*LOG_LEVEL: /);
  });

  it('exits 2 on an unknown option and 1 when the database is unreachable', async () => {
    expect((await runCli(['migrate', '--bogus'])).code).toBe(2);
    const down = await runCli(['migrate'], { DATABASE_URL: 'postgres://postgres:pw@127.0.0.1:1/none' });
    expect(down.code).toBe(1);
    expect(down.stderr).toContain('cannot open database postgres://postgres:***@127.0.0.1:1/none');
    expect(down.stderr).not.toContain(':pw@');
  });
});
