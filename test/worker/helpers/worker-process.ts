import { spawn, ChildProcess } from 'node:child_process';
import * as path from 'node:path';

const BIN = path.join(__dirname, '..', '..', '..', 'bin', 'plan-ledger.js');

export interface WorkerProcess {
  child: ChildProcess;
  pid: number;
  /** Everything printed so far (stdout: JSON log lines; stderr: CLI errors). */
  stdout(): string;
  stderr(): string;
  /** Parsed JSON log lines of stdout. */
  logs(): Record<string, unknown>[];
  /** Resolves with the exit code (or signal name) once the process has exited. */
  exited: Promise<number | string>;
  /** Resolves when a log line with this `msg` appears; rejects at the timeout (90 s by default: a worker started from the sources on a busy machine) or if the process exits first. */
  waitForLog(msg: string, timeoutMs?: number): Promise<Record<string, unknown>>;
}

/** Starts `plan-ledger worker` from the sources as a real child process. */
export function spawnWorker(env: Record<string, string>): WorkerProcess {
  const child = spawn(process.execPath, [BIN, 'worker'], {
    env: { ...process.env, LOG_LEVEL: 'info', HEALTH_PORT: 'off', ...env, PLAN_LEDGER_FROM_SOURCE: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (err += d));
  const exited = new Promise<number | string>((resolve) =>
    child.on('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')),
  );
  let done = false;
  void exited.then(() => (done = true));
  const logs = () =>
    out
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => {
        try {
          return JSON.parse(l) as Record<string, unknown>;
        } catch {
          return {};
        }
      });
  return {
    child,
    pid: child.pid!,
    stdout: () => out,
    stderr: () => err,
    logs,
    exited,
    async waitForLog(msg, timeoutMs = 90_000) {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const line = logs().find((l) => l.msg === msg);
        if (line) return line;
        if (done)
          throw new Error(
            `worker exited before logging "${msg}"\nstdout: ${out.slice(-2000)}\nstderr: ${err.slice(-2000)}`,
          );
        if (Date.now() > until)
          throw new Error(
            `worker did not log "${msg}" within ${timeoutMs} ms\nstdout: ${out.slice(-2000)}\nstderr: ${err.slice(-2000)}`,
          );
        await new Promise((r) => setTimeout(r, 50));
      }
    },
  };
}

/** Kills a child if it is still running (afterAll safety net). */
export async function stopProcess(p: WorkerProcess | undefined): Promise<void> {
  if (!p || p.child.exitCode !== null || p.child.signalCode !== null) return;
  p.child.kill('SIGKILL');
  await p.exited;
}
