/**
 * The long-plan scenario of `npm run bench:store`: one plan of 10,000 steps (21,002
 * events, see plan-shapes.ts) trickled through PlanEventStore.persist in batches of 50 events, one
 * at a time, in a fresh database. Each batch is timed; the figure at N stored events is the median
 * of the 5 batches that start within 100 events of N (N - 100, N - 50, N, N + 50, N + 100).
 * `maxEvents` stops early: a point is measured only if all its batches were stored.
 * Reference, in the same database just before: the median 50-event batch of short plans (5 new
 * 10-event plans per batch), i.e. what the same batch size costs without a long plan.
 */
import type { PlanEvent } from '../../src/contracts';
import type { DatabaseTarget } from '../../src/config/database-url';
import { openDataSource } from '../../src/store/data-source';
import { PlanEventStore } from '../../src/store/plan-event-store';
import type { TestDb } from '../../test/support/databases';
import { round } from './latency';
import { longPlan, roundRobin, stamped } from './plan-shapes';
import { measuringWrites, ownCpu, serverCpu, SqliteWrites } from './store-scenarios';
import { createMeasuredDb, WritesReport } from './pg-writes';

export const LONG_PLAN_POINTS = [1_000, 5_000, 10_000, 20_000];
const AROUND = 100;

export interface LongPlanPoint {
  storedEvents: number;
  /** Median wall time of the batches around the point, and their spread. */
  msPerBatch: number;
  minMs: number;
  maxMs: number;
  batches: number;
}

export interface LongPlanRun {
  db: TestDb;
  steps: number;
  planEvents: number;
  batch: number;
  /** Events stored when the run stopped (the whole plan, or about --long-max). */
  storedEvents: number;
  seconds: number;
  points: LongPlanPoint[];
  /** Median ms of a 50-event batch of short plans in the same database (see above). */
  referenceMsPerBatch: number;
  /** ms per batch at 20k stored events / at 1k (null when the run stopped before 20k). */
  ratio20kTo1k: number | null;
  /** The same for the furthest point reached, e.g. 5k/1k on a shortened run. */
  ratioLastTo1k: { point: number; ratio: number } | null;
  /** The furthest point's batch / the reference batch of short plans. */
  ratioLastToReference: { point: number; ratio: number } | null;
  nodeCpuUsPerEvent: number;
  serverCpuUsPerEvent: number;
  writes?: WritesReport | SqliteWrites;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** 25 batches of `batch` events of new 10-event plans (grouped by plan); the median of the last 20. */
async function referenceBatch(target: DatabaseTarget, batch: number): Promise<number> {
  const runs = 25;
  const plans = Math.ceil((runs * batch) / 10);
  // round-robin over 1 plan at a time = each plan's 10 events in a row
  const events = Array.from({ length: plans }, (_, i) => stamped(roundRobin('ref', 1, 5, i))).flat();
  const ds = await openDataSource(target, { poolSize: 1 });
  try {
    const store = new PlanEventStore(ds);
    const ms: number[] = [];
    for (let i = 0; i < runs; i++) {
      const t = performance.now();
      await store.persist(events.slice(i * batch, (i + 1) * batch));
      ms.push(performance.now() - t);
    }
    return round(median(ms.slice(5)));
  } finally {
    await ds.destroy();
  }
}

export async function longPlanTrickle(
  kind: TestDb,
  opts: { steps: number; batch: number; maxEvents: number; progress?: (line: string) => void },
): Promise<LongPlanRun> {
  const all = longPlan('long-store', opts.steps);
  const events = all.slice(0, Math.min(all.length, opts.maxEvents));
  const checkpoints = events.filter((e) => e.type === 'checkpoint.saved').length;
  const db = await createMeasuredDb(kind);
  const timings: { storedBefore: number; ms: number }[] = [];
  try {
    const reference = await referenceBatch(db.db.target, opts.batch);
    const { result, writes } = await measuringWrites(
      db,
      2,
      { events: events.length, checkpointEvents: checkpoints },
      async (ds) => {
        const store = new PlanEventStore(ds);
        const s0 = serverCpu(kind);
        const c0 = ownCpu();
        const t0 = performance.now();
        let reported = 0;
        for (let i = 0; i < events.length; i += opts.batch) {
          const part: PlanEvent[] = events.slice(i, i + opts.batch);
          const t = performance.now();
          await store.persist(part);
          timings.push({ storedBefore: i, ms: performance.now() - t });
          if (opts.progress && i + part.length - reported >= 1_000) {
            reported = i + part.length;
            opts.progress(
              `long plan: ${reported} events stored, last batch ${round(performance.now() - t, 1)} ms, ${round((performance.now() - t0) / 1000, 1)} s`,
            );
          }
        }
        return { seconds: (performance.now() - t0) / 1000, node: ownCpu() - c0, server: serverCpu(kind) - s0 };
      },
    );
    const points: LongPlanPoint[] = [];
    for (const p of LONG_PLAN_POINTS) {
      const around = timings.filter((t) => Math.abs(t.storedBefore - p) <= AROUND).map((t) => t.ms);
      // every batch starting within AROUND of the point (5 of 50 events) must have been stored
      const expected = Math.floor((p + AROUND) / opts.batch) - Math.ceil((p - AROUND) / opts.batch) + 1;
      if (around.length < expected || p + AROUND + opts.batch > events.length) continue;
      points.push({
        storedEvents: p,
        msPerBatch: round(median(around)),
        minMs: round(around.reduce((a, b) => Math.min(a, b))),
        maxMs: round(around.reduce((a, b) => Math.max(a, b))),
        batches: around.length,
      });
    }
    const at = (p: number) => points.find((x) => x.storedEvents === p)?.msPerBatch;
    const first = at(1_000);
    const last = points[points.length - 1];
    return {
      db: kind,
      steps: opts.steps,
      planEvents: all.length,
      batch: opts.batch,
      storedEvents: events.length,
      seconds: round(result.seconds),
      referenceMsPerBatch: reference,
      points,
      ratio20kTo1k: first && at(20_000) ? round(at(20_000)! / first) : null,
      ratioLastTo1k:
        first && last && last.storedEvents > 1_000
          ? { point: last.storedEvents, ratio: round(last.msPerBatch / first) }
          : null,
      ratioLastToReference: last ? { point: last.storedEvents, ratio: round(last.msPerBatch / reference) } : null,
      nodeCpuUsPerEvent: round((result.node * 1e6) / events.length),
      serverCpuUsPerEvent: round((result.server * 1e6) / events.length),
      writes,
    };
  } finally {
    await db.close();
  }
}
