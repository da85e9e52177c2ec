import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';

/**
 * A PostgreSQL server of its own, for tests that stop the database for real: the shared server on
 * 5432 serves everyone's tests and must never be stopped. initdb into a temp dir, run as the
 * `postgres` OS user (we are root), on a free port.
 */
export interface PrivatePostgres {
  url: string;
  port: number;
  /** Simulates a crash: `pg_ctl stop -m immediate`. */
  stop(): void;
  start(): void;
  /** Stops it (if running) and deletes its files. */
  destroy(): void;
}

/** A PostgreSQL server program (initdb, pg_ctl) of the newest installed version. */
export function postgresBin(name: string): string {
  const root = '/usr/lib/postgresql';
  const versions = fs.existsSync(root) ? fs.readdirSync(root).sort((a, b) => Number(b) - Number(a)) : [];
  for (const v of versions) {
    const file = path.join(root, v, 'bin', name);
    if (fs.existsSync(file)) return file;
  }
  throw new Error(`${name} not found under ${root}: install the postgresql server package`);
}

/** Runs a server program as the `postgres` OS user when we are root (initdb refuses root). */
export function asPostgres(args: string[], timeoutMs = 60_000): void {
  const asRoot = process.getuid?.() === 0;
  const [cmd, ...rest] = asRoot ? ['runuser', '-u', 'postgres', '--', ...args] : args;
  execFileSync(cmd, rest, { stdio: 'pipe', timeout: timeoutMs });
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plan-ledger-pg-'));
  fs.chmodSync(dir, 0o777);
  if (process.getuid?.() === 0) execFileSync('chown', ['postgres', dir]);
  const data = path.join(dir, 'data');
  const port = await freePort();
  asPostgres([postgresBin('initdb'), '-D', data, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--no-sync']);
  const opts = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=50`;
  let running = false;
  const start = () => {
    asPostgres([postgresBin('pg_ctl'), '-D', data, '-o', opts, '-l', path.join(dir, 'log'), '-w', '-t', '60', 'start']);
    running = true;
  };
  const stop = () => {
    asPostgres([postgresBin('pg_ctl'), '-D', data, '-m', 'immediate', '-w', 'stop']);
    running = false;
  };
  start();
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    start,
    stop,
    destroy() {
      try {
        if (running) stop();
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
