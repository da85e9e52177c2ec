/**
 * "Is the schema this code expects in place?", for every long-running process (the worker today,
 * `serve` too). A process started before `plan-ledger migrate` ran (a rolling deploy, an init job
 * still running) must not write: rows of the new code in the old schema fail as dead letters, or
 * land half. It reports not ready with the line an operator acts on, polls the migrations table,
 * and lets the process begin once nothing is pending.
 */
import type { DataSource } from 'typeorm';
import type { Logger } from '../shared/logger';
import { migrationStatus, pendingMigrationsLine } from '../store/migration-status';

export interface SchemaWatchOptions {
  /** Names of the migrations the database lacks; `migrationStatus(ds).pending` by default. */
  pending: () => Promise<string[]>;
  /** How often to look again while migrations are pending. @defaultValue 5000 ms */
  pollMs?: number;
  logger: Logger;
}

export interface SchemaWatch {
  /** The readiness check: ok, or "2 pending migrations: run plan-ledger migrate". */
  check(): { ok: boolean; detail?: string };
  /** Resolves once no migration is pending (at once if none was); never rejects. */
  readonly current: Promise<void>;
  stop(): void;
}

/** A watch on `ds`'s migrations table. */
export function watchDataSourceSchema(ds: DataSource, logger: Logger, pollMs?: number): Promise<SchemaWatch> {
  return watchSchema({ pending: async () => (await migrationStatus(ds)).pending, logger, pollMs });
}

/**
 * Reads the pending migrations once (a failure here is the caller's start failing), then, while
 * any are pending, again every `pollMs`; a failed poll keeps the last answer.
 */
export async function watchSchema(opts: SchemaWatchOptions): Promise<SchemaWatch> {
  const pollMs = opts.pollMs ?? 5_000;
  let pending = await opts.pending();
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let markCurrent!: () => void;
  const current = new Promise<void>((resolve) => (markCurrent = resolve));
  const settle = () => {
    if (pending.length === 0) markCurrent();
  };
  const poll = () => {
    timer = setTimeout(async () => {
      try {
        pending = await opts.pending();
      } catch (err) {
        opts.logger.warn({ err }, 'reading the migrations table failed; retrying');
      }
      if (stopped) return;
      if (pending.length === 0) {
        opts.logger.info('migrations applied: starting');
        settle();
      } else poll();
    }, pollMs);
    timer.unref();
  };
  if (pending.length > 0) {
    opts.logger.warn({ pending }, `${pendingMigrationsLine(pending)}; not ready, writing nothing until then`);
    poll();
  }
  settle();
  return {
    check: () => (pending.length === 0 ? { ok: true } : { ok: false, detail: pendingMigrationsLine(pending) }),
    current,
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
    },
  };
}
