/**
 * Scenarios of `npm run bench:store`: PlanEventStore.persist called directly, no queues.
 * - grouped: realistic events grouped plan by plan (the factory's order), in the worker's batches;
 * - interleaved: 10,000 plans x 10 events round-robin on top of a history of finished plans.
 * Each runs in a fresh database, on a DataSource opened for the timed part and closed after it,
 * so what it wrote is measured alone (rows per table and WAL bytes on PostgreSQL, rows changed on
 * SQLite), with the CPU of this process and of the database server per event.
 */
import type { DataSource } from 'typeorm';
import type { PlanEvent } from '../../src/contracts';
import { openDataSource } from '../../src/store/data-source';
import { PlanEventStore } from '../../src/store/plan-event-store';
import { createMigratedDb, TestDb } from '../../test/support/databases';
import { manyPlanRuns } from '../../test/support/event-factory';
import { cpuSeconds, pidsOf } from './e2e-processes';
import { endState } from './e2e-interleaved';
import { HistoryResult, preloadHistory } from './history';
import { round } from './latency';
import { roundRobin, stamped, withPublisherIds } from './plan-shapes';
import {
  createMeasuredDb,
  forceCheckpoint,
  settledSnapshot,
  sqliteChanges,
  walPosition,
  writesBetween,
  WritesReport,
} from './pg-writes';

export type MigratedDb = Awaited<ReturnType<typeof createMigratedDb>>;

/** SQLite: rows changed, from the writing connection's total_changes(); no per-table split, no WAL bytes. */
export interface SqliteWrites {
  events: number;
  rowsWritten: number;
  rowsPerEvent: number;
}

const serverComm: Record<TestDb, string | undefined> = {
  postgres: 'postgres',
  mariadb: 'mariadbd',
  sqlite: undefined,
  mssql: undefined,
};

export function serverCpu(kind: TestDb): number {
  const comm = serverComm[kind];
  return comm ? pidsOf(comm).reduce((n, pid) => n + cpuSeconds(pid), 0) : 0;
}

export function ownCpu(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

/**
 * Runs `work` on a DataSource of its own (closed afterwards) and reports what it wrote:
 * `events` and `checkpointEvents` are the denominators of the per-event figures.
 */
export async function measuringWrites<T>(
  db: MigratedDb,
  poolSize: number,
  counts: { events: number; checkpointEvents?: number },
  work: (ds: DataSource) => Promise<T>,
): Promise<{ result: T; writes?: WritesReport | SqliteWrites }> {
  const kind = db.db.kind;
  if (kind === 'postgres') await forceCheckpoint(db.ds);
  const before = kind === 'postgres' ? await settledSnapshot(db.ds) : undefined;
  const ds = await openDataSource(db.db.target, { poolSize });
  let result: T;
  let walEnd: string | undefined;
  let changes: number | undefined;
  try {
    const c0 = kind === 'sqlite' ? await sqliteChanges(ds) : 0;
    result = await work(ds);
    if (kind === 'sqlite') changes = (await sqliteChanges(ds)) - c0;
    if (before) walEnd = await walPosition(db.ds);
  } finally {
    await ds.destroy();
  }
  if (before)
    return {
      result,
      writes: writesBetween(before, await settledSnapshot(db.ds), counts.events, counts.checkpointEvents, walEnd),
    };
  if (changes !== undefined)
    return {
      result,
      writes: { events: counts.events, rowsWritten: changes, rowsPerEvent: round(changes / counts.events) },
    };
  return { result };
}

export interface PersistRun {
  events: number;
  batch: number;
  inFlight: number;
  eventsPerSec: number;
  seconds: number;
  nodeCpuUsPerEvent: number;
  serverCpuUsPerEvent: number;
  writes?: WritesReport | SqliteWrites;
}

/** `events` in batches of `batch`, `inFlight` persist calls at once; timed from the first call to the last commit. */
export async function timedPersist(
  db: MigratedDb,
  events: PlanEvent[],
  batch: number,
  inFlight: number,
  checkpointEvents?: number,
): Promise<PersistRun> {
  const kind = db.db.kind;
  const batches: PlanEvent[][] = [];
  for (let i = 0; i < events.length; i += batch) batches.push(events.slice(i, i + batch));
  const { result, writes } = await measuringWrites(
    db,
    inFlight + 1,
    { events: events.length, checkpointEvents },
    async (ds) => {
      const store = new PlanEventStore(ds);
      const s0 = serverCpu(kind);
      const c0 = ownCpu();
      const t0 = performance.now();
      let next = 0;
      await Promise.all(
        Array.from({ length: inFlight }, async () => {
          while (next < batches.length) await store.persist(batches[next++]);
        }),
      );
      return { seconds: (performance.now() - t0) / 1000, node: ownCpu() - c0, server: serverCpu(kind) - s0 };
    },
  );
  const n = events.length;
  return {
    events: n,
    batch,
    inFlight,
    eventsPerSec: Math.round(n / result.seconds),
    seconds: round(result.seconds),
    nodeCpuUsPerEvent: round((result.node * 1e6) / n),
    serverCpuUsPerEvent: round((result.server * 1e6) / n),
    writes,
  };
}

/** The existing figure: ~`count` realistic events grouped plan by plan, no history. */
export async function groupedPersist(
  kind: TestDb,
  count: number,
  batch: number,
  inFlight: number,
  seed = 77,
): Promise<PersistRun> {
  const events = withPublisherIds(manyPlanRuns(count, { seed }).slice(0, count));
  const checkpoints = events.filter((e) => e.type === 'checkpoint.saved').length;
  const db = await createMeasuredDb(kind);
  try {
    return await timedPersist(db, events, batch, inFlight, checkpoints);
  } finally {
    await db.close();
  }
}

export interface StoreInterleavedRun extends PersistRun {
  plans: number;
  history: HistoryResult;
  check: Awaited<ReturnType<typeof endState>>;
}

export interface StoreInterleavedOptions {
  plans: number;
  history: number;
  /** events per transaction and transactions in flight, as the worker runs them */
  batch: number;
  inFlight: number;
  /** default 78 */
  seed?: number;
}

/** `o.plans` x 10 events, round-robin, in the worker's batches, on top of `o.history` events. */
export async function interleavedPersist(kind: TestDb, o: StoreInterleavedOptions): Promise<StoreInterleavedRun> {
  const { plans, history, batch, inFlight, seed = 78 } = o;
  const tag = `silv${seed}`;
  const events = stamped(roundRobin(tag, plans, seed));
  const db = await createMeasuredDb(kind);
  try {
    const loaded = await preloadHistory(db.db.target, history, seed);
    const run = await timedPersist(db, events, batch, inFlight, plans);
    return { plans, history: loaded, ...run, check: await endState(db.ds, tag, plans, loaded.events + events.length) };
  } finally {
    await db.close();
  }
}
