/**
 * A Redis Cluster of our own: three masters (no replicas) on free loopback ports in a temporary
 * directory, created with `redis-cli --cluster create`, plus moving one slot between masters while
 * clients use it (what `redis-cli --cluster reshard` does, for one chosen slot). The shared server
 * on 6379 is never touched; destroy() kills every process it started and removes the directory.
 */
import { ChildProcess, execFile, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import IORedis from 'ioredis';
import { freePort } from '../publisher/support/redis-process';

const run = promisify(execFile);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const started = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of started) child.kill('SIGKILL');
});

export interface RedisClusterOptions {
  /**
   * Persist every write (appendonly; a SIGTERM makes the server write what it holds before it exits), so
   * that a master restarted with restartMaster() comes back with its keys. @defaultValue false (no persistence)
   */
  durable?: boolean;
}

export class RedisCluster {
  /** The arguments each server was started with, by port, to start it again. */
  private readonly args = new Map<number, string[]>();

  private constructor(
    readonly dir: string,
    readonly ports: number[],
    private readonly children: ChildProcess[],
  ) {}

  private spawnServer(port: number): ChildProcess {
    const child = spawn('redis-server', this.args.get(port)!, { stdio: 'ignore' });
    started.add(child);
    child.once('exit', () => started.delete(child));
    return child;
  }

  /** Starts one node on new ports; undefined when its server exited at once (a port was taken). */
  private async startNode(options: RedisClusterOptions): Promise<number | undefined> {
    const port = await freePort();
    const busPort = await freePort();
    this.args.set(port, [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--cluster-enabled',
      'yes',
      '--cluster-port',
      String(busPort),
      '--cluster-config-file',
      `nodes-${port}.conf`,
      '--cluster-node-timeout',
      '5000',
      '--save',
      '',
      ...(options.durable
        ? [
            '--appendonly',
            'yes',
            '--appendfsync',
            'everysec',
            '--appendfilename',
            `appendonly-${port}.aof`,
            '--appenddirname',
            `aof-${port}`,
          ]
        : ['--appendonly', 'no']),
      '--dir',
      this.dir,
      '--maxmemory-policy',
      'noeviction',
      '--logfile',
      `redis-${port}.log`,
    ]);
    const child = this.spawnServer(port);
    const exited = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), 1_000);
      child.once('exit', () => {
        clearTimeout(timer);
        resolve(true);
      });
    });
    if (exited) return undefined;
    this.children.push(child);
    return port;
  }

  /** `127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3`: what REDIS_CLUSTER_NODES takes. */
  get nodes(): string {
    return this.ports.map((p) => `127.0.0.1:${p}`).join(',');
  }

  static async start(masters = 3, options: RedisClusterOptions = {}): Promise<RedisCluster> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plan-ledger-cluster-'));
    const ports: number[] = [];
    const children: ChildProcess[] = [];
    const cluster = new RedisCluster(dir, ports, children);
    try {
      for (let i = 0; i < masters; i++) {
        // a port found free can be taken by another process before redis-server binds it (on a
        // busy machine, by an outgoing connection): a server that exits at once gets new ports
        for (let attempt = 1; ; attempt++) {
          const port = await cluster.startNode(options);
          if (port !== undefined) {
            ports.push(port);
            break;
          }
          if (attempt === 5) throw new Error('redis-server exited at start 5 times (ports taken?)');
        }
      }
      for (const port of ports) await cluster.waitFor(port, async (r) => (await r.ping()) === 'PONG', 'answer PING');
      for (const port of ports) await cluster.waitFor(port, async (r) => (await r.ping()) === 'PONG', 'answer PING');
      await run(
        'redis-cli',
        ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes'],
        { timeout: 30_000 },
      );
      for (const port of ports)
        await cluster.waitFor(
          port,
          async (r) => /cluster_state:ok/.test((await r.cluster('INFO')) as string),
          'report cluster_state:ok',
        );
      return cluster;
    } catch (err) {
      await cluster.destroy();
      throw err;
    }
  }

  private admin(port: number): IORedis {
    return new IORedis({
      port,
      host: '127.0.0.1',
      maxRetriesPerRequest: 1,
      lazyConnect: false,
      retryStrategy: () => null,
    });
  }

  private async waitFor(
    port: number,
    check: (r: IORedis) => Promise<boolean>,
    what: string,
    timeoutMs = 20_000,
  ): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const r = this.admin(port);
      r.on('error', () => undefined);
      const ok = await check(r).catch(() => false);
      r.disconnect();
      if (ok) return;
      if (Date.now() > deadline)
        throw new Error(`redis-server on port ${port} did not ${what} within ${timeoutMs} ms (logs in ${this.dir})`);
      await sleep(100);
    }
  }

  private async withAdmin<T>(port: number, fn: (r: IORedis) => Promise<T>): Promise<T> {
    const r = this.admin(port);
    r.on('error', () => undefined);
    try {
      return await fn(r);
    } finally {
      r.disconnect();
    }
  }

  /** The slot of a key (`{tag}` rules included), as the cluster computes it. */
  keySlot(key: string): Promise<number> {
    return this.withAdmin(this.ports[0], async (r) => Number(await r.cluster('KEYSLOT', key)));
  }

  /** Port of the master serving `slot`, as node `askPort` sees it. */
  async ownerOf(slot: number, askPort = this.ports[0]): Promise<number> {
    const slots = await this.withAdmin(askPort, (r) => r.cluster('SLOTS'));
    const range = slots.find(([from, to]) => slot >= from && slot <= to);
    if (!range) throw new Error(`slot ${slot} is not served`);
    return range[2][1];
  }

  /**
   * Moves `slot` to the master on `toPort` while clients keep using it: IMPORTING/MIGRATING,
   * MIGRATE of its keys in batches until none is left, then SETSLOT NODE on every master.
   * Meanwhile clients get ASK and TRYAGAIN; afterwards MOVED. Returns the keys moved.
   */
  async moveSlot(slot: number, toPort: number): Promise<number> {
    const fromPort = await this.ownerOf(slot);
    if (fromPort === toPort) throw new Error(`slot ${slot} is already on ${toPort}`);
    const fromId = await this.withAdmin(fromPort, (r) => r.cluster('MYID') as Promise<string>);
    const toId = await this.withAdmin(toPort, (r) => r.cluster('MYID') as Promise<string>);
    const source = this.admin(fromPort);
    const target = this.admin(toPort);
    source.on('error', () => undefined);
    target.on('error', () => undefined);
    let moved = 0;
    try {
      await target.cluster('SETSLOT', slot, 'IMPORTING', fromId);
      await source.cluster('SETSLOT', slot, 'MIGRATING', toId);
      for (;;) {
        const keys = (await source.cluster('GETKEYSINSLOT', slot, 200)) as string[];
        if (keys.length === 0) break;
        await source.call('MIGRATE', '127.0.0.1', String(toPort), '', '0', '10000', 'KEYS', ...keys);
        moved += keys.length;
      }
      // the new owner first, then the old one (which stops redirecting with ASK), then the others
      await target.cluster('SETSLOT', slot, 'NODE', toId);
      await source.cluster('SETSLOT', slot, 'NODE', toId);
      for (const port of this.ports.filter((p) => p !== fromPort && p !== toPort)) {
        await this.withAdmin(port, (r) => r.cluster('SETSLOT', slot, 'NODE', toId));
      }
    } finally {
      source.disconnect();
      target.disconnect();
    }
    return moved;
  }

  /**
   * Stops the master on `port` (SIGTERM: it writes what it holds and exits), waits `downMs`, and
   * starts it again on the same port, cluster config and data; resolves once the cluster reports
   * cluster_state:ok again. Only a durable cluster (RedisClusterOptions) keeps the master's keys.
   */
  async restartMaster(port: number, downMs = 500): Promise<void> {
    const i = this.ports.indexOf(port);
    if (i < 0) throw new Error(`no master on port ${port}`);
    const child = this.children[i];
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
    await sleep(downMs);
    this.children[i] = this.spawnServer(port);
    for (const p of this.ports)
      await this.waitFor(
        p,
        async (r) => /cluster_state:ok/.test((await r.cluster('INFO')) as string),
        'report cluster_state:ok',
      );
  }

  /** Kills every server and removes the directory. */
  async destroy(): Promise<void> {
    await Promise.all(
      this.children.map(async (child) => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGKILL');
        await exited;
      }),
    );
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}
