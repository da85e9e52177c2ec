/**
 * A CLI that starts fast: `--help` (the program's and every command's) builds the
 * command tree without loading the implementations, so neither TypeORM nor BullMQ (nor Fastify,
 * ioredis or a database driver) is loaded; a command that runs still loads what it needs and
 * behaves as before. No clock here: the start-up times are in BENCHMARKS.md.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { runCli } from '../support/cli';
import { createMigratedDb } from '../support/databases';

const HOOK = path.join(__dirname, '..', 'support', 'loaded-modules.hook.js');
const HEAVY = ['typeorm', 'bullmq', 'fastify', 'ioredis', 'pg', 'mysql2', 'mssql', 'better-sqlite3'];

let dir: string;
let runs = 0;

/** Runs the CLI with the hook preloaded; returns its result and the npm packages it loaded. */
async function runWatched(args: string[], env: Record<string, string> = {}) {
  const file = path.join(dir, `modules-${++runs}.json`);
  const result = await runCli(args, { ...env, NODE_OPTIONS: `--require ${HOOK}`, LOADED_MODULES_FILE: file });
  const loaded = JSON.parse(fs.readFileSync(file, 'utf8')) as string[];
  const packages = new Set(
    loaded
      .map((f) => /[\\/]node_modules[\\/]((?:@[^\\/]+[\\/])?[^\\/]+)/.exec(f)?.[1])
      .filter((p): p is string => p !== undefined),
  );
  return { ...result, packages, loaded };
}

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plan-ledger-startup-'));
});

afterAll(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('plan-ledger --help loads no implementation', () => {
  it('prints the whole help (every command, the environment, the exit codes) without TypeORM or BullMQ', async () => {
    const r = await runWatched(['--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('Usage: plan-ledger');
    for (const cmd of [
      'demo',
      'migrate',
      'worker',
      'dlq',
      'plans',
      'sessions',
      'workflows',
      'steps',
      'analytics',
      'retention',
      'approvals',
      'serve',
    ]) {
      expect(r.stdout).toMatch(new RegExp(`^  ${cmd}\\b`, 'm'));
    }
    expect(r.stdout).toContain('DATABASE_URL');
    expect(r.stdout).toContain('Exit codes:');
    expect(r.loaded.length).toBeGreaterThan(0); // the hook ran
    expect(HEAVY.filter((p) => r.packages.has(p))).toEqual([]);
  });

  // the commands whose help text shows settings or defaults read from their implementation's modules
  it.each([
    [['worker', '--help'], 'WORKER_MAX_EVENTS_IN_FLIGHT'],
    [['serve', '--help'], 'HTTP_INGEST_KEYS'],
    [['dlq', 'replay', '--help'], 'events per queued job (default 500)'],
    [['analytics', 'tokens', '--help'], 'session|plan|agent|model'],
    [['plans', 'list', '--help'], 'planning|executing|completed|failed|cancelled'],
    [['plans', 'restore', '--help'], 'RETENTION_GRACE_DAYS'],
    [['retention', 'run', '--help'], 'RETENTION_COMPLETED_DAYS'],
    [['migrate', '--help'], '--print-sql'],
    [['approvals', 'decide', '--help'], '--edited-args-digest'],
  ])('%j prints its help (%s) without TypeORM or BullMQ', async (args, expected) => {
    const r = await runWatched(args);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(expected);
    expect(HEAVY.filter((p) => r.packages.has(p))).toEqual([]);
  });
});

describe('a command loads its implementation when it runs', () => {
  it('plans list on an empty SQLite database: exit 0, its answer, TypeORM loaded, BullMQ not', async () => {
    const db = await createMigratedDb('sqlite');
    try {
      await db.ds.destroy();
      const r = await runWatched(['plans', 'list'], { DATABASE_URL: db.db.url });
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect(r.stdout.trim()).toBe('no plans match');
      expect(r.packages.has('typeorm')).toBe(true);
      expect(r.packages.has('bullmq')).toBe(false);
    } finally {
      await db.close();
    }
  });

  it('a usage error in a command still exits 2 with one line, before connecting', async () => {
    const r = await runWatched(['plans', 'list', '--limit', 'lots'], {
      DATABASE_URL: `sqlite:${path.join(dir, 'never.sqlite')}`,
    });
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain('--limit');
    expect(fs.existsSync(path.join(dir, 'never.sqlite'))).toBe(false);
  });
});
