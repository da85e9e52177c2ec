import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { runCli } from '../support/cli';
import { createThrowawayDb } from '../support/databases';
import { planRun } from '../support/event-factory';
import { freePort } from '../publisher/support/redis-process';
import { dropPrefix, openRedis, queuedEvents, REDIS_URL, uniquePrefix, waitFor } from '../worker/helpers/queue-harness';
import { INGEST_KEY } from './http-harness';

jest.setTimeout(90_000);

const BIN = path.join(__dirname, '..', '..', 'bin', 'plan-ledger.js');

describe('plan-ledger serve (the command)', () => {
  it('refuses to start without an API key, with one line and exit code 2', async () => {
    const r = await runCli(['serve'], { HTTP_INGEST_KEYS: '', HTTP_READ_KEYS: '', HTTP_PORT: '0' });
    expect(r.code).toBe(2);
    expect(r.stderr.trim()).toBe(
      'plan-ledger: invalid configuration: HTTP_INGEST_KEYS / HTTP_READ_KEYS / HTTP_ADMIN_KEYS / HTTP_APPROVE_KEYS: no API key is set; set at least one (every endpoint but /healthz and /metrics needs a key)',
    );
    const short = await runCli(['serve'], {
      HTTP_INGEST_KEYS: 'short',
      HTTP_PORT: 'x',
      HTTP_KEEP_ALIVE_TIMEOUT_MS: '0',
    });
    expect(short.stderr.trim()).toBe(
      'plan-ledger: invalid configuration: HTTP_PORT: "x" is not an integer; HTTP_INGEST_KEYS: 1 key(s) shorter than 16 characters; HTTP_KEEP_ALIVE_TIMEOUT_MS: 0 is outside 1-600000',
    );
    const proxy = await runCli(['serve'], {
      HTTP_INGEST_KEYS: 'ingest-key-long-enough-0001',
      HTTP_TRUST_PROXY: '10.0.0.0/8, 10.0.0.1/33,proxy.local',
    });
    expect({ code: proxy.code, stderr: proxy.stderr.trim() }).toEqual({
      code: 2,
      stderr:
        'plan-ledger: invalid configuration: HTTP_TRUST_PROXY: "10.0.0.1/33" is not an IP address, a CIDR range (e.g. 10.0.0.0/8) or one of loopback, linklocal, uniquelocal',
    });
  });

  it('serves on loopback, logs each request as JSON without the key, and on SIGTERM delivers what it accepted, then exits 0', async () => {
    const db = await createThrowawayDb('sqlite');
    const prefix = uniquePrefix('serve');
    const journal = fs.mkdtempSync(path.join(os.tmpdir(), 'plan-ledger-serve-'));
    const port = await freePort();
    const child = spawn(process.execPath, [BIN, 'serve'], {
      env: {
        ...process.env,
        PLAN_LEDGER_FROM_SOURCE: '1',
        LOG_LEVEL: 'info',
        DATABASE_URL: db.url,
        REDIS_URL,
        QUEUE_PREFIX: prefix,
        HTTP_PORT: String(port),
        HTTP_INGEST_KEYS: INGEST_KEY,
        HTTP_JOURNAL_DIR: journal,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const redis = openRedis();
    try {
      await waitFor('serve listening', () => out.includes('plan-ledger serve listening'), 60_000);
      expect(out).toContain(`"url":"http://127.0.0.1:${port}"`);
      const events = planRun({ seed: 31, steps: 2 });
      const res = await fetch(`http://127.0.0.1:${port}/v1/events`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${INGEST_KEY}` },
        body: JSON.stringify(events),
      });
      expect(res.status).toBe(202);
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      expect(err).toBe('');
      expect(await queuedEvents(redis, prefix)).toBe(events.length);
      const lines = out
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l));
      expect(lines.some((l) => l.req?.method === 'POST' && l.req?.url === '/v1/events')).toBe(true);
      expect(lines.find((l) => l.msg === 'serve stopped')).toMatchObject({ flushed: true });
      expect(out).not.toContain(INGEST_KEY);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
      await dropPrefix(redis, prefix);
      redis.disconnect();
      await db.drop();
      fs.rmSync(journal, { recursive: true, force: true });
    }
  });
});
