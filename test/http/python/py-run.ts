import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import * as path from 'node:path';
import type { ApiStack } from '../http-harness';
import { ADMIN_KEY, INGEST_KEY, READ_KEY } from '../http-harness';

export const ROOT = path.join(__dirname, '..', '..', '..');
export const DRIVER = path.join(__dirname, 'driver.py');

export interface PyRun {
  child: ChildProcess;
  /** The JSON lines printed so far. */
  lines(): Record<string, unknown>[];
  stderr(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>;
}

/**
 * A python3 that builds clients/python offline (pip, setuptools >= 61 and wheel, for --no-build-isolation):
 * python3 on PATH when it has them, else Debian's /usr/bin/python3 (python3-pip, python3-setuptools, python3-wheel).
 */
export function buildPython(): string {
  const probe = 'import setuptools, wheel, pip; assert int(setuptools.__version__.split(".")[0]) >= 61';
  const found = ['python3', '/usr/bin/python3'].find(
    (exe) => spawnSync(exe, ['-c', probe], { stdio: 'ignore' }).status === 0,
  );
  if (!found) {
    throw new Error(
      'no python3 with pip, setuptools >= 61 and wheel: apt-get install python3-pip python3-setuptools python3-wheel',
    );
  }
  return found;
}

/** python3 (or `exe`) with `args`, from the repository root; the ingest, read and admin keys in its environment. */
export function python(args: string[], key = INGEST_KEY, exe = 'python3'): PyRun {
  const child = spawn(exe, args, {
    cwd: ROOT,
    env: {
      ...process.env,
      PLAN_LEDGER_INGEST_KEY: key,
      PLAN_LEDGER_READ_KEY: READ_KEY,
      PLAN_LEDGER_ADMIN_KEY: ADMIN_KEY,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (err += d));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>((resolve) =>
    child.on('close', (code, signal) => resolve({ code, signal, stderr: err })),
  );
  // complete lines only: the last piece may still be on its way
  const lines = () =>
    out
      .split('\n')
      .slice(0, -1)
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  return { child, lines, stderr: () => err, exited };
}

/** The driver (test/http/python/driver.py) in `mode`. */
export function driver(mode: string, ...args: (string | number)[]): PyRun {
  return python([DRIVER, mode, ...args.map(String)]);
}

/** Resolves with the first JSON line that `match` accepts. */
export async function lineWhere(
  run: PyRun,
  match: (line: Record<string, unknown>) => boolean,
  timeoutMs = 60_000,
): Promise<Record<string, unknown>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = run.lines().find(match);
    if (found) return found;
    if (run.child.exitCode !== null || run.child.signalCode !== null)
      throw new Error(
        `python exited (${run.child.exitCode ?? run.child.signalCode}) before the line: ${run.stderr().slice(-2000)}`,
      );
    if (Date.now() > deadline) throw new Error(`timed out waiting for a line; stderr: ${run.stderr().slice(-2000)}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

export function kill(run: PyRun): void {
  if (run.child.exitCode === null && run.child.signalCode === null) run.child.kill('SIGKILL');
}

export async function eventCounts(stack: ApiStack, like: string): Promise<{ rows: number; distinct: number }> {
  const [row] = await stack.db.ds.query(
    `SELECT COUNT(*) AS n, COUNT(DISTINCT event_id) AS d FROM plan_events WHERE plan_id LIKE '${like}' AND type <> 'seq.voided'`,
  );
  return { rows: Number(row.n), distinct: Number(row.d) };
}

/** The stored seqs of one plan, ascending (voided seqs left out). */
export async function storedSeqs(stack: ApiStack, planId: string): Promise<number[]> {
  const rows = await stack.db.ds.query(
    `SELECT seq FROM plan_events WHERE plan_id = '${planId}' AND type <> 'seq.voided' ORDER BY seq`,
  );
  return rows.map((r: { seq: unknown }) => Number(r.seq));
}
