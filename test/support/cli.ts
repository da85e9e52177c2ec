import { spawn } from 'node:child_process';
import * as path from 'node:path';

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

const BIN = path.join(__dirname, '..', '..', 'bin', 'plan-ledger.js');

/** Runs the real CLI as a child process, from the TypeScript sources (never a stale build). */
export async function runCli(
  args: string[],
  env: Record<string, string | undefined> = {},
  timeoutMs = 60_000,
): Promise<CliResult> {
  const { code, stdout, stderr } = await runCliBytes(args, env, timeoutMs);
  return { code, stdout: stdout.toString('utf8'), stderr };
}

/** The same, with stdout as the bytes the process wrote (for output that must be byte-exact). */
export function runCliBytes(
  args: string[],
  env: Record<string, string | undefined> = {},
  timeoutMs = 60_000,
): Promise<{ code: number | null; stdout: Buffer; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      env: { ...process.env, LOG_LEVEL: 'warn', ...env, PLAN_LEDGER_FROM_SOURCE: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const stdout: Buffer[] = [];
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => stdout.push(d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(
        new Error(
          `plan-ledger ${args.join(' ')} did not finish in ${timeoutMs} ms\nstdout: ${Buffer.concat(stdout).toString()}\nstderr: ${stderr}`,
        ),
      );
    }, timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout: Buffer.concat(stdout), stderr });
    });
  });
}
