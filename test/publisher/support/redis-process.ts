/**
 * A redis-server of our own on a free port, which tests and the publish benchmark stop, kill and
 * restart at will (the shared server on 6379 is never touched). No RDB snapshots; AOF with
 * `appendfsync always` when asked, so a SIGKILL loses nothing Redis acknowledged.
 */
import { ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';

export interface RedisProcessOptions {
  /** Keep acknowledged writes across a kill (AOF, fsync on every write). @defaultValue false */
  durable?: boolean;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** Sends PING on a raw socket: true on +PONG (not while -LOADING an AOF). */
function ping(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => done(false));
    socket.on('error', () => done(false));
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (d) => done(d.toString().startsWith('+PONG')));
  });
}

const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

export class RedisProcess {
  private child: ChildProcess | undefined;
  readonly dir: string;

  private constructor(
    readonly port: number,
    private readonly options: RedisProcessOptions,
  ) {
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plan-ledger-redis-'));
  }

  /** A server on a free port, not started yet (a publisher can be created against it first). */
  static async create(options: RedisProcessOptions = {}): Promise<RedisProcess> {
    return new RedisProcess(await freePort(), options);
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  get isRunning(): boolean {
    return this.child !== undefined;
  }

  async start(): Promise<void> {
    if (this.child) return;
    const persistence = this.options.durable
      ? ['--appendonly', 'yes', '--appendfsync', 'always']
      : ['--appendonly', 'no'];
    const child = spawn(
      'redis-server',
      [
        '--port',
        String(this.port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        ...persistence,
        '--dir',
        this.dir,
        '--maxmemory-policy',
        'noeviction',
        '--enable-debug-command',
        'local',
      ],
      { stdio: 'ignore' },
    );
    this.child = child;
    running.add(child);
    child.once('exit', () => running.delete(child));
    const deadline = Date.now() + 10_000;
    while (!(await ping(this.port))) {
      if (child.exitCode !== null) throw new Error(`redis-server on port ${this.port} exited with ${child.exitCode}`);
      if (Date.now() > deadline) throw new Error(`redis-server on port ${this.port} did not answer PING within 10 s`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  /** SIGTERM (a clean shutdown) or SIGKILL (a crash), and waits until the process is gone. */
  async stop(signal: 'SIGTERM' | 'SIGKILL' = 'SIGTERM'): Promise<void> {
    const child = this.child;
    if (!child) return;
    this.child = undefined;
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill(signal);
      await exited;
    }
  }

  kill(): Promise<void> {
    return this.stop('SIGKILL');
  }

  /** Stops the server and removes its data directory. */
  async destroy(): Promise<void> {
    await this.kill();
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}
