/**
 * `npm run bench:store` (`-- --help` lists the options; `-- --json` prints one JSON object).
 *
 * The worker's two CPU items apart, in this process, without queues, each scenario in a fresh
 * database (`--db`, default PostgreSQL):
 * - the contract check per event (parsePlanEvent, and checkStoredEvent which the worker runs);
 * - grouped: PlanEventStore.persist of realistic events grouped plan by plan, in the worker's
 *   batches (2000 events, 4 transactions in flight), with the CPU used per event by this process
 *   and by the database server, and rows (and WAL bytes on PostgreSQL) written per event;
 * - interleaved: 10,000 plans x 10 events round-robin, same batches, on top of 400k
 *   events of history;
 * - long plan: one 10,000-step plan (~21k events) trickled in 50-event batches: ms per
 *   batch at 1k / 5k / 10k / 20k stored events. Target: at 20k <= 2x at 1k; checkpoints written
 *   once (workflow_checkpoints rows written per checkpoint event <= 1, PostgreSQL).
 */
import 'reflect-metadata';
import * as os from 'node:os';
import { checkStoredEvent, parsePlanEvent } from '../src/contracts';
import type { TestDb } from '../test/support/databases';
import { manyPlanRuns } from '../test/support/event-factory';
import { BenchOptions } from './support/cli-options';
import { postgresServer, rerunOnPrivatePostgres } from './support/private-postgres';
import { round } from './support/latency';
import { groupedPersist, interleavedPersist, ownCpu, PersistRun } from './support/store-scenarios';
import { LONG_PLAN_POINTS, longPlanTrickle } from './support/store-long-plan';

const SCENARIOS = ['check', 'grouped', 'interleaved', 'long'] as const;
const opts = new BenchOptions(
  'npm run bench:store -- [options]: the contract check and PlanEventStore.persist alone (see BENCHMARKS.md)',
  [
    { name: 'json', help: 'print one JSON object with every figure, ratio and target' },
    { name: 'private-pg', help: 'a PostgreSQL server of its own (server-wide WAL bytes of this run alone)' },
    { name: 'quick', help: 'reduced sizes (history 40k, 1,000 interleaved plans, long plan to 5k events)' },
    { name: 'only', value: 'list', help: `scenarios, comma-separated: ${SCENARIOS.join(',')} (default all)` },
    { name: 'db', value: 'kind', help: 'postgres (default), sqlite or mariadb' },
    { name: 'events', value: 'N', help: 'grouped: events (default 100000)' },
    { name: 'batch', value: 'N', help: 'grouped / interleaved: events per persist call (default 2000)' },
    { name: 'inflight', value: 'N', help: 'grouped / interleaved: persist calls in flight (default 4)' },
    { name: 'no-parse', help: 'skip the contract checks, e.g. to profile the store alone' },
    { name: 'history', value: 'N', help: 'interleaved: events of history (default 400000)' },
    { name: 'plans', value: 'N', help: 'interleaved: plans of 10 events (default 10000)' },
    { name: 'long-steps', value: 'N', help: 'long plan: steps (default 10000, ~2.1 events per step)' },
    { name: 'long-batch', value: 'N', help: 'long plan: events per persist call (default 50)' },
    {
      name: 'long-max',
      value: 'N',
      help: 'long plan: stop after the point N (stores N + 150 events; default all; quick 5000)',
    },
  ],
);
const json = opts.flag('json');
const quick = opts.flag('quick');
const only = opts.list('only', SCENARIOS);
const N = opts.number('events', quick ? 50_000 : 100_000);
const BATCH = opts.number('batch', 2_000);
const IN_FLIGHT = opts.number('inflight', 4);
const DB = opts.string('db', 'postgres') as TestDb;
const skipParse = opts.flag('no-parse');
const HISTORY = opts.number('history', quick ? 40_000 : 400_000);
const PLANS = opts.number('plans', quick ? 1_000 : 10_000);
const LONG_STEPS = opts.number('long-steps', 10_000);
const LONG_BATCH = opts.number('long-batch', 50);
const LONG_MAX = opts.number('long-max', quick ? 5_000 : Infinity);

const log = (line: string) => process.stderr.write(`${line}\n`);
const out = (line: string) => !json && process.stdout.write(`${line}\n`);

function contractChecks() {
  const raw = manyPlanRuns(N, { seed: 77 })
    .slice(0, N)
    .map((e) => JSON.parse(JSON.stringify(e)) as unknown);
  const time = (check: (r: unknown) => { ok: boolean }) => {
    const t = performance.now();
    const c = ownCpu();
    for (const r of raw) if (!check(r).ok) throw new Error('factory event rejected');
    return {
      usPerEvent: round(((ownCpu() - c) * 1e6) / N),
      eventsPerSec: Math.round(N / ((performance.now() - t) / 1000)),
    };
  };
  // The worker's check since checkStoredEvent: parsePlanEvent's verdict, fast rules on valid events.
  return { parsePlanEvent: time((r) => parsePlanEvent(r)), checkStoredEvent: time((r) => checkStoredEvent(r)) };
}

const writesLine = (r: Pick<PersistRun, 'writes'>) => {
  const w = r.writes;
  if (!w) return '';
  const pg =
    'walBytesPerEvent' in w
      ? `, ${w.walBytesPerEvent} WAL bytes; checkpoint rows per checkpoint event ${w.checkpointRowsPerCheckpointEvent}; rows by others on the server ${w.otherRowsOnServer}`
      : '';
  return `; written per event: ${w.rowsPerEvent} rows${pg}`;
};

async function main(): Promise<void> {
  if (opts.flag('private-pg')) await rerunOnPrivatePostgres();
  const loadBefore = os.loadavg().map((l) => round(l));
  const checks = only.has('check') && !skipParse ? contractChecks() : null;
  if (checks)
    out(
      `contract check per event: parsePlanEvent ${checks.parsePlanEvent.usPerEvent} us, checkStoredEvent ${checks.checkStoredEvent.usPerEvent} us`,
    );
  const grouped = only.has('grouped') ? await groupedPersist(DB, N, BATCH, IN_FLIGHT) : null;
  if (grouped)
    out(
      `grouped (${DB}): ${grouped.eventsPerSec} events/s (${grouped.events} events, batches of ${BATCH}, ${IN_FLIGHT} in flight; CPU us/event node ${grouped.nodeCpuUsPerEvent}, server ${grouped.serverCpuUsPerEvent})${writesLine(grouped)}`,
    );
  const interleaved = only.has('interleaved')
    ? await interleavedPersist(DB, { plans: PLANS, history: HISTORY, batch: BATCH, inFlight: IN_FLIGHT })
    : null;
  if (interleaved) {
    out(
      `interleaved (${DB}): ${interleaved.eventsPerSec} events/s (${interleaved.plans} plans x 10 round-robin on ${interleaved.history.events} events of history; CPU us/event node ${interleaved.nodeCpuUsPerEvent}, server ${interleaved.serverCpuUsPerEvent})${writesLine(interleaved)}; end state ${interleaved.check.ok ? 'correct' : 'WRONG'}`,
    );
  }
  const long = only.has('long')
    ? await longPlanTrickle(DB, {
        steps: LONG_STEPS,
        batch: LONG_BATCH,
        maxEvents: LONG_MAX + 150,
        progress: json ? undefined : log,
      })
    : null;
  if (long) {
    out(
      `long plan (${DB}): ${long.steps} steps, ${long.storedEvents} of ${long.planEvents} events stored in batches of ${long.batch} in ${long.seconds} s${writesLine(long)}`,
    );
    for (const p of long.points)
      out(
        `  at ${p.storedEvents} stored events: ${p.msPerBatch} ms per batch (min ${p.minMs}, max ${p.maxMs}, ${p.batches} batches)`,
      );
    out(`  reference: a ${long.batch}-event batch of short plans ${long.referenceMsPerBatch} ms`);
    out(
      `  ratio 20k/1k ${long.ratio20kTo1k ?? 'not measured'}${long.ratioLastTo1k ? `; ${long.ratioLastTo1k.point}/1k ${long.ratioLastTo1k.ratio}` : ''}${long.ratioLastToReference ? `; ${long.ratioLastToReference.point}/reference ${long.ratioLastToReference.ratio}` : ''}`,
    );
  }
  const ratios = {
    interleavedVsGrouped: grouped && interleaved ? round(interleaved.eventsPerSec / grouped.eventsPerSec) : null,
    longPlan20kVs1k: long?.ratio20kTo1k ?? null,
  };
  const cp = (w?: PersistRun['writes']) =>
    w && 'checkpointRowsPerCheckpointEvent' in w ? w.checkpointRowsPerCheckpointEvent! : null;
  const targets = {
    longPlan20kAtMost2x1k: ratios.longPlan20kVs1k === null ? null : ratios.longPlan20kVs1k <= 2,
    longPlanCheckpointsWrittenOnce: cp(long?.writes) === null ? null : cp(long?.writes)! <= 1,
    interleavedCheckpointsWrittenOnce: cp(interleaved?.writes) === null ? null : cp(interleaved?.writes)! <= 1,
  };
  out(
    `ratios: ${Object.entries(ratios)
      .map(([k, v]) => `${k} ${v ?? 'not measured'}`)
      .join('; ')}`,
  );
  out(
    `targets: ${Object.entries(targets)
      .map(([k, v]) => `${k} ${v === null ? 'not measured' : v ? 'MET' : 'NOT MET'}`)
      .join('; ')}`,
  );
  const result = {
    command:
      `npm run bench:store -- ${[...(process.env.BENCH_PRIVATE_PG ? ['--private-pg'] : []), ...process.argv.slice(2)].join(' ')}`.trim(),
    db: DB,
    postgresServer: DB === 'postgres' ? postgresServer() : undefined,
    // the existing figures: contract checks (null with --no-parse) and `persist` = grouped
    events: N,
    batch: BATCH,
    inFlight: IN_FLIGHT,
    parsePlanEvent: checks?.parsePlanEvent ?? null,
    checkStoredEvent: checks?.checkStoredEvent ?? null,
    persist: grouped,
    interleaved,
    longPlan: long ? { pointsAt: LONG_PLAN_POINTS, ...long } : null,
    ratios,
    targets,
    loadAverage: loadBefore,
    loadAverageAfter: os.loadavg().map((l) => round(l)),
  };
  if (json) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`bench:store failed: ${(err as Error).stack ?? err}\n`);
    process.exit(1);
  },
);
