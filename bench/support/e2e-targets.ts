/**
 * Ratios and targets of `npm run bench:e2e`, every ratio between figures of the same run. A target
 * is true (met), false (not met) or null (a figure it needs was not measured in this run).
 *
 * Issue 4: grouped PG >= 5x plain BullMQ and >= 0.5x raw multi-row INSERT; latency p99 <= 250 ms
 * at 1k events/s; worker RSS <= 250 MB with a 1M backlog.
 * Issue 11: interleaved (10,000 plans at a time) >= 0.7x the grouped events/s and >= 3x plain
 * BullMQ, on PostgreSQL and on SQLite (each against its own database's grouped run and plain
 * baseline); mixed commit lag p99 <= 1 s (all events, and the long plan's alone); checkpoints
 * written once (workflow_checkpoints rows written per checkpoint event <= 1, PostgreSQL).
 * Issue 17: grouped PG on a 3-master Redis Cluster >= 0.8x the same on the single redis-server.
 * Issue 34: on the cluster, with QUEUE_SHARDS=6 the busiest master's share of the masters' CPU
 * <= 0.5, and events/s >= 0.9x the QUEUE_SHARDS=1 run of the same traffic and workers.
 * Issue 45: with one webhook subscription and approvals on 10 % of plans, grouped and interleaved
 * PostgreSQL plans/s >= 0.9x the same events without them.
 */
import { execFileSync } from 'node:child_process';
import * as os from 'node:os';
import type { BacklogResult, BaselineResult, LatencyResult, SustainedResult } from './e2e-scenarios';
import type { InterleavedResult } from './e2e-interleaved';
import type { MixedResult } from './e2e-mixed';
import type { ApprovalsPair } from './e2e-approvals';
import { round } from './latency';

export interface E2eFigures {
  rawMultiRowInsert?: BaselineResult & { rowsPerInsert: number };
  plainBullmq?: BaselineResult;
  plainBullmqSqlite?: BaselineResult;
  e2ePostgres?: SustainedResult;
  e2ePostgresTwoWorkers?: SustainedResult;
  e2eSqlite?: SustainedResult;
  interleavedPostgres?: InterleavedResult;
  interleavedSqlite?: InterleavedResult;
  interleavedPostgresTwoWorkers?: InterleavedResult;
  mixed?: MixedResult;
  latencyAt1kPerSec?: LatencyResult;
  backlog?: BacklogResult;
  backlogWithV8DefaultHeapGrowth?: BacklogResult & { env: string };
  /**
   * --cluster: the grouped PostgreSQL run on the single redis-server, then on the cluster (same prefix shape, size,
   * seed).
   */
  clusterBaselineSingleRedis?: SustainedResult;
  e2ePostgresOnCluster?: SustainedResult;
  /** --cluster: QUEUE_SHARDS 1 and 6, grouped and interleaved, 1 and 2 workers, in the order they ran. */
  clusterShards?: SustainedResult[];
  /** --cluster: the busiest of 6 shards' share of the events, routed by plan id and by session id. */
  clusterShardKey?: {
    events: number;
    plans: number;
    sessions: number;
    busiestShareByPlan: number;
    busiestShareBySession: number;
  };
  /** approvals: grouped and interleaved, without and with a webhook subscription and approvals on 10 % of plans. */
  approvals?: ApprovalsPair[];
}

/** --cluster: per traffic and worker count, 6 shards against 1 (`grouped1w`...). */
const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

/**
 * The cluster runs by cell (`grouped1w`, ...): 6 shards against 1, and 6 pinned against 1 with the
 * same traffic and workers. With --cluster-repeat each side is the median of its runs' events/s,
 * and the busiest master's share the highest of the 6-shard runs.
 */
function shardPairs(runs: SustainedResult[] = [], pinned = false) {
  const pairs: Record<string, { one: { eventsPerSec: number }; six: { eventsPerSec: number; busiest?: number } }> = {};
  const sameCell = (a: SustainedResult, b: SustainedResult) =>
    a.traffic === b.traffic && a.workers === b.workers && !!a.viaJournal === !!b.viaJournal;
  for (const six of runs.filter((r) => r.queueShards === 6 && !!r.workerShards === pinned)) {
    const key = `${six.traffic}${six.workers}w${six.viaJournal ? '_journal' : ''}`;
    if (pairs[key]) continue;
    const ones = runs.filter((r) => r.queueShards === 1 && sameCell(r, six));
    const sixes = runs.filter((r) => r.queueShards === 6 && !!r.workerShards === pinned && sameCell(r, six));
    if (ones.length === 0) continue;
    const shares = sixes.flatMap((r) => (r.busiestMasterCpuShare === undefined ? [] : [r.busiestMasterCpuShare]));
    pairs[key] = {
      one: { eventsPerSec: median(ones.map((r) => r.eventsPerSec)) },
      six: {
        eventsPerSec: median(sixes.map((r) => r.eventsPerSec)),
        busiest: shares.length ? shares.reduce((a, b) => Math.max(a, b)) : undefined,
      },
    };
  }
  return pairs;
}

const ratio = (a?: { eventsPerSec: number }, b?: { eventsPerSec: number }) =>
  a && b ? round(a.eventsPerSec / b.eventsPerSec) : null;
const atLeast = (value: number | null, min: number) => (value === null ? null : value >= min);
const atMost = (value: number | null | undefined, max: number) =>
  value === null || value === undefined ? null : value <= max;

export function ratiosAndTargets(f: E2eFigures, run: { quick: boolean; plans: number; history: number }) {
  const ratios = {
    pgVsPlainBullmq: ratio(f.e2ePostgres, f.plainBullmq),
    pgVsRawInsert: ratio(f.e2ePostgres, f.rawMultiRowInsert),
    sqliteVsPlainBullmq: ratio(f.e2eSqlite, f.plainBullmq),
    sqliteVsPlainBullmqSqlite: ratio(f.e2eSqlite, f.plainBullmqSqlite),
    interleavedPgVsGroupedPg: ratio(f.interleavedPostgres, f.e2ePostgres),
    interleavedPgVsPlainBullmq: ratio(f.interleavedPostgres, f.plainBullmq),
    interleavedSqliteVsGroupedSqlite: ratio(f.interleavedSqlite, f.e2eSqlite),
    interleavedSqliteVsPlainBullmqSqlite: ratio(f.interleavedSqlite, f.plainBullmqSqlite),
    interleavedSqliteVsPlainBullmq: ratio(f.interleavedSqlite, f.plainBullmq),
    interleavedTwoWorkersVsOneWorker: ratio(f.interleavedPostgresTwoWorkers, f.interleavedPostgres),
    clusterVsSingleRedis: ratio(f.e2ePostgresOnCluster, f.clusterBaselineSingleRedis),
    ...Object.fromEntries((f.approvals ?? []).map((p) => [`approvalsVsWithout_${p.traffic}`, p.ratioPlansPerSec])),
    ...Object.fromEntries(
      Object.entries(shardPairs(f.clusterShards)).map(([k, p]) => [`shards6VsShards1_${k}`, ratio(p.six, p.one)]),
    ),
  };
  // two workers pinned to three shards each (WORKER_SHARDS), against the same traffic on one shard
  for (const [k, p] of Object.entries(shardPairs(f.clusterShards, true)))
    (ratios as Record<string, number | null>)[`shards6PinnedVsShards1_${k}`] = ratio(p.six, p.one);
  const busiest = Object.entries(shardPairs(f.clusterShards)).map(([k, p]) => [k, p.six.busiest ?? null] as const);
  const targets = {
    pgAtLeast5xPlainBullmq: atLeast(ratios.pgVsPlainBullmq, 5),
    pgAtLeastHalfOfRawInsert: atLeast(ratios.pgVsRawInsert, 0.5),
    p99AtMost250msAt1kPerSec: atMost(f.latencyAt1kPerSec?.p99Ms, 250),
    // --quick builds a 100k backlog: the 1M target is not measured then
    workerRssAtMost250MbWith1MBacklog: run.quick ? null : atMost(f.backlog?.workerRssPeakMb, 250),
    interleavedPgAtLeast0_7xGrouped: atLeast(ratios.interleavedPgVsGroupedPg, 0.7),
    interleavedPgAtLeast3xPlainBullmq: atLeast(ratios.interleavedPgVsPlainBullmq, 3),
    interleavedSqliteAtLeast0_7xGrouped: atLeast(ratios.interleavedSqliteVsGroupedSqlite, 0.7),
    interleavedSqliteAtLeast3xPlainBullmq: atLeast(ratios.interleavedSqliteVsPlainBullmqSqlite, 3),
    mixedLagP99AtMost1s: atMost(f.mixed?.lag.p99Ms, 1_000),
    mixedLongPlanLagP99AtMost1s: atMost(f.mixed?.lagLongPlan.p99Ms, 1_000),
    checkpointsWrittenOnce: atMost(f.interleavedPostgres?.writes?.checkpointRowsPerCheckpointEvent, 1),
    clusterAtLeast0_8xSingleRedis: atLeast(ratios.clusterVsSingleRedis, 0.8),
    ...Object.fromEntries(
      (f.approvals ?? []).map((p) => [`approvalsAtLeast0_9xWithout_${p.traffic}`, atLeast(p.ratioPlansPerSec, 0.9)]),
    ),
    ...Object.fromEntries(
      Object.keys(shardPairs(f.clusterShards)).map((k) => [
        `shards6AtLeast0_9xShards1_${k}`,
        atLeast((ratios as Record<string, number | null>)[`shards6VsShards1_${k}`], 0.9),
      ]),
    ),
    ...Object.fromEntries(busiest.map(([k, share]) => [`shards6BusiestMasterAtMostHalf_${k}`, atMost(share, 0.5)])),
  };
  // End states: every interleaved plan completed with its steps, every event stored once.
  const checks = {
    interleavedPostgresEndState: f.interleavedPostgres?.check.ok ?? null,
    interleavedSqliteEndState: f.interleavedSqlite?.check.ok ?? null,
    interleavedTwoWorkersEndState: f.interleavedPostgresTwoWorkers?.check.ok ?? null,
  };
  const note =
    run.plans >= 10_000 && run.history >= 400_000
      ? undefined
      : `interleaved at reduced size (${run.plans} plans, ${run.history} events of history): its targets are indicative only`;
  return { ratios, targets, checks, note };
}

function version(cmd: string, args: string[], pattern: RegExp): string | undefined {
  try {
    return pattern.exec(execFileSync(cmd, args, { encoding: 'utf8' }))?.[1];
  } catch {
    return undefined;
  }
}

export function machine() {
  return {
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model,
    node: process.version,
    redis: version('redis-server', ['--version'], /v=(\S+)/),
    postgres: version('psql', ['--version'], /(\d+\.\d+)/),
  };
}
