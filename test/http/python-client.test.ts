import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { freePort } from '../publisher/support/redis-process';
import { waitFor } from '../worker/helpers/queue-harness';
import { ApiStack, startApiStack } from './http-harness';
import { buildPython, DRIVER, eventCounts, python, ROOT, storedSeqs } from './python/py-run';

jest.setTimeout(120_000);

function importFrom(target: string): Promise<string[]> {
  const check = spawn(
    'python3',
    [
      '-c',
      'import os, plan_ledger; print(plan_ledger.__file__); print(plan_ledger.__version__); print(os.path.exists(os.path.join(os.path.dirname(plan_ledger.__file__), "py.typed")))',
    ],
    { cwd: os.tmpdir(), env: { ...process.env, PYTHONPATH: target } },
  );
  let out = '';
  check.stdout.on('data', (d) => (out += d));
  return new Promise((resolve) => check.on('close', () => resolve(out.trim().split('\n'))));
}

describe('the Python client (clients/python) against a real plan-ledger serve, Redis and worker', () => {
  const dirs: string[] = [];
  const tmp = () => {
    const d = fs.mkdtempSync(path.join(os.tmpdir(), 'plan-ledger-pyc-'));
    dirs.push(d);
    return d;
  };
  afterAll(() => {
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  });

  it('passes its own unit tests (python3 -m unittest)', async () => {
    const run = python(['-m', 'unittest', 'discover', '-s', 'clients/python/tests']);
    const { code, stderr } = await run.exited;
    expect({ code, tail: stderr.split('\n').slice(-4).join('\n') }).toEqual({
      code: 0,
      tail: expect.stringContaining('OK'),
    });
  });

  /** A copy of clients/python without what a build leaves behind. */
  const clientCopy = () => {
    const src = tmp();
    fs.cpSync(path.join(ROOT, 'clients', 'python'), src, {
      recursive: true,
      filter: (f) => !/__pycache__|egg-info|[\\/]build$/.test(f),
    });
    return src;
  };
  /** `pip <command> args`, quiet and without dependencies, in `exe`. */
  const pip = (command: string, args: string[], exe = 'python3') =>
    python(['-m', 'pip', command, '--quiet', '--disable-pip-version-check', '--no-deps', ...args], undefined, exe);

  it('installs with pip offline (pip install --no-build-isolation ./clients/python) and imports from the install', async () => {
    const src = clientCopy();
    const target = tmp();
    const install = pip('install', ['--no-build-isolation', '--target', target, src], buildPython());
    expect((await install.exited).code).toBe(0);
    expect(await importFrom(target)).toEqual([path.join(target, 'plan_ledger', '__init__.py'), '0.2.0', 'True']);
  });

  it('builds a wheel offline with setuptools (pip wheel --no-build-isolation), which installs and imports', async () => {
    const src = clientCopy();
    const dist = tmp();
    const build = pip('wheel', ['--no-build-isolation', '-w', dist, src], buildPython());
    expect((await build.exited).code).toBe(0);
    expect(fs.readdirSync(dist)).toEqual(['plan_ledger_client-0.2.0-py3-none-any.whl']);
    const target = tmp();
    const wheel = path.join(dist, 'plan_ledger_client-0.2.0-py3-none-any.whl');
    const install = pip('install', ['--no-index', '--target', target, wheel]);
    expect((await install.exited).code).toBe(0);
    expect(await importFrom(target)).toEqual([path.join(target, 'plan_ledger', '__init__.py'), '0.2.0', 'True']);
    expect(fs.readdirSync(target).sort()).toEqual(['plan_ledger', 'plan_ledger_client-0.2.0.dist-info']);
    // built by setuptools' standard backend (its bdist_wheel), not by code of this repository
    const wheelInfo = fs.readFileSync(path.join(target, 'plan_ledger_client-0.2.0.dist-info', 'WHEEL'), 'utf8');
    expect(wheelInfo).toMatch(/^Generator: bdist_wheel /m);
  });

  it('a publisher killed while the server is down delivers its journal exactly once when started again', async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const journal = tmp();
    const first = python([DRIVER, 'journal', url, journal, '500']);
    let stack: ApiStack | undefined;
    try {
      await waitFor('the events journaled', () => first.lines().some((l) => l.journaled === 500), 60_000);
      first.child.kill('SIGKILL');
      await first.exited;
      stack = await startApiStack('postgres', { env: { HTTP_PORT: String(port) } });
      const second = python([DRIVER, 'drain', url, journal]);
      const { code, stderr } = await second.exited;
      expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
      expect(second.lines()[0]).toEqual({ flushed: true, accepted: 500, rejected: 0, dropped: 0 });
      await waitFor('500 events stored', async () => (await eventCounts(stack!, 'jplan-%')).rows >= 500, 60_000);
      expect(await stack.worker!.idle(30_000)).toBe(true);
      expect(await eventCounts(stack, 'jplan-%')).toEqual({ rows: 500, distinct: 500 });
      // a third start finds nothing left to send
      const third = python([DRIVER, 'drain', url, journal]);
      await third.exited;
      expect(third.lines()[0]).toEqual({ flushed: true, accepted: 0, rejected: 0, dropped: 0 });
    } finally {
      if (first.child.exitCode === null && first.child.signalCode === null) first.child.kill('SIGKILL');
      await stack?.close();
    }
  });

  it('keeps events refused for a wrong key in the journal (never drops them) and delivers them once the key is fixed', async () => {
    const stack = await startApiStack('sqlite');
    const journal = tmp();
    const wrong = python([DRIVER, 'journal', stack.server.url, journal, '100'], 'a-wrong-key-0000000000000000');
    try {
      await waitFor('the refused events journaled', () => wrong.lines().some((l) => l.journaled === 100), 60_000);
      wrong.child.kill('SIGKILL');
      await wrong.exited;
      expect(await eventCounts(stack, 'jplan-%')).toEqual({ rows: 0, distinct: 0 });
      const fixed = python([DRIVER, 'drain', stack.server.url, journal]);
      await fixed.exited;
      expect(fixed.lines()[0]).toEqual({ flushed: true, accepted: 100, rejected: 0, dropped: 0 });
      await waitFor('100 events stored', async () => (await eventCounts(stack, 'jplan-%')).rows >= 100, 60_000);
      expect(await eventCounts(stack, 'jplan-%')).toEqual({ rows: 100, distinct: 100 });
    } finally {
      if (wrong.child.exitCode === null && wrong.child.signalCode === null) wrong.child.kill('SIGKILL');
      await stack.close();
    }
  });

  it('sends on after the server closed its idle connection: no outage logged, nothing journaled, close() true', async () => {
    // Node closes an idle connection about a second after the keep-alive timeout
    const stack = await startApiStack('sqlite', { env: { HTTP_KEEP_ALIVE_TIMEOUT_MS: '1' } });
    try {
      // each pause outlasts the server's keep-alive: every event after the first finds its connection closed
      const run = python([DRIVER, 'idle', stack.server.url, tmp(), 'idle-plan', '3', '1.6']);
      const { code, stderr } = await run.exited;
      expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
      expect(run.lines()[0]).toEqual({
        flushed: [true, true, true],
        closed: true,
        journaled: 0,
        accepted: 3,
        rejected: 0,
        dropped: 0,
        lost: 0,
        sender_errors: 0,
      });
      await waitFor('3 events stored', async () => (await eventCounts(stack, 'idle-plan')).rows >= 3, 30_000);
      expect(await storedSeqs(stack, 'idle-plan')).toEqual([0, 1, 2]);
    } finally {
      await stack.close();
    }
  });

  it('stores 10,000 events published from 4 threads exactly once, each plan with seq 0..n-1', async () => {
    const stack = await startApiStack('sqlite');
    try {
      const run = python([DRIVER, 'threads', stack.server.url, tmp(), '10000', '4']);
      const { code, stderr } = await run.exited;
      expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
      expect(run.lines()[0]).toEqual({ flushed: true, accepted: 10_000, rejected: 0, dropped: 0 });
      await waitFor('10000 events stored', async () => (await eventCounts(stack, 't%-plan-%')).rows >= 10_000, 90_000);
      expect(await stack.worker!.idle(30_000)).toBe(true);
      expect(await eventCounts(stack, 't%-plan-%')).toEqual({ rows: 10_000, distinct: 10_000 });
      const plans = await stack.db.ds.query(
        `SELECT plan_id, COUNT(*) AS n, MIN(seq) AS lo, MAX(seq) AS hi FROM plan_events GROUP BY plan_id`,
      );
      expect(plans).toHaveLength(100);
      for (const p of plans) expect([Number(p.n), Number(p.lo), Number(p.hi)]).toEqual([100, 0, 99]);
    } finally {
      await stack.close();
    }
  });
});
