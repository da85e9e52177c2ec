/**
 * `npm run bench:fork` (`-- --db sqlite|postgres|mariadb`, default postgres; `-- --rounds N`,
 * default 15; `-- --json`).
 *
 * What a fork costs as its parent grows: plans of 10, 1,000 and 10,000 steps (10 steps a layer,
 * every step completed) are stored, then forked from their middle layer, `rounds` times each,
 * sizes alternating within a round; the median wall time of `forkPlan` and the rows each fork
 * wrote (every table counted before and after) are reported. A second phase forks with one edited
 * step (an edit reads the parent's whole DAG). The baseline, measured in the same run: storing a plain 10-step plan.created through the
 * same store. Target: the 10,000-step fork within 2x the 10-step fork.
 */
import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import type { PlanEvent, StepSpec } from '../src/contracts';
import { forkPlan } from '../src/fork/fork-plan';
import { PlanEventStore } from '../src/store/plan-event-store';
import { PROJECTION_TABLES } from '../src/store/plan-tables';
import { createMigratedDb, type TestDb } from '../test/support/databases';
import { BenchOptions } from './support/cli-options';

const opts = new BenchOptions(
  'npm run bench:fork -- [options]: what a fork costs for plans of 10, 1,000 and 10,000 steps',
  [
    { name: 'db', value: 'sqlite|postgres|mariadb', help: 'the database (default postgres)' },
    { name: 'rounds', value: 'N', help: 'forks of each size (default 15); the median is reported' },
    { name: 'json', help: 'print the results as one JSON object' },
  ],
);

const SIZES = [10, 1_000, 10_000];
const WIDTH = 10;

/** A plan of `size` steps, 10 a layer, each depending on the step above it, all completed. */
function planEvents(planId: string, size: number): PlanEvent[] {
  const at = Date.parse('2026-05-01T00:00:00.000Z');
  let seq = 0;
  const ev = (type: string, payload: object) =>
    ({
      specVersion: 1,
      eventId: randomUUID(),
      type,
      planId,
      sessionId: 'bench-fork',
      seq: seq++,
      occurredAt: new Date(at + seq).toISOString(),
      payload,
    }) as PlanEvent;
  const steps: StepSpec[] = Array.from({ length: size }, (_, i) => ({
    stepId: `s${i}`,
    index: i,
    agentId: `agent-${i % 7}`,
    task: `task ${i}: summarise the findings of the previous layer`,
    ...(i >= WIDTH ? { dependsOn: [`s${i - WIDTH}`] } : {}),
  }));
  // past the contract's 500 steps per plan.created: written through the store, which takes any size
  return [
    ev('plan.created', { query: `a plan of ${size} steps`, steps }),
    ...steps.map((s) =>
      ev('step.completed', {
        stepId: s.stepId,
        inputTokens: 100,
        outputTokens: 20,
        outputContent: `output of ${s.stepId}`,
      }),
    ),
  ];
}

async function rowCounts(ds: DataSource): Promise<number> {
  let total = 0;
  for (const table of ['plan_events', 'plan_heads', 'sessions', ...PROJECTION_TABLES.map((t) => t.table)]) {
    const [{ n }] = await ds.query(`SELECT COUNT(*) AS n FROM ${table}`);
    total += Number(n);
  }
  return total;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

async function main(): Promise<void> {
  const kind = opts.string('db', 'postgres') as TestDb;
  const rounds = opts.number('rounds', 15);
  const { ds, close } = await createMigratedDb(kind);
  try {
    const store = new PlanEventStore(ds, undefined, { rowCacheBytes: 0 });
    for (const size of SIZES) {
      const events = planEvents(`parent-${size}`, size);
      for (let i = 0; i < events.length; i += 2_000) await store.persist(events.slice(i, i + 2_000));
    }
    const times: Record<string, number[]> = {};
    const rows: Record<string, number> = {};
    const time = async (key: string, work: () => Promise<unknown>) => {
      const before = rows[key] === undefined ? await rowCounts(ds) : 0;
      const start = performance.now();
      await work();
      (times[key] ??= []).push(performance.now() - start);
      if (rows[key] === undefined) rows[key] = (await rowCounts(ds)) - before;
    };
    let n = 0;
    // forks without edits first, then with one edit: an edit parses the parent's whole DAG, and
    // the garbage it leaves would be collected during the next measurement
    for (let round = 0; round < rounds; round++) {
      await time('baseline', () => store.persist(planEvents(`plain-${n++}`, 10).slice(0, 1)));
      for (const size of SIZES) {
        const layer = Math.floor(size / WIDTH / 2);
        await time(`fork ${size}`, () =>
          forkPlan(
            ds,
            { parentPlanId: `parent-${size}`, kind: 'fork', from: { layer }, planId: `f-${size}-${n++}` },
            store,
          ),
        );
      }
    }
    for (let round = 0; round < rounds; round++) {
      for (const size of SIZES) {
        const layer = Math.floor(size / WIDTH / 2);
        const edit: StepSpec = {
          stepId: `s${layer * WIDTH}`,
          index: 0,
          agentId: 'agent-0',
          task: 'the changed task',
          ...(layer > 0 ? { dependsOn: [`s${(layer - 1) * WIDTH}`] } : {}),
        };
        await time(`fork+edit ${size}`, () =>
          forkPlan(
            ds,
            {
              parentPlanId: `parent-${size}`,
              kind: 'fork',
              from: { layer },
              planId: `e-${size}-${n++}`,
              editSteps: [edit],
            },
            store,
          ),
        );
      }
    }
    const ms = (key: string) => median(times[key]);
    const result = {
      db: kind,
      rounds,
      baselineMs: ms('baseline'),
      forks: SIZES.map((size) => ({
        steps: size,
        ms: ms(`fork ${size}`),
        rows: rows[`fork ${size}`],
        withEditMs: ms(`fork+edit ${size}`),
        withEditRows: rows[`fork+edit ${size}`],
      })),
      ratio10kTo10: ms('fork 10000') / ms('fork 10'),
      ratio10kTo10WithEdit: ms('fork+edit 10000') / ms('fork+edit 10'),
      target: 2,
    };
    if (opts.flag('json')) return void process.stdout.write(`${JSON.stringify(result)}\n`);
    console.log(
      `fork cost on ${kind}, median of ${rounds} rounds (baseline: a 10-step plan.created stored, ${result.baselineMs.toFixed(2)} ms)`,
    );
    console.log('steps    fork ms  rows   with one edit ms  rows');
    for (const f of result.forks)
      console.log(
        `${String(f.steps).padStart(6)}  ${f.ms.toFixed(2).padStart(7)}  ${String(f.rows).padStart(4)}   ${f.withEditMs.toFixed(2).padStart(16)}  ${String(f.withEditRows).padStart(4)}`,
      );
    console.log(
      `10,000 / 10 steps: ${result.ratio10kTo10.toFixed(2)}x (with one edit ${result.ratio10kTo10WithEdit.toFixed(2)}x); target <= ${result.target}x`,
    );
  } finally {
    await close();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
