/**
 * History for the store scenarios: finished plans written straight through PlanEventStore.persist
 * in big grouped batches before a timed window, so tables and indexes have a realistic size.
 * Runs on a DataSource of its own, destroyed at the end: PostgreSQL backends flush their table
 * statistics when they exit, so the "before" snapshot of rows written (pg-writes.ts) is complete.
 */
import type { DataSource } from 'typeorm';
import type { PlanEvent } from '../../src/contracts';
import type { DatabaseTarget } from '../../src/config/database-url';
import { openDataSource } from '../../src/store/data-source';
import { PlanEventStore } from '../../src/store/plan-event-store';
import { manyPlanRuns } from '../../test/support/event-factory';
import { round } from './latency';

export interface HistoryResult {
  events: number;
  plans: number;
  seconds: number;
  eventsPerSec: number;
}

/** Events per persist call while loading history, and calls in flight (PostgreSQL). */
const HISTORY_BATCH = 5_000;
const HISTORY_IN_FLIGHT = 2;
/** Events generated at a time: the history never sits in memory whole. */
const GENERATE = 50_000;

/**
 * About `events` events of finished realistic plans (the shared factory's mix, ~10 events per
 * plan), persisted in batches of whole plans; then VACUUM ANALYZE on PostgreSQL, as autovacuum
 * would have done on a table that grew this much.
 */
export async function preloadHistory(target: DatabaseTarget, events: number, seed: number): Promise<HistoryResult> {
  if (events <= 0) return { events: 0, plans: 0, seconds: 0, eventsPerSec: 0 };
  const ds = await openDataSource(target, { poolSize: HISTORY_IN_FLIGHT + 1 });
  const t0 = performance.now();
  let written = 0;
  const plans = new Set<string>();
  try {
    const store = new PlanEventStore(ds);
    for (let part = 0; written < events; part++) {
      const generated = manyPlanRuns(Math.min(GENERATE, events - written), {
        seed: seed * 1_000 + part,
        startAt: new Date('2025-06-01T00:00:00Z'),
      });
      for (const e of generated) plans.add(e.planId);
      await persistGrouped(store, generated, HISTORY_BATCH, target.dialect === 'sqlite' ? 1 : HISTORY_IN_FLIGHT);
      written += generated.length;
    }
    if (target.dialect === 'postgres') await vacuumAnalyze(ds);
    const seconds = (performance.now() - t0) / 1000;
    return { events: written, plans: plans.size, seconds: round(seconds), eventsPerSec: Math.round(written / seconds) };
  } finally {
    await ds.destroy();
  }
}

/** Batches of about `batch` events that never cut a plan (the events come grouped by plan). */
export function groupedBatches(events: PlanEvent[], batch: number): PlanEvent[][] {
  const out: PlanEvent[][] = [];
  let current: PlanEvent[] = [];
  for (let i = 0; i < events.length; i++) {
    current.push(events[i]);
    if (current.length >= batch && events[i + 1]?.planId !== events[i].planId) {
      out.push(current);
      current = [];
    }
  }
  if (current.length) out.push(current);
  return out;
}

async function persistGrouped(
  store: PlanEventStore,
  events: PlanEvent[],
  batch: number,
  inFlight: number,
): Promise<void> {
  const batches = groupedBatches(events, batch);
  let next = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < batches.length) await store.persist(batches[next++]);
    }),
  );
}

/** VACUUM ANALYZE every table of the DataSource's schema (outside a transaction). */
export async function vacuumAnalyze(ds: DataSource): Promise<void> {
  const tables: { relname: string }[] = await ds.query(
    'SELECT relname FROM pg_stat_user_tables WHERE schemaname = current_schema()',
  );
  for (const { relname } of tables) await ds.query(`VACUUM (ANALYZE) "${relname}"`);
}

/**
 * Persist given events (e.g. a long plan's first 20k) in batches of `batch`, one at a time, on a DataSource of its
 * own.
 */
export async function persistAll(
  target: DatabaseTarget,
  events: PlanEvent[],
  batch: number,
): Promise<{ events: number; seconds: number }> {
  const ds = await openDataSource(target, { poolSize: 2 });
  const t0 = performance.now();
  try {
    const store = new PlanEventStore(ds);
    for (let i = 0; i < events.length; i += batch) await store.persist(events.slice(i, i + batch));
    if (target.dialect === 'postgres') await vacuumAnalyze(ds);
    return { events: events.length, seconds: round((performance.now() - t0) / 1000) };
  } finally {
    await ds.destroy();
  }
}
