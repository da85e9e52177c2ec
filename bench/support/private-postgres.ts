/**
 * `--private-pg`: run a bench script against a PostgreSQL server of its own instead of the shared
 * one on 5432, so that WAL bytes (server-wide) are the benchmark's alone while other sessions run
 * their tests on the shared server. (The "postgres (all)" CPU figures still sum every postgres
 * process on the machine.) Same version, same default settings
 * (fsync and synchronous_commit on, shared_buffers 128 MB), data directory on the same disk
 * (under the OS temp dir), on a free port; removed afterwards.
 *
 * The script re-runs itself as a child with TEST_PG_URL pointing at that server (databases.ts
 * reads it when it loads), and exits with the child's code. `PRIVATE_PG_SETTINGS` (space-separated
 * `name=value`, e.g. `max_wal_size=32MB`) sets server parameters of that server for one run.
 */
import { execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { asPostgres, freePort, postgresBin } from '../../test/worker/helpers/private-postgres';

/** initdb and pg_ctl may take longer on a loaded machine than a test allows. */
const asPostgresSlow = (args: string[]) => asPostgres(args, 120_000);

/** `-c name=value` for each setting of PRIVATE_PG_SETTINGS; a malformed one stops the run. */
function extraSettings(): string {
  const raw = (process.env.PRIVATE_PG_SETTINGS ?? '').trim();
  if (raw === '') return '';
  return raw
    .split(/\s+/)
    .map((setting) => {
      if (!/^[a-z_]+=[A-Za-z0-9_.]+$/.test(setting))
        throw new Error(`PRIVATE_PG_SETTINGS: "${setting}" is not name=value (e.g. max_wal_size=32MB)`);
      return ` -c ${setting}`;
    })
    .join('');
}

async function startServer(): Promise<{ url: string; destroy(): void }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plan-ledger-bench-pg-'));
  fs.chmodSync(dir, 0o777);
  if (process.getuid?.() === 0) execFileSync('chown', ['postgres', dir]);
  const data = path.join(dir, 'data');
  const port = await freePort();
  asPostgresSlow([postgresBin('initdb'), '-D', data, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--no-sync']);
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=100${extraSettings()}`;
  asPostgresSlow([
    postgresBin('pg_ctl'),
    '-D',
    data,
    '-o',
    options,
    '-l',
    path.join(dir, 'log'),
    '-w',
    '-t',
    '60',
    'start',
  ]);
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    destroy() {
      try {
        asPostgresSlow([postgresBin('pg_ctl'), '-D', data, '-m', 'fast', '-w', 'stop']);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

/** Starts the server, runs this script again without `--private-pg` against it, and exits with its code. */
export async function rerunOnPrivatePostgres(): Promise<never> {
  const server = await startServer();
  process.stderr.write(`private PostgreSQL at ${server.url}\n`);
  const args = process.argv.slice(2).filter((a) => a !== '--private-pg');
  let code: number;
  try {
    const child = spawn(process.execPath, [...process.execArgv, process.argv[1], ...args], {
      stdio: 'inherit',
      env: { ...process.env, TEST_PG_URL: server.url, BENCH_PRIVATE_PG: '1' },
    });
    const stop = () => child.kill('SIGTERM');
    process.once('SIGINT', stop).once('SIGTERM', stop);
    code = await new Promise<number>((resolve) => child.once('exit', (c, signal) => resolve(c ?? (signal ? 1 : 0))));
  } finally {
    server.destroy();
  }
  process.exit(code);
}

/** Which PostgreSQL server this run used, for the JSON output. */
export function postgresServer(): string {
  return process.env.BENCH_PRIVATE_PG
    ? 'private (--private-pg): this run alone on it'
    : `shared (${process.env.TEST_PG_URL ? 'TEST_PG_URL' : '127.0.0.1:5432'}): other sessions may write meanwhile`;
}
