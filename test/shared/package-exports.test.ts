/**
 * What an executor loads: `plan-ledger/contracts` and `plan-ledger/publisher` (the package's
 * subpath exports, resolved as an installed package resolves them, from the build `npm ci`
 * makes) load neither TypeORM nor the CLI nor the store; the root export still has everything.
 */
import { execFileSync } from 'node:child_process';
import * as path from 'node:path';

const ROOT = path.join(__dirname, '..', '..');

/** Modules a fresh node process holds after requiring `specifier` by the package's own name. */
function loadedBy(specifier: string): string[] {
  const script = `require(${JSON.stringify(specifier)}); process.stdout.write(JSON.stringify(Object.keys(require.cache)))`;
  return JSON.parse(execFileSync(process.execPath, ['-e', script], { cwd: ROOT, encoding: 'utf8' })) as string[];
}

const heavy = (modules: string[]) =>
  modules.filter((m) =>
    /node_modules[\\/](typeorm|mssql|pg|mysql2|better-sqlite3)[\\/]|[\\/]dist[\\/]src[\\/](cli|store|worker|queries|retention)[\\/]/.test(
      m,
    ),
  );

describe('package exports for executors', () => {
  it('plan-ledger/contracts loads no TypeORM, BullMQ, database driver, store or CLI module', () => {
    const modules = loadedBy('plan-ledger/contracts');
    expect(modules.some((m) => m.endsWith(path.join('dist', 'src', 'contracts', 'index.js')))).toBe(true);
    expect(heavy(modules)).toEqual([]);
    expect(modules.filter((m) => /node_modules[\\/](bullmq|ioredis)[\\/]/.test(m))).toEqual([]);
  });

  it('plan-ledger/publisher loads no TypeORM, database driver, store or CLI module', () => {
    const modules = loadedBy('plan-ledger/publisher');
    expect(modules.some((m) => m.endsWith(path.join('dist', 'src', 'publisher', 'index.js')))).toBe(true);
    expect(heavy(modules)).toEqual([]);
  });

  it('the package root still exports the worker and the store', () => {
    const script = `const p = require('plan-ledger'); process.stdout.write(String([typeof p.startWorker, typeof p.PlanEventStore, typeof p.PlanEventPublisher]))`;
    expect(execFileSync(process.execPath, ['-e', script], { cwd: ROOT, encoding: 'utf8' })).toBe(
      'function,function,function',
    );
  });
});
