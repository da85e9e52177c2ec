/**
 * `npm run bench:e2e` (`-- --help` lists the options; `-- --json` prints one JSON object;
 * `-- --quick` runs every scenario at reduced sizes; `-- --only a,b` runs some scenarios).
 *
 * In one run on this machine, against a redis-server of its own and the local PostgreSQL (a fresh
 * schema per scenario) / a fresh SQLite file:
 * - baselines: raw multi-row INSERTs of plan_events rows on one PostgreSQL connection (the limit),
 *   and plain BullMQ with one job per event and one INSERT per job (concurrency 10), on PostgreSQL
 *   and on SQLite;
 * - grouped: sustained publish-to-commit events/s, real PlanEventPublisher -> real `plan-ledger
 *   worker` process -> PostgreSQL (one worker process, then two), then SQLite, events grouped plan
 *   by plan as the factory emits them, with the CPU each party used per event;
 * - interleaved: 10,000 plans x 10 events published round-robin on top of 400k events of
 *   history, PostgreSQL and SQLite, with rows and WAL bytes written per event (PostgreSQL);
 * - two workers: the interleaved scenario with two worker processes (out-of-order commits);
 * - mixed: one 20k-event plan trickling 10 events/s among 2,000 events/s of short plans: commit lag;
 * - publish-to-commit latency p50/p99 at 1k events/s (PostgreSQL);
 * - the worker's RSS with a backlog of 1M events (100k with --quick), with the worker's default
 *   settings and with V8's own heap growth (WORKER_HEAP_GROWING_PERCENT=0) for comparison;
 * - cluster (`--cluster` runs it alone, or add it with --only): the grouped PostgreSQL run on the
 *   single redis-server, then on a 3-master Redis Cluster started for the run: QUEUE_SHARDS=1
 *   against 6, grouped and interleaved traffic, 1 and 2 worker processes (same {hash tag} prefix
 *   shape, size and seed), with each master's CPU; two workers pinned to three shards each; and the
 *   grouped pair through the publisher's spill journal (a memory of 1,000 events), as after an
 *   outage. `--cluster-cells` picks cells, `--cluster-repeat N` runs each N times (ratios of medians).
 * - approvals: grouped and interleaved PostgreSQL runs of the same events without, then with one
 *   webhook subscription (a local receiver) and an approval requested and decided on 10 % of the
 *   plans (bench/support/e2e-approvals.ts).
 * Targets: (grouped PG >= 5x plain BullMQ and >= 50% of raw inserts; p99 <= 250 ms at
 * 1k/s; worker RSS <= 250 MB with a 1M backlog) and the store's (see e2e-targets.ts).
 */
import 'reflect-metadata';
import * as fs from 'node:fs';
import * as os from 'node:os';
import { RedisProcess } from '../test/publisher/support/redis-process';
import { RedisCluster } from '../test/support/redis-cluster';
import { exactlyEvents } from '../test/support/event-factory';
import { shardOfPlan } from '../src/queue/queue-shards';
import { BenchOptions } from './support/cli-options';
import { postgresServer, rerunOnPrivatePostgres } from './support/private-postgres';
import { round } from './support/latency';
import {
  backlogRss,
  BenchContext,
  latencyAtRate,
  plainBullmq,
  rawMultiRowInsert,
  sustained,
  SustainedResult,
} from './support/e2e-scenarios';
import { compileWorker } from './support/e2e-processes';
import { interleaved, InterleavedResult } from './support/e2e-interleaved';
import { mixed } from './support/e2e-mixed';
import { approvalsOverhead } from './support/e2e-approvals';
import { E2eFigures, machine, ratiosAndTargets } from './support/e2e-targets';

const SCENARIOS = [
  'raw',
  'plain',
  'grouped',
  'interleaved',
  'two-workers',
  'mixed',
  'latency',
  'backlog',
  'cluster',
  'approvals',
] as const;
/** Cells of the cluster scenario: traffic and worker processes, or two workers pinned to three shards each. */
const CLUSTER_CELLS = [
  'grouped-1',
  'grouped-2',
  'interleaved-1',
  'interleaved-2',
  'pinned-grouped',
  'pinned-interleaved',
  'journal-grouped',
] as const;
const opts = new BenchOptions(
  'npm run bench:e2e -- [options]: end-to-end throughput, latency and memory (see BENCHMARKS.md)',
  [
    { name: 'json', help: 'print one JSON object with every figure, ratio and target' },
    { name: 'private-pg', help: 'a PostgreSQL server of its own (server-wide WAL bytes of this run alone)' },
    { name: 'quick', help: 'every scenario at reduced sizes (a few minutes)' },
    {
      name: 'profile',
      help: 'V8 CPU profile of the worker during the one-worker grouped and interleaved runs (PostgreSQL and SQLite)',
    },
    { name: 'only', value: 'list', help: `scenarios to run, comma-separated: ${SCENARIOS.join(',')} (default all)` },
    {
      name: 'cluster',
      help: 'the cluster scenario alone: events/s on a 3-master Redis Cluster beside the single Redis',
    },
    { name: 'cluster-events', value: 'N', help: 'cluster: events per run (default 200000; quick 50000)' },
    {
      name: 'cluster-cells',
      value: 'list',
      help: `cluster: the cells to run, comma-separated: ${CLUSTER_CELLS.join(',')} (default all; each 1- and 6-shard pair back to back)`,
    },
    {
      name: 'cluster-repeat',
      value: 'N',
      help: 'cluster: run each cell N times, the pair in alternating order; ratios of the medians (default 1)',
    },
    {
      name: 'history',
      value: 'N',
      help: 'events of history under interleaved / two-workers (default 400000; quick 40000)',
    },
    { name: 'plans', value: 'N', help: 'interleaved plans of 10 events (default 10000; quick 1000)' },
    { name: 'approvals-events', value: 'N', help: 'approvals: events per run (default 200000; quick 50000)' },
    {
      name: 'approvals-repeat',
      value: 'N',
      help: 'approvals: run each variant N times, in rotated order; figures of the median runs (default 1)',
    },
    { name: 'mixed-seconds', value: 'N', help: 'mixed: publishing window (default 30; quick 10)' },
    {
      name: 'mixed-stored',
      value: 'N',
      help: 'mixed: long-plan events stored before the window (default 20000; quick 5000)',
    },
  ],
);
const json = opts.flag('json');
const quick = opts.flag('quick');
const profile = opts.flag('profile');
const only = opts.flag('cluster') && !opts.flag('only') ? new Set<string>(['cluster']) : opts.list('only', SCENARIOS);
const N_RAW = quick ? 50_000 : 200_000;
const N_PLAIN = quick ? 10_000 : 30_000;
const N_E2E = quick ? 50_000 : 200_000;
const LATENCY_SECONDS = quick ? 10 : 20;
const BACKLOG = quick ? 100_000 : 1_000_000;
const BACKLOG_WATCH_SECONDS = quick ? 10 : 30;
const HISTORY = opts.number('history', quick ? 40_000 : 400_000);
const PLANS = opts.number('plans', quick ? 1_000 : 10_000);
const MIXED_SECONDS = opts.number('mixed-seconds', quick ? 10 : 30);
const MIXED_STORED = opts.number('mixed-stored', quick ? 5_000 : 20_000);
const N_APPROVALS = opts.number('approvals-events', quick ? 50_000 : 200_000);
const APPROVALS_REPEAT = opts.number('approvals-repeat', 1);
const N_CLUSTER = opts.number('cluster-events', quick ? 50_000 : 200_000);
const CELLS = opts.list('cluster-cells', CLUSTER_CELLS);
const CLUSTER_REPEAT = opts.number('cluster-repeat', 1);

/**
 * What routing by plan id or by session id does to the busiest shard: the bench's events (one plan
 * per session as the factory makes them) regrouped into sessions whose plan counts follow Zipf's
 * law (s = 1.1 over 2,000 sessions: a few long sessions, many short ones), as agent traffic has.
 */
function shardKeyBalance(events: number, shards: number) {
  const plans = [...new Set(exactlyEvents(events, { seed: 916 }).map((e) => e.planId))];
  const sessions = 2_000;
  const weights = Array.from({ length: sessions }, (_, i) => 1 / (i + 1) ** 1.1);
  const total = weights.reduce((a, b) => a + b, 0);
  const sessionOf: string[] = [];
  let next = 0;
  weights.forEach((w, i) => {
    const n = i === sessions - 1 ? plans.length - next : Math.round((w / total) * plans.length);
    for (let k = 0; k < n && next < plans.length; k++) sessionOf[next++] = `sess-${i}`;
  });
  const byPlan = new Array<number>(shards).fill(0);
  const bySession = new Array<number>(shards).fill(0);
  const perPlan = events / plans.length;
  plans.forEach((plan, i) => {
    byPlan[shardOfPlan(plan, shards)] += perPlan;
    bySession[shardOfPlan(sessionOf[i] ?? plan, shards)] += perPlan;
  });
  return {
    events,
    plans: plans.length,
    sessions,
    busiestShareByPlan: round(byPlan.reduce((a, b) => Math.max(a, b)) / events),
    busiestShareBySession: round(bySession.reduce((a, b) => Math.max(a, b)) / events),
  };
}

function log(line: string): void {
  if (!json) process.stdout.write(`${line}\n`);
}

function logShardRun(r: SustainedResult): void {
  const who = `${r.workers} worker${r.workers > 1 ? 's' : ''}${r.workerShards ? ` pinned (WORKER_SHARDS ${r.workerShards.join(' / ')})` : ''}${r.viaJournal ? ', through the publisher journal' : ''}`;
  log(
    `  3-master cluster, ${r.traffic}, ${who}, QUEUE_SHARDS=${r.queueShards}: ${r.eventsPerSec} events/s (${r.jobs} jobs, ${r.batches} transactions of ~${r.eventsPerBatch} events, ${r.spilled} spilled to the journal, gap waits ${r.gapWaits}, plans rebuilt ${r.rebuilt}); busiest master ${r.busiestMasterCpuShare} of Redis CPU; CPU us/event: ${cpuLine(r.cpuUsPerEvent)}`,
  );
}

const cpuLine = (u: Record<string, number>) =>
  Object.entries(u)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');

function logInterleaved(label: string, r: InterleavedResult): void {
  const c = r.commits;
  log(
    `${label}: ${r.eventsPerSec} events/s (${r.plans} plans x ${r.eventsPerPlan} round-robin = ${r.events} events in ${r.seconds} s, over ${r.history.events} events of history loaded at ${r.history.eventsPerSec}/s; ${c.batches} transactions of ~${c.eventsPerBatch} events / ~${c.plansPerBatch} plans, commit p50 ${c.commitMsP50} ms p99 ${c.commitMsP99} ms; worker RSS peak ${r.workerRssPeakMb} MB)`,
  );
  log(
    `  CPU us/event: ${cpuLine(r.cpuUsPerEvent)}; ${r.busyCores} cores busy; end state ${r.check.ok ? 'correct' : `WRONG ${JSON.stringify(r.check)}`}`,
  );
  if (r.writes) {
    const w = r.writes;
    log(
      `  written per event: ${w.rowsPerEvent} rows, ${w.walBytesPerEvent} WAL bytes; workflow_checkpoints rows per checkpoint event ${w.checkpointRowsPerCheckpointEvent}; rows written by others on the server meanwhile: ${w.otherRowsOnServer}`,
    );
    log(
      `  rows by table (ins/upd/del): ${Object.entries(w.byTable)
        .map(([t, n]) => `${t} ${n.ins}/${n.upd}/${n.del}`)
        .join(', ')}`,
    );
  }
  logProfile(r.profile, 15);
}

/** A worker's CPU profile as the bench prints it: the share of each area, then the `top` costliest functions. */
function logProfile(profile: SustainedResult['profile'], top: number): void {
  if (!profile) return;
  log(
    `  worker CPU profile (${profile.totalMs} ms sampled): ${profile.byArea.map((a) => `${a.area} ${a.pct}%`).join(', ')}`,
  );
  for (const fn of profile.top.slice(0, top)) log(`    ${String(fn.pct).padStart(5)}%  ${fn.fn}  ${fn.where}`);
}

async function runRaw(_ctx: BenchContext, f: E2eFigures): Promise<void> {
  const raw = (f.rawMultiRowInsert = await rawMultiRowInsert(N_RAW, 901));
  log(
    `raw multi-row INSERT (${raw.rowsPerInsert} rows/statement, 1 PG connection): ${raw.eventsPerSec} rows/s (${raw.events} rows in ${raw.seconds} s)`,
  );
}

async function runPlain(ctx: BenchContext, f: E2eFigures): Promise<void> {
  const plain = (f.plainBullmq = await plainBullmq(ctx, N_PLAIN, 902));
  log(
    `plain BullMQ, 1 job/event, 1 INSERT/job, concurrency 10: ${plain.eventsPerSec} events/s (${plain.events} in ${plain.seconds} s)`,
  );
  const plainSqlite = (f.plainBullmqSqlite = await plainBullmq(ctx, N_PLAIN, 909, 'sqlite'));
  log(
    `plain BullMQ on SQLite, same: ${plainSqlite.eventsPerSec} events/s (${plainSqlite.events} in ${plainSqlite.seconds} s)`,
  );
}

async function runGrouped(ctx: BenchContext, f: E2eFigures): Promise<void> {
  const pg = (f.e2ePostgres = await sustained(ctx, 'postgres', N_E2E, 903, { profile }));
  log(
    `e2e PostgreSQL: ${pg.eventsPerSec} events/s (${pg.events} in ${pg.seconds} s; ${pg.batches} transactions of ~${pg.eventsPerBatch} events; worker RSS peak ${pg.workerRssPeakMb} MB; rows ${pg.rowsStored})`,
  );
  log(`  CPU us/event: ${cpuLine(pg.cpuUsPerEvent)}; ${pg.busyCores} cores busy`);
  logProfile(pg.profile, 10);
  // Scale-out on the same 2 cores: shows whether one worker process or the machine is the limit.
  const pg2 = (f.e2ePostgresTwoWorkers = await sustained(ctx, 'postgres', N_E2E, 908, { workers: 2 }));
  log(
    `e2e PostgreSQL, 2 worker processes: ${pg2.eventsPerSec} events/s (${pg2.events} in ${pg2.seconds} s); CPU us/event: ${cpuLine(pg2.cpuUsPerEvent)}; ${pg2.busyCores} cores busy`,
  );
  const sqlite = (f.e2eSqlite = await sustained(ctx, 'sqlite', N_E2E, 904, { profile }));
  log(
    `e2e SQLite:     ${sqlite.eventsPerSec} events/s (${sqlite.events} in ${sqlite.seconds} s; ${sqlite.batches} transactions of ~${sqlite.eventsPerBatch} events; worker RSS peak ${sqlite.workerRssPeakMb} MB; rows ${sqlite.rowsStored})`,
  );
  log(`  CPU us/event: ${cpuLine(sqlite.cpuUsPerEvent)}; ${sqlite.busyCores} cores busy`);
  logProfile(sqlite.profile, 10);
}

/** One interleaved run over PLANS plans on HISTORY events of history, logged under `label`. */
async function interleavedRun(
  ctx: BenchContext,
  label: string,
  database: 'postgres' | 'sqlite',
  more: { seed: number; workers?: number; profile?: boolean },
): Promise<InterleavedResult> {
  const r = await interleaved(ctx, database, { plans: PLANS, history: HISTORY, ...more });
  logInterleaved(label, r);
  return r;
}

async function runInterleaved(ctx: BenchContext, f: E2eFigures): Promise<void> {
  f.interleavedPostgres = await interleavedRun(ctx, 'interleaved PostgreSQL', 'postgres', { seed: 911, profile });
  f.interleavedSqlite = await interleavedRun(ctx, 'interleaved SQLite', 'sqlite', { seed: 912, profile });
}

async function runTwoWorkers(ctx: BenchContext, f: E2eFigures): Promise<void> {
  f.interleavedPostgresTwoWorkers = await interleavedRun(
    ctx,
    'interleaved PostgreSQL, 2 worker processes',
    'postgres',
    {
      workers: 2,
      seed: 913,
    },
  );
}

async function runMixed(ctx: BenchContext, f: E2eFigures): Promise<void> {
  const m = (f.mixed = await mixed(ctx, {
    longStored: MIXED_STORED,
    longRate: 10,
    shortRate: 2_000,
    seconds: MIXED_SECONDS,
    warmupSeconds: quick ? 2 : 3,
    seed: 914,
  }));
  log(
    `mixed (PG): a ${m.longPlanStepCount}-step plan with ${m.longPlanStoredBefore} events stored (in ${m.longPlanPreloadSeconds} s) trickling ${m.longRatePerSec}/s among ${m.shortRatePerSec}/s of 10-event plans for ${m.seconds} s (${m.published.long} + ${m.published.short} events, ${m.jobs} jobs)`,
  );
  log(
    `  commit lag (after ${m.warmupSeconds} s warm-up): p50 ${m.lag.p50Ms} ms  p90 ${m.lag.p90Ms}  p99 ${m.lag.p99Ms}  max ${m.lag.maxMs} (${m.lag.events} events); long plan's events: p50 ${m.lagLongPlan.p50Ms} ms  p99 ${m.lagLongPlan.p99Ms}  max ${m.lagLongPlan.maxMs} (${m.lagLongPlan.events})`,
  );
  log(
    `  ${m.commits.batches} transactions of ~${m.commits.eventsPerBatch} events, commit p50 ${m.commits.commitMsP50} ms p99 ${m.commits.commitMsP99} ms max ${m.commits.commitMsMax}; last commit ${m.drainAfterWindowSeconds} s after the window`,
  );
}

async function runLatency(ctx: BenchContext, f: E2eFigures): Promise<void> {
  const latency = (f.latencyAt1kPerSec = await latencyAtRate(ctx, 1_000, LATENCY_SECONDS, 905));
  log(
    `latency at ${latency.ratePerSec} events/s (PG, ${latency.measuredEvents} events): p50 ${latency.p50Ms} ms  p90 ${latency.p90Ms} ms  p99 ${latency.p99Ms} ms  max ${latency.maxMs} ms (${latency.jobs} jobs)`,
  );
}

async function runBacklog(ctx: BenchContext, f: E2eFigures): Promise<void> {
  const backlog = (f.backlog = await backlogRss(ctx, BACKLOG, BACKLOG_WATCH_SECONDS, 906));
  log(
    `backlog ${backlog.backlogEvents} events (Redis ${backlog.redisUsedMemoryMb} MB): worker RSS peak ${backlog.workerRssPeakMb} MB over ${backlog.watchedSeconds} s (at start ${backlog.workerRssAtStartMb} MB), drained ${backlog.drainedEvents} events at ${backlog.drainEventsPerSec}/s`,
  );
  // The same with V8's own heap growth (WORKER_HEAP_GROWING_PERCENT=0): what the setting buys.
  const v8Default = await backlogRss(ctx, BACKLOG, BACKLOG_WATCH_SECONDS, 907, {
    WORKER_HEAP_GROWING_PERCENT: '0',
  });
  f.backlogWithV8DefaultHeapGrowth = { env: 'WORKER_HEAP_GROWING_PERCENT=0', ...v8Default };
  log(
    `  with V8's default heap growth (WORKER_HEAP_GROWING_PERCENT=0): worker RSS peak ${v8Default.workerRssPeakMb} MB (at start ${v8Default.workerRssAtStartMb} MB), drained ${v8Default.drainedEvents} events at ${v8Default.drainEventsPerSec}/s`,
  );
}

async function runCluster(ctx: BenchContext, f: E2eFigures): Promise<void> {
  const cluster = await RedisCluster.start();
  try {
    // the grouped run on the single redis-server first: the baseline of the cluster's cost
    const single = (f.clusterBaselineSingleRedis = await sustained(ctx, 'postgres', N_CLUSTER, 915, {
      hashTag: true,
    }));
    log(`cluster: single redis-server ${single.eventsPerSec} events/s (grouped, 1 worker, ${N_CLUSTER} events)`);
    const key = (f.clusterShardKey = shardKeyBalance(N_CLUSTER, 6));
    log(
      `  shard key over ${key.events} events of ${key.plans} plans in ${key.sessions} sessions (Zipf): busiest of 6 shards holds ${key.busiestShareByPlan} of the events by plan id, ${key.busiestShareBySession} by session id (even: ${round(1 / 6)})`,
    );
    const runs: SustainedResult[] = [];
    for (let pass = 0; pass < CLUSTER_REPEAT; pass++)
      for (const cell of CLUSTER_CELLS) {
        if (!CELLS.has(cell)) continue;
        for (const variant of clusterVariants(cell, pass)) {
          const r = await sustained(ctx, 'postgres', N_CLUSTER, 916, { cluster, ...variant });
          runs.push(r);
          logShardRun(r);
        }
      }
    f.clusterShards = runs;
    f.e2ePostgresOnCluster = runs.find((r) => r.traffic === 'grouped' && r.workers === 1 && r.queueShards === 1);
  } finally {
    await cluster.destroy();
  }
}

async function runApprovals(ctx: BenchContext, f: E2eFigures): Promise<void> {
  f.approvals = await approvalsOverhead(ctx, N_APPROVALS, 917, { profile, repeat: APPROVALS_REPEAT });
  for (const p of f.approvals) {
    log(
      `approvals (PG, ${p.traffic}): without ${p.without.eventsPerSec} events/s (${p.without.events} in ${p.without.seconds} s), with a webhook subscription and approvals on ${p.approvalPlans} plans ${p.with.eventsPerSec} events/s (${p.with.events} in ${p.with.seconds} s): ${p.ratioEventsPerSec}x events/s, ${p.ratioPlansPerSec}x plans/s (median of ${p.repeat} back-to-back pairs; ${p.ratioPlansPerSecOfMedians}x of the median times, ${p.ratioPlansPerSecOfMeans}x of the means); worker CPU per event ${p.workerCpuRatio}x; ${p.webhooksReceived} webhooks received by the last commit, all ${p.webhooksReceivedAll} ${p.webhooksAfterLastCommitSeconds} s after it (worker CPU ${p.webhooksAfterLastCommitWorkerCpuUsPerEvent} us/event in that time; ${p.webhooksUnverified} unverified)`,
    );
    log(
      `  plans rebuilt: without ${p.without.rebuilt}, with both ${p.with.rebuilt}, approvals only ${p.approvalsOnly.rebuilt}`,
    );
    log(
      `  alone: approvals ${p.ratioPlansPerSecApprovalsOnly}x plans/s (${p.approvalsOnly.seconds} s), the webhook subscription ${p.ratioPlansPerSecWebhookOnly}x (${p.webhookOnly.seconds} s); seconds of each run: ${Object.entries(
        p.secondsByRun,
      )
        .map(([k, v]) => `${k} ${v.join('/')}`)
        .join(', ')}`,
    );
    for (const [label, r] of [
      ['without', p.without],
      ['with both', p.with],
      ['approvals only', p.approvalsOnly],
      ['webhook only', p.webhookOnly],
    ] as const) {
      log(`  CPU us/event ${label}: ${cpuLine(r.cpuUsPerEvent)}; ${r.busyCores} cores busy`);
      if (r.profile)
        log(
          `    worker CPU profile (${r.profile.totalMs} ms sampled): ${r.profile.byArea.map((a) => `${a.area} ${a.pct}%`).join(', ')}; top: ${r.profile.top
            .slice(0, 6)
            .map((fn) => `${fn.fn} ${fn.pct}%`)
            .join(', ')}`,
        );
    }
  }
}

/** The runs of one cluster cell in one pass: traffic, worker processes, queue shards and pinning. */
function clusterVariants(cell: (typeof CLUSTER_CELLS)[number], pass: number) {
  const [kind, arg] = cell.split('-');
  const interleaved = (kind === 'pinned' || kind === 'journal' ? arg : kind) === 'interleaved';
  // journal: grouped, 1 worker, the publisher's memory too small for the stream (as after an outage)
  const viaJournal = kind === 'journal';
  // two workers pinned to three shards each: a plan's events never reach both processes;
  // else 1 and 6 shards back to back, same seed (6 first in every other round): the pair is compared
  return kind === 'pinned'
    ? [{ interleaved, workers: 2, queueShards: 6, workerShards: ['0-2', '3-5'] }]
    : (pass % 2 ? [6, 1] : [1, 6]).map((queueShards) => ({
        interleaved,
        workers: viaJournal ? 1 : Number(arg),
        queueShards,
        viaJournal,
      }));
}

/** The scenarios' runs, in the order they run. */
const RUNS: Record<(typeof SCENARIOS)[number], (ctx: BenchContext, f: E2eFigures) => Promise<void>> = {
  raw: runRaw,
  plain: runPlain,
  grouped: runGrouped,
  interleaved: runInterleaved,
  'two-workers': runTwoWorkers,
  mixed: runMixed,
  latency: runLatency,
  backlog: runBacklog,
  cluster: runCluster,
  approvals: runApprovals,
};

/** The ratios, targets and checks as lines, and with --json the whole result as one object. */
function report(f: E2eFigures, o: { workerNote: string; loadBefore: number[] }): void {
  const { ratios, targets, checks, note } = ratiosAndTargets(f, { quick, plans: PLANS, history: HISTORY });
  const line = (label: string, entries: Record<string, unknown>, show: (v: unknown) => string) =>
    log(
      `${label}: ${Object.entries(entries)
        .map(([k, v]) => `${k} ${show(v)}`)
        .join('; ')}`,
    );
  line('ratios', ratios, (v) => `${v ?? 'not measured'}`);
  line('targets', targets, (v) => (v === null ? 'not measured' : v ? 'MET' : 'NOT MET'));
  line('checks', checks, (v) => (v === null ? 'not run' : v ? 'ok' : 'FAILED'));
  if (note) log(`note: ${note}`);
  // a --private-pg run is this script re-run as a child without the flag
  const args = [
    ...(process.env.BENCH_PRIVATE_PG ? ['--private-pg'] : []),
    ...process.argv.slice(2).filter((a) => a !== '--json'),
  ].join(' ');
  const result = {
    machine: { ...machine(), loadAverageBefore: o.loadBefore, loadAverageAfter: os.loadavg().map((l) => round(l)) },
    command: `npm run bench:e2e --${args ? ` ${args}` : ''} --json`,
    postgresServer: postgresServer(),
    publisher: 'PlanEventPublisher (src/publisher), default options (500 events per job)',
    worker: o.workerNote,
    ...f,
    ratios,
    targets,
    checks,
    ...(note ? { note } : {}),
  };
  if (json) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
}

async function main(): Promise<void> {
  if (opts.flag('private-pg')) await rerunOnPrivatePostgres();
  const redis = await RedisProcess.create();
  await redis.start();
  const loadBefore = os.loadavg().map((l) => round(l));
  let buildDir: string | undefined;
  const f: E2eFigures = {};
  try {
    log(
      `e2e bench${quick ? ' (quick)' : ''}: redis-server on port ${redis.port}; load average ${loadBefore.join(' ')}; scenarios ${[...only].join(', ')}`,
    );
    const build = compileWorker();
    buildDir = build.dir;
    log(build.note);
    const ctx: BenchContext = { redis, workerMain: build.main };
    for (const scenario of SCENARIOS) if (only.has(scenario)) await RUNS[scenario](ctx, f);
    report(f, { workerNote: build.note, loadBefore });
  } finally {
    await redis.destroy();
    if (buildDir) fs.rmSync(buildDir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`bench:e2e failed: ${(err as Error).stack ?? err}\n`);
    process.exit(1);
  },
);
