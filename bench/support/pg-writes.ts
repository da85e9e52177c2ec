/**
 * What a scenario wrote, read from the database: rows inserted/updated/deleted per table
 * (PostgreSQL: pg_stat_user_tables of the scenario's schema; SQLite: total_changes() of the
 * writing connection) and WAL bytes (PostgreSQL: pg_current_wal_lsn before and after).
 *
 * PostgreSQL 15 backends flush their table counters to pg_stat up to ~1 s after a transaction
 * (longer when idle), and at exit: snapshot after the writers closed their connections, and
 * `settledSnapshot` polls until the counters stop moving. WAL is server-wide: anything else
 * writing on the server meanwhile counts too, so the snapshot also sums every database's tuple
 * counters (pg_stat_database) and the result reports what was written outside the schema.
 */
import type { DataSource } from 'typeorm';
import { openDataSource } from '../../src/store/data-source';
import { createMigratedDb, TestDb } from '../../test/support/databases';
import { round } from './latency';

interface TableCounts {
  ins: number;
  upd: number;
  /** Of the updates, those PostgreSQL kept on the row's page without touching an index (HOT); SQLite: 0. */
  hot: number;
  del: number;
}

export interface WriteSnapshot {
  lsn: string;
  tables: Record<string, TableCounts>;
  /** Tuples inserted + updated + deleted in every database of the server. */
  serverRows: number;
}

export interface WritesReport {
  events: number;
  rowsWritten: number;
  rowsPerEvent: number;
  walBytes: number;
  walBytesPerEvent: number;
  /** Per table: rows inserted / updated / deleted (only tables that changed). */
  byTable: Record<string, TableCounts>;
  /** workflow_checkpoints rows written per checkpoint.saved event (1 = written once). */
  checkpointRowsPerCheckpointEvent?: number;
  /**
   * Rows written on the server outside this schema meanwhile: other sessions, and the catalog
   * (autovacuum's ANALYZE rewrites pg_statistic: a few thousand rows on a server of our own).
   */
  otherRowsOnServer: number;
}

export async function snapshotWrites(ds: DataSource): Promise<WriteSnapshot> {
  const rows: { relname: string; ins: string; upd: string; hot: string; del: string }[] = await ds.query(
    'SELECT relname, n_tup_ins AS ins, n_tup_upd AS upd, n_tup_hot_upd AS hot, n_tup_del AS del FROM pg_stat_user_tables WHERE schemaname = current_schema()',
  );
  const [{ lsn }] = await ds.query('SELECT pg_current_wal_lsn()::text AS lsn');
  const [{ n }] = await ds.query(
    'SELECT COALESCE(SUM(tup_inserted + tup_updated + tup_deleted), 0)::bigint AS n FROM pg_stat_database',
  );
  const tables: Record<string, TableCounts> = {};
  for (const r of rows)
    tables[r.relname] = { ins: Number(r.ins), upd: Number(r.upd), hot: Number(r.hot), del: Number(r.del) };
  return { lsn, tables, serverRows: Number(n) };
}

const total = (t: Record<string, TableCounts>) => Object.values(t).reduce((n, c) => n + c.ins + c.upd + c.del, 0);

/**
 * A snapshot once the schema's counters have stopped moving: equal in two reads 400 ms apart, at
 * least 1.2 s after the call (up to 15 s). Call it after the writers closed their connections.
 */
export async function settledSnapshot(ds: DataSource): Promise<WriteSnapshot> {
  const started = Date.now();
  let last = await snapshotWrites(ds);
  for (;;) {
    await new Promise((r) => setTimeout(r, 400));
    const next = await snapshotWrites(ds);
    const stable = total(next.tables) === total(last.tables);
    if ((stable && Date.now() - started >= 1_200) || Date.now() - started > 15_000) return next;
    last = next;
  }
}

/** "X/Y" (hex) to a byte position. */
function lsnBytes(lsn: string): bigint {
  const [hi, lo] = lsn.split('/');
  return (BigInt(`0x${hi}`) << 32n) + BigInt(`0x${lo}`);
}

/** What was written between two snapshots, per event; `checkpointEvents` adds the checkpoint figure. */
export function writesBetween(
  before: WriteSnapshot,
  after: WriteSnapshot,
  events: number,
  checkpointEvents?: number,
  walEnd?: string,
): WritesReport {
  const byTable: Record<string, TableCounts> = {};
  for (const [table, a] of Object.entries(after.tables)) {
    const b = before.tables[table] ?? { ins: 0, upd: 0, hot: 0, del: 0 };
    const d = { ins: a.ins - b.ins, upd: a.upd - b.upd, hot: a.hot - b.hot, del: a.del - b.del };
    if (d.ins || d.upd || d.del) byTable[table] = d;
  }
  const rowsWritten = total(byTable);
  const walBytes = Number(lsnBytes(walEnd ?? after.lsn) - lsnBytes(before.lsn));
  const cp = byTable.workflow_checkpoints;
  return {
    events,
    rowsWritten,
    rowsPerEvent: round(rowsWritten / events),
    walBytes,
    walBytesPerEvent: Math.round(walBytes / events),
    byTable,
    ...(checkpointEvents
      ? { checkpointRowsPerCheckpointEvent: round(cp ? (cp.ins + cp.upd + cp.del) / checkpointEvents : 0) }
      : {}),
    otherRowsOnServer: Math.max(0, after.serverRows - before.serverRows - rowsWritten),
  };
}

/**
 * A PostgreSQL CHECKPOINT before a measured window, so every window starts in the same state: the
 * first change to each page after it is logged as a full-page image, and those count. Without it
 * the WAL per event depends on when the server's last timed checkpoint happened to run.
 */
export async function forceCheckpoint(ds: DataSource): Promise<void> {
  await ds.query('CHECKPOINT');
}

/** WAL position now (to end the WAL window before the counters settle). */
export async function walPosition(ds: DataSource): Promise<string> {
  const [{ lsn }] = await ds.query('SELECT pg_current_wal_lsn()::text AS lsn');
  return lsn;
}

/** SQLite: rows changed by this connection so far (inserts, updates, deletes). */
export async function sqliteChanges(ds: DataSource): Promise<number> {
  const [{ n }] = await ds.query('SELECT total_changes() AS n');
  return Number(n);
}

/**
 * A fresh migrated database (createMigratedDb) whose open DataSource has written nothing: the
 * migrations ran on a connection closed since, so their counters are flushed and a scenario's
 * "before" snapshot includes them.
 */
export async function createMeasuredDb(kind: TestDb): Promise<Awaited<ReturnType<typeof createMigratedDb>>> {
  const migrated = await createMigratedDb(kind, { poolSize: 1 });
  await migrated.ds.destroy();
  const ds = await openDataSource(migrated.db.target, { poolSize: 2 });
  return {
    db: migrated.db,
    ds,
    async close() {
      if (ds.isInitialized) await ds.destroy();
      await migrated.close();
    },
  };
}
