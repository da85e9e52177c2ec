import { ChildProcess, spawn } from 'node:child_process';
import * as path from 'node:path';
import { waitFor } from '../worker/helpers/queue-harness';
import { INGEST_KEY, READ_KEY } from './http-harness';

const BIN = path.join(__dirname, '..', '..', 'bin', 'plan-ledger.js');

/**
 * `plan-ledger serve` as a process of its own, on a fixed port, so a test can kill it (-9) and
 * start it again on the same port, database, queue prefix and journal.
 */
export class ServeProcess {
  private child: ChildProcess | undefined;
  private out = '';
  private err = '';

  constructor(
    readonly port: number,
    private readonly env: Record<string, string>,
  ) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Starts it and waits until it listens (from source, on a loaded machine, that can take a minute or more). */
  async start(): Promise<void> {
    this.out = '';
    this.err = '';
    const child = spawn(process.execPath, [BIN, 'serve'], {
      env: {
        ...process.env,
        PLAN_LEDGER_FROM_SOURCE: '1',
        LOG_LEVEL: 'warn',
        HTTP_PORT: String(this.port),
        HTTP_INGEST_KEYS: INGEST_KEY,
        HTTP_READ_KEYS: READ_KEY,
        ...this.env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    child.stdout!.on('data', (d) => (this.out += d));
    child.stderr!.on('data', (d) => (this.err += d));
    await waitFor(
      'serve answering /healthz',
      async () => {
        if (child.exitCode !== null) throw new Error(`serve exited ${child.exitCode}: ${this.err.slice(-2000)}`);
        try {
          return (await fetch(`${this.url}/healthz`)).ok;
        } catch {
          return false;
        }
      },
      180_000,
    );
  }

  /** kill -9, and waits until the process is gone. */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const gone = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await gone;
  }

  /** SIGTERM, and waits for the exit code. */
  async stop(): Promise<number | null> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return child?.exitCode ?? null;
    const gone = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    return gone;
  }

  stderr(): string {
    return this.err;
  }
}
