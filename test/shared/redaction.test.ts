/**
 * Passwords never reach output: URLs are redacted by parsing (the user information ends at the
 * last `@`, so a password holding an unencoded `@` is hidden whole), and ioredis's debug lines
 * (`DEBUG=ioredis:*`) show no command arguments, so not the `auth` password either.
 */
import { redactUrl } from '../../src/config/database-url';
import { runCli } from '../support/cli';
import { createThrowawayDb } from '../support/databases';
import { uniquePrefix } from '../worker/helpers/queue-harness';

const SECRET = '2Secr@3t';

describe('redactUrl', () => {
  it.each([
    ['postgres://user:2Secr@3t@host:5432/db?schema=s', 'postgres://user:***@host:5432/db?schema=s'],
    ['redis://:2Secr@3t@127.0.0.1:6379/0', 'redis://:***@127.0.0.1:6379/0'],
    ['mysql://root:a:b@c@host/db', 'mysql://root:***@host/db'],
    ['mssql://sa:p/ss@host/db', 'mssql://sa:***@host/db'],
    [
      'cannot open database "postgres://u:x@y@h/db" (ECONNREFUSED)',
      'cannot open database "postgres://u:***@h/db" (ECONNREFUSED)',
    ],
    ['redis://127.0.0.1:6379 and mysql://root@h/db', 'redis://127.0.0.1:6379 and mysql://root@h/db'],
  ])('%s', (input, expected) => {
    expect(redactUrl(input)).toBe(expected);
  });
});

describe('no password in CLI output, with a password holding an unencoded @', () => {
  const pgUrlWithPassword = (url: string) => url.replace('postgres://postgres@', `postgres://postgres:${SECRET}@`);

  it('migrate --json names the database without its password (PostgreSQL on trust auth ignores it)', async () => {
    const db = await createThrowawayDb('postgres');
    try {
      const result = await runCli(['migrate', '--json'], { DATABASE_URL: pgUrlWithPassword(db.url) });
      expect(result.code).toBe(0);
      expect(JSON.parse(result.stdout).database).toBe(pgUrlWithPassword(db.url).replace(SECRET, '***'));
      expect(result.stdout + result.stderr).not.toMatch(/3t@|2Secr/);
    } finally {
      await db.drop();
    }
  });

  it('worker and dlq stats, with the database or Redis unreachable, say where without the password', async () => {
    const worker = await runCli(['worker'], {
      DATABASE_URL: `postgres://postgres:${SECRET}@127.0.0.1:1/none`,
      HEALTH_PORT: 'off',
    });
    expect(worker.code).toBe(1);
    expect(worker.stderr).toContain('postgres://postgres:***@127.0.0.1:1/none');
    const stats = await runCli(['dlq', 'stats'], { REDIS_URL: `redis://:${SECRET}@127.0.0.1:1` });
    expect(stats.code).toBe(1);
    expect(stats.stderr).toContain('redis://:***@127.0.0.1:1');
    for (const r of [worker, stats]) expect(r.stdout + r.stderr).not.toMatch(/3t@|2Secr/);
  });

  it('DEBUG=ioredis:* at LOG_LEVEL=debug shows no auth password (nor any command argument)', async () => {
    // the shared Redis has no password: ioredis still sends AUTH, warns, and goes on
    const result = await runCli(['dlq', 'stats', '--json'], {
      REDIS_URL: `redis://:${encodeURIComponent(SECRET)}@127.0.0.1:6379`,
      QUEUE_PREFIX: uniquePrefix('redact'),
      DEBUG: 'ioredis:*',
      DEBUG_COLORS: 'no',
      LOG_LEVEL: 'debug',
    });
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/write command\[.*\]: \d+ -> (auth|hello)\(\[\d+ arguments? hidden\]\)/);
    expect(result.stdout + result.stderr).not.toMatch(/2Secr|3t/);
  });
});
