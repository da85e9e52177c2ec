/**
 * Child processes of `npm run bench:e2e`: the real `plan-ledger worker` (from the sources), the
 * plain-BullMQ baseline worker, and what we read from them (commit log lines, RSS, CPU profile).
 */
import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const ROOT = path.join(__dirname, '..', '..');
const BIN = path.join(ROOT, 'bin', 'plan-ledger.js');

/**
 * The worker is measured as it runs in production: compiled JavaScript (tsx from the sources adds
 * ~35 MB of RSS and compile time). Builds into a temp dir, leaving dist/ alone; returns the script
 * to run (`main` undefined: run from the sources).
 */
export function compileWorker(): { main?: string; dir: string; note: string } {
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'plan-ledger-e2e-build-'));
  try {
    execFileSync(
      process.execPath,
      [
        path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'),
        '-p',
        path.join(ROOT, 'tsconfig.build.json'),
        '--outDir',
        out,
      ],
      { stdio: 'pipe', cwd: ROOT },
    );
  } catch {
    // type errors elsewhere in the tree still emit JavaScript; only a missing entry point is fatal
  }
  const main = path.join(out, 'src', 'cli', 'main.js');
  if (!fs.existsSync(main)) return { dir: out, note: 'tsc emitted no build; the worker runs from the sources (tsx)' };
  execFileSync(process.execPath, [path.join(ROOT, 'scripts', 'copy-lua.js'), out], { stdio: 'pipe', cwd: ROOT });
  fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(out, 'node_modules'));
  fs.copyFileSync(path.join(ROOT, 'package.json'), path.join(out, 'package.json'));
  fs.writeFileSync(path.join(out, 'run-cli.js'), `require(${JSON.stringify(main)}).main(process.argv);\n`);
  return {
    main: path.join(out, 'run-cli.js'),
    dir: out,
    note: 'worker compiled with tsc (tsconfig.build.json) into a temp dir, run with node',
  };
}

export interface Child {
  child: ChildProcess;
  pid: number;
  /** Parsed JSON lines printed on stdout so far. */
  lines: Record<string, unknown>[];
  exited: Promise<number | string>;
  waitFor(
    pred: (line: Record<string, unknown>) => boolean,
    timeoutMs: number,
    what: string,
  ): Promise<Record<string, unknown>>;
  stop(signal?: NodeJS.Signals): Promise<number | string>;
  stderr(): string;
}

function track(child: ChildProcess): Child {
  const lines: Record<string, unknown>[] = [];
  const waiters: { pred: (l: Record<string, unknown>) => boolean; resolve: (l: Record<string, unknown>) => void }[] =
    [];
  let buffer = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => {
    buffer += d.toString();
    let nl: number;
    while ((nl = buffer.indexOf('\n')) >= 0) {
      const text = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      if (!text.startsWith('{')) continue;
      try {
        const line = JSON.parse(text) as Record<string, unknown>;
        lines.push(line);
        for (const w of waiters.filter((w) => w.pred(line))) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(line);
        }
      } catch {
        // a partial or foreign line: ignore
      }
    }
  });
  child.stderr!.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-4000)));
  const exited = new Promise<number | string>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')),
  );
  return {
    child,
    pid: child.pid!,
    lines,
    exited,
    stderr: () => err,
    waitFor(pred, timeoutMs, what) {
      const found = lines.find(pred);
      if (found) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`${what}: not seen within ${timeoutMs} ms; stderr: ${err}`)),
          timeoutMs,
        );
        waiters.push({ pred, resolve: (l) => (clearTimeout(timer), resolve(l)) });
        void exited.then((code) => reject(new Error(`${what}: process exited (${code}) first; stderr: ${err}`)));
      });
    },
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

export interface WorkerChildOptions {
  env: Record<string, string>;
  /** Compiled CLI script from compileWorker(). @defaultValue bin/plan-ledger.js from the sources */
  main?: string;
  /** Directory for a V8 CPU profile of the worker (`--cpu-prof`). */
  cpuProfileDir?: string;
}

/** `plan-ledger worker` as a child process; resolves once it logged "worker started". */
export async function startWorkerChild(options: WorkerChildOptions): Promise<Child> {
  const nodeArgs = options.cpuProfileDir ? ['--cpu-prof', `--cpu-prof-dir=${options.cpuProfileDir}`] : [];
  const child = spawn(process.execPath, [...nodeArgs, options.main ?? BIN, 'worker'], {
    env: { ...process.env, LOG_LEVEL: 'info', HEALTH_PORT: 'off', ...options.env, PLAN_LEDGER_FROM_SOURCE: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const c = track(child);
  await c.waitFor((l) => l.msg === 'worker started', 60_000, 'worker start');
  return c;
}

/** The plain-BullMQ baseline worker (one INSERT per job) as a child process. */
export async function startBaselineChild(env: Record<string, string>): Promise<Child> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(__dirname, 'e2e-baseline-worker.ts')], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    cwd: ROOT,
  });
  const c = track(child);
  await c.waitFor((l) => l.msg === 'ready', 60_000, 'baseline worker start');
  return c;
}

/** Resident set size of a process, from /proc (Linux). */
export function rssBytes(pid: number): number {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = /VmRSS:\s+(\d+) kB/.exec(status);
    return kb ? Number(kb[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** Samples a process's RSS every `everyMs` until stopped; returns the peak and the last value. */
export function sampleRss(
  pid: number,
  everyMs = 200,
): { stop(): { peakBytes: number; lastBytes: number; samples: number } } {
  let peak = 0;
  let last = 0;
  let samples = 0;
  const timer = setInterval(() => {
    last = rssBytes(pid) || last;
    peak = Math.max(peak, last);
    samples++;
  }, everyMs);
  return {
    stop() {
      clearInterval(timer);
      return { peakBytes: peak, lastBytes: last, samples };
    },
  };
}

/**
 * Waits until the `batch committed` lines of `workers` add up to `total` inserted events; returns
 * the time (ms, from the log line) of the last commit and the number of transactions.
 */
export async function waitCommitted(
  workers: Child[],
  total: number,
  timeoutMs: number,
): Promise<{
  lastCommitAt: number;
  inserted: number;
  batches: number;
  jobs: number;
  gapWaits: number;
  rebuilt: number;
}> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    let inserted = 0;
    let batches = 0;
    const jobIds = new Set<unknown>();
    let last = 0;
    let gapWaits = 0;
    let rebuilt = 0;
    for (const w of workers) {
      for (const l of w.lines) {
        if (l.msg !== 'batch committed') continue;
        inserted += l.inserted as number;
        // a job split over transactions (WORKER_TRANSACTIONS lanes) is named in each of them
        for (const id of (l.jobIds as unknown[] | undefined) ?? []) jobIds.add(id);
        gapWaits += Number(l.gapWaits ?? 0);
        rebuilt += Number(l.rebuilt ?? 0);
        batches++;
        last = Math.max(last, Date.parse(l.time as string));
      }
    }
    if (inserted >= total) return { lastCommitAt: last, inserted, batches, jobs: jobIds.size, gapWaits, rebuilt };
    if (Date.now() > until)
      throw new Error(
        `${inserted} of ${total} events committed after ${timeoutMs} ms; stderr: ${workers.map((w) => w.stderr()).join(' | ')}`,
      );
    for (const w of workers)
      if (w.child.exitCode !== null) throw new Error(`a worker exited (${w.child.exitCode}); stderr: ${w.stderr()}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export interface ProfileSummary {
  file: string;
  totalMs: number;
  /** Self time by area (our code, bullmq, typeorm, pg driver, class-validator, GC, idle...). */
  byArea: { area: string; pct: number }[];
  /** Functions with the most self time. */
  top: { fn: string; where: string; pct: number }[];
}

interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; hitCount?: number }[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

function areaOf(url: string, fn: string): string {
  if (fn === '(idle)') return 'idle (waiting for Redis/DB)';
  if (fn === '(garbage collector)') return 'garbage collector';
  if (fn === '(program)') return 'V8/native (program)';
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (m) return m[1];
  if (url.includes('/src/')) return `plan-ledger ${/\/src\/([^/]+)/.exec(url)![1]}/`;
  if (url.startsWith('node:')) return 'node core';
  return url ? 'other' : 'native';
}

/** Reads the newest .cpuprofile in `dir` and summarises where the worker's CPU went. */
export function summariseProfile(dir: string): ProfileSummary | undefined {
  const files = fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.cpuprofile'))
    .map((f) => path.join(dir, f));
  if (files.length === 0) return undefined;
  const file = files.sort((a, b) => fs.statSync(b).mtimeMs - fs.statSync(a).mtimeMs)[0];
  const profile = JSON.parse(fs.readFileSync(file, 'utf8')) as CpuProfile;
  const self = new Map<number, number>();
  profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const total = [...self.values()].reduce((a, b) => a + b, 0) || 1;
  const areas = new Map<string, number>();
  const fns = new Map<string, number>();
  for (const node of profile.nodes) {
    const t = self.get(node.id) ?? 0;
    if (!t) continue;
    const { functionName, url, lineNumber } = node.callFrame;
    const area = areaOf(url, functionName);
    areas.set(area, (areas.get(area) ?? 0) + t);
    const key = `${functionName || '(anonymous)'}\t${url.replace(/^.*node_modules\//, '').replace(ROOT, '')}:${lineNumber + 1}`;
    fns.set(key, (fns.get(key) ?? 0) + t);
  }
  const pct = (t: number) => Math.round((t / total) * 1000) / 10;
  return {
    file: path.relative(ROOT, file),
    totalMs: Math.round(total / 1000),
    byArea: [...areas]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 12)
      .map(([area, t]) => ({ area, pct: pct(t) })),
    top: [...fns]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 15)
      .map(([k, t]) => ({ fn: k.split('\t')[0], where: k.split('\t')[1], pct: pct(t) })),
  };
}

/** CPU seconds (user + system) a process has used, from /proc/<pid>/stat. */
export function cpuSeconds(pid: number): number {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  } catch {
    return 0;
  }
}
const CLOCK_TICKS = 100;

/** Pids whose command name is `comm` (e.g. every `postgres` backend), or whose command line contains `cmdlinePart`. */
export function pidsOf(comm: string, cmdlinePart?: string): number[] {
  const pids: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (fs.readFileSync(`/proc/${entry}/comm`, 'utf8').trim() !== comm) continue;
      if (cmdlinePart && !fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(cmdlinePart)) continue;
      pids.push(Number(entry));
    } catch {
      // the process ended meanwhile
    }
  }
  return pids;
}

/**
 * CPU used by each party of a run between start() and stop(): the worker process, this process
 * (the publisher), our redis-server, and every postgres process (the server is shared: other
 * sessions' work counts too, which is why the figure is labelled "postgres (all)").
 */
export class CpuMeter {
  private readonly start: Record<string, number>;
  private readonly startedAt = Date.now();

  constructor(private readonly parties: { workers: number[]; redisPort?: number | number[] }) {
    this.start = this.read();
  }

  private read(): Record<string, number> {
    const sum = (pids: number[]) => pids.reduce((n, pid) => n + cpuSeconds(pid), 0);
    const own = process.cpuUsage();
    const ports = [this.parties.redisPort ?? []].flat();
    // a cluster's masters one by one too (`redis:<port>`), for the busiest one's share
    const perMaster =
      ports.length > 1
        ? Object.fromEntries(ports.map((port) => [`redis:${port}`, sum(pidsOf('redis-server', String(port)))]))
        : {};
    return {
      ...perMaster,
      worker: sum(this.parties.workers),
      publisher: (own.user + own.system) / 1e6,
      // a cluster's servers count together
      redis: [this.parties.redisPort ?? []]
        .flat()
        .reduce((n, port) => n + sum(pidsOf('redis-server', String(port))), 0),
      'postgres (all)': sum(pidsOf('postgres')),
    };
  }

  /** CPU microseconds per event by party, and the cores the run kept busy. */
  stop(events: number): { usPerEvent: Record<string, number>; busyCores: number } {
    const end = this.read();
    const usPerEvent: Record<string, number> = {};
    let total = 0;
    for (const key of Object.keys(end)) {
      const used = Math.max(0, end[key] - this.start[key]);
      if (!key.startsWith('redis:')) total += used; // counted in `redis` too
      usPerEvent[key] = Math.round((used * 1e6) / events);
    }
    usPerEvent.total = Math.round((total * 1e6) / events);
    return { usPerEvent, busyCores: Math.round((total / ((Date.now() - this.startedAt) / 1000)) * 100) / 100 };
  }
}

export function tempDir(tag: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), `plan-ledger-e2e-${tag}-`));
}
