import type { DataSource } from 'typeorm';
import type { CliContext } from '../cli-context';
import { assertCapabilities } from '../../store/capabilities';
import { openDataSource } from '../../store/data-source';
import { migrationSql, revertAllMigrations, runMigrations } from '../../store/migrator';
import { migrationStatus, pendingMigrationsLine } from '../../store/migration-status';
import { CliError } from '../exit-codes';

export interface MigrateOptions {
  revertAll?: boolean;
  printSql?: boolean;
  status?: boolean;
  json?: boolean;
}

export async function migrate(ctx: CliContext, opts: MigrateOptions): Promise<void> {
  const modes = (['revertAll', 'printSql', 'status'] as const).filter((m) => opts[m]);
  if (modes.length > 1)
    throw new CliError(
      `${modes.map((m) => `--${m.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`).join(' and ')} cannot be combined`,
      'usage',
    );
  const target = ctx.config.database;
  if (opts.printSql) {
    const scripts = await migrationSql(target);
    if (opts.json) return ctx.raw(JSON.stringify({ dialect: target.dialect, migrations: scripts }, null, 2));
    for (const script of scripts) {
      ctx.out(`-- ${script.migration} (${target.dialect})`);
      for (const statement of script.statements) ctx.out(`${statement.trim()};`);
    }
    return;
  }
  // no request timeout: the lock waits its turn behind another migrate, and DDL on a table with
  // data (a key rebuilt, a column rewritten) can run long; two connections: the migrations' and,
  // where the lock has a transaction of its own (SQL Server), the lock's
  const ds = await openDataSource(target, { poolSize: 2, requestTimeoutMs: 0 });
  try {
    if (opts.status) return await printStatus(ctx, ds, opts.json === true);
    // a login that cannot create tables, or a SQL Server below OPENJSON's level: one line before any DDL
    await assertCapabilities(ds, target, 'migrate', ctx.logger);
    const report = opts.revertAll ? await revertAllMigrations(ds) : await runMigrations(ds);
    if (opts.json) return ctx.raw(JSON.stringify({ database: target.redacted, ...report }));
    const done = opts.revertAll ? report.reverted : report.applied;
    const verb = opts.revertAll ? 'reverted' : 'applied';
    if (done.length === 0) ctx.out(opts.revertAll ? 'nothing to revert' : 'schema is up to date');
    for (const name of done) ctx.out(`${verb} ${name}`);
  } finally {
    await ds.destroy();
  }
}

/** `migrate --status`: exit 0 either way; the last line (or `pending` in JSON) says what to do. */
async function printStatus(ctx: CliContext, ds: DataSource, json: boolean): Promise<void> {
  const status = await migrationStatus(ds);
  if (json) return ctx.out(JSON.stringify({ database: ctx.config.database.redacted, ...status }));
  for (const m of status.applied) ctx.out(`applied  ${m.name}`);
  for (const name of status.pending) ctx.out(`pending  ${name}`);
  ctx.out(status.pending.length === 0 ? 'schema is up to date' : pendingMigrationsLine(status.pending));
}
