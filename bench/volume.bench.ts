/**
 * `npm run bench:volume` (`-- --help` lists the options): a store as a team reads and keeps it for
 * months. In one run, on a redis-server of its own and a fresh database (a PostgreSQL schema by
 * default; `--db sqlite|mariadb`):
 *
 * 1. a month of realistic sessions (bench/support/volume-generator.ts) is published through the
 *    real PlanEventPublisher and stored by the real `plan-ledger worker` process (compiled), up to
 *    each size of `--sizes` in turn (default 100k then 1M events: the same store grows);
 * 2. at each size: ingest events/s, bytes per event with indexes (and WAL per event on
 *    PostgreSQL), then every read of volume-reads.ts by HTTP (`plan-ledger serve`, median of
 *    `--runs`) and by the CLI (whole processes, median of `--cli-runs`): the keyed reads of the
 *    first size's ids, the lists, the analytics of the whole window and of one day;
 * 3. at the largest size: `prices reprice --dry-run` over the window (its peak RSS), then a
 *    retention run retiring about a third of the store (plans older than 2/3 of the window) and
 *    its purge: WAL per retired event (PostgreSQL), and `plans list`'s p99 while it runs against
 *    its p99 just before (and, as a control, while the same run runs as a dry run: no writes).
 *    The soft delete runs as production runs it: a job of the worker's retention scheduler, in
 *    the worker process that is already up; the dry run and the purge are `retention run` CLI
 *    processes (the dry run's p99 includes the CLI process's own start-up).
 *
 * Figures are ratios between the sizes of one run (largest / first); the machine is shared, so
 * the absolute times move with the load (`loadAvg` is printed).
 */
import 'reflect-metadata';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { DataSource } from 'typeorm';
import { Queue } from 'bullmq';
import { MAINTENANCE_QUEUE } from '../src/queue/queue-names';
import { RETENTION_JOB } from '../src/retention/retention-scheduler';
import { openDataSource } from '../src/store/data-source';
import { runMigrations } from '../src/store/migrator';
import { createThrowawayDb, type TestDb } from '../test/support/databases';
import { freePort, RedisProcess } from '../test/publisher/support/redis-process';
import { BenchOptions } from './support/cli-options';
import { compileWorker, sampleRss, startWorkerChild, waitCommitted, type Child } from './support/e2e-processes';
import { expectAccepted, newPrefix, newPublisher, obliterate, sleep } from './support/e2e-scenarios';
import { mb, round } from './support/latency';
import { postgresServer, rerunOnPrivatePostgres } from './support/private-postgres';
import { volumeTraffic } from './support/volume-generator';
import { latencyWhile, readSpecs, ReadTargets, timeCli, timeHttp, type Timing } from './support/volume-reads';
import { analyze, eventCount, findTargets, storage, walBytes, type Storage } from './support/volume-store';

const STEPS = ['reprice', 'retention'] as const;
const opts = new BenchOptions('npm run bench:volume -- [options]: reads, storage and retention as the store grows', [
  { name: 'sizes', value: 'list', help: 'cumulative event counts to measure at, e.g. 100k,1m (default 100k,1m)' },
  { name: 'db', value: 'kind', help: 'postgres (default), sqlite or mariadb' },
  { name: 'days', value: 'N', help: 'the window the traffic spans, in days (default 30)' },
  { name: 'runs', value: 'N', help: 'timed HTTP requests per read (default 9, after 2 untimed)' },
  { name: 'cli-runs', value: 'N', help: 'timed CLI processes per read (default 3; 0 = no CLI timings)' },
  { name: 'skip', value: 'list', help: `steps left out: ${STEPS.join(',')}` },
  { name: 'private-pg', help: 'a PostgreSQL server of its own: WAL figures of this run alone' },
  { name: 'keep', help: 'keep the database (its URL is printed)' },
  { name: 'json', help: 'print one JSON object with every figure' },
]);

const DEFAULT_SIZES = '100k,1m';
const READ_KEY = 'bench-volume-read-key-0123456789';
const AGENT = 'coder';

function parseSizes(text: string): number[] {
  const sizes = text.split(',').map((s) => {
    const m = /^(\d+(?:\.\d+)?)([km]?)$/i.exec(s.trim());
    if (!m) throw new Error(`--sizes: "${s}" is not a count (e.g. 100k, 1m, 250000)`);
    return Math.round(Number(m[1]) * { '': 1, k: 1_000, m: 1_000_000 }[m[2].toLowerCase() as '' | 'k' | 'm']);
  });
  if (sizes.some((n, i) => n <= 0 || (i > 0 && n <= sizes[i - 1])))
    throw new Error('--sizes must grow: each size larger than the one before');
  return sizes;
}

interface SizeFigures {
  events: number;
  plans: number;
  ingest: { events: number; seconds: number; eventsPerSec: number; walBytesPerEvent: number | null };
  storage: Storage & { bytesPerEvent: number };
  reads: Record<string, { http: Timing; cli?: Timing }>;
}

interface ServeChild {
  base: string;
  stop(): Promise<void>;
}

async function startServe(main: string | undefined, env: Record<string, string>): Promise<ServeChild> {
  const port = await freePort();
  const journal = fs.mkdtempSync(`${os.tmpdir()}/plan-ledger-volume-serve-`);
  const child = spawn(process.execPath, [main ?? 'bin/plan-ledger.js', 'serve'], {
    env: {
      ...process.env,
      ...env,
      HTTP_PORT: String(port),
      HTTP_READ_KEYS: READ_KEY,
      HTTP_JOURNAL_DIR: journal,
      LOG_LEVEL: 'warn',
      PLAN_LEDGER_FROM_SOURCE: '1',
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-3000)));
  const base = `http://127.0.0.1:${port}`;
  for (const until = Date.now() + 60_000; ; await sleep(200)) {
    if (child.exitCode !== null) throw new Error(`serve exited (${child.exitCode}): ${stderr}`);
    if (Date.now() > until) throw new Error(`serve did not answer within 60 s: ${stderr}`);
    const ok = await fetch(`${base}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
  }
  return {
    base,
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await exited;
      }
      fs.rmSync(journal, { recursive: true, force: true });
    },
  };
}

/** Runs `node <main> ...args` to its end: stdout, exit code, peak RSS and time. */
async function runCli(
  main: string,
  env: Record<string, string>,
  args: string[],
): Promise<{ stdout: string; code: number | null; stderr: string; peakRssMb: number; seconds: number }> {
  const started = performance.now();
  const child = spawn(process.execPath, [main, ...args], {
    env: { ...process.env, ...env, PLAN_LEDGER_FROM_SOURCE: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const rss = sampleRss(child.pid!, 100);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-3000)));
  const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
  const { peakBytes } = rss.stop();
  return { stdout, code, stderr, peakRssMb: mb(peakBytes), seconds: round((performance.now() - started) / 1000) };
}

async function publishPhase(
  publisher: ReturnType<typeof newPublisher>['publisher'],
  count: number,
  seed: number,
  tag: string,
  window: { from: Date; to: Date },
): Promise<number> {
  let n = 0;
  for (const input of volumeTraffic(count, { seed, tag, from: window.from, to: window.to })) {
    expectAccepted(publisher.publish(input));
    if (++n % 1_000 === 0) await (publisher.stats().buffered > 50_000 ? sleep(5) : new Promise((r) => setImmediate(r)));
  }
  return n;
}

async function planCount(ds: DataSource): Promise<number> {
  return Number(((await ds.query(`SELECT COUNT(*) AS n FROM execution_plans`)) as [{ n: unknown }])[0].n);
}

/** The CLI as a child process: the compiled entry point and the environment it runs with. */
interface CliTarget {
  main: string;
  env: Record<string, string>;
}

/** What every stage of a run reads: the database, `serve`, the CLI (none without a build) and the options. */
interface VolumeRun {
  ds: DataSource;
  kind: TestDb;
  serve: ServeChild;
  cli: CliTarget | undefined;
  days: number;
  window: { from: Date; to: Date };
  /** timed HTTP requests and CLI processes per read */
  runs: number;
  cliRuns: number;
  log: (line: string) => void;
}

/** What retention needs beyond the reads: the worker to restart with a policy, and the queue's Redis. */
interface RetentionTarget {
  /** Stops the worker and starts it again with `extraEnv`; resolves with the new one. */
  restartWorker(extraEnv: Record<string, string>): Promise<Child>;
  redisUrl: string;
  prefix: string;
}

async function measureReads(run: VolumeRun, targets: ReadTargets): Promise<SizeFigures['reads']> {
  const { serve, cli, runs, cliRuns, log } = run;
  const reads: SizeFigures['reads'] = {};
  for (const spec of readSpecs(targets)) {
    const http = await timeHttp(serve.base, READ_KEY, spec.http, runs);
    const cliTiming = cli && spec.cli && cliRuns > 0 ? await timeCli(cli.main, cli.env, spec.cli, cliRuns) : undefined;
    reads[spec.name] = cliTiming ? { http, cli: cliTiming } : { http };
    log(
      `  ${spec.name.padEnd(42)} http ${String(http.medianMs).padStart(8)} ms  ${kb(http.bytes).padStart(9)}` +
        (cliTiming ? `   cli ${String(cliTiming.medianMs).padStart(8)} ms` : ''),
    );
  }
  return reads;
}

const kb = (bytes: number) => `${round(bytes / 1024, 1)} KB`;

/** CHECKPOINT on PostgreSQL (the WAL the checkpoint itself writes is not counted: measure after it). */
async function checkpoint(ds: DataSource, kind: TestDb): Promise<void> {
  if (kind === 'postgres') await ds.query('CHECKPOINT');
}

async function countRetiredEvents(ds: DataSource): Promise<{ plans: number; events: number }> {
  const [r] = (await ds.query(
    `SELECT COUNT(*) AS plans, COALESCE(SUM(event_count), 0) AS events FROM plan_heads WHERE deleted_at IS NOT NULL`,
  )) as [{ plans: unknown; events: unknown }];
  return { plans: Number(r.plans), events: Number(r.events) };
}

function readOptions() {
  const json = opts.flag('json');
  const kind = opts.string('db', 'postgres') as TestDb;
  if (!['postgres', 'sqlite', 'mariadb'].includes(kind))
    throw new Error(`--db: "${kind}" is not postgres, sqlite or mariadb`);
  const days = opts.number('days', 30);
  const end = new Date(Math.floor(Date.now() / 60_000) * 60_000);
  return {
    json,
    log: (line: string) => {
      if (!json) process.stdout.write(`${line}\n`);
    },
    sizes: parseSizes(opts.string('sizes', DEFAULT_SIZES)),
    kind,
    days,
    runs: opts.number('runs', 9),
    cliRuns: opts.number('cli-runs', 3),
    skip: opts.flag('skip') ? opts.list('skip', STEPS) : new Set<string>(),
    window: { from: new Date(end.getTime() - days * 86_400_000), to: end },
  };
}

/** The store grown to each size in turn (the same worker stores it), with its figures at each. */
async function growAndMeasure(
  run: VolumeRun,
  o: { sizes: number[]; worker: Child; publisher: ReturnType<typeof newPublisher>['publisher'] },
): Promise<{ figures: SizeFigures[]; targets: ReadTargets | undefined }> {
  const { ds, kind, window, log } = run;
  const figures: SizeFigures[] = [];
  let targets: ReadTargets | undefined;
  let published = 0;
  for (const [i, size] of o.sizes.entries()) {
    log(`\n== size ${i + 1}: ${size.toLocaleString('en-US')} events (${kind}) ==`);
    const walBefore = await walBytes(ds, kind);
    const startedAt = Date.now();
    const n = await publishPhase(o.publisher, size - published, i + 1, `v${i}`, window);
    published += n;
    const committed = await waitCommitted([o.worker], published, 3_600_000);
    const seconds = (committed.lastCommitAt - startedAt) / 1000;
    const walAfter = await walBytes(ds, kind);
    await analyze(ds, kind);
    const events = await eventCount(ds);
    const st = await storage(ds, kind);
    const plans = await planCount(ds);
    targets ??= await findTargets(ds, 'v0', window, AGENT);
    const walPerEvent = walBefore === null ? null : Math.round((walAfter! - walBefore) / n);
    log(
      `ingest: ${n} events in ${round(seconds)} s (${Math.round(n / seconds)}/s); store: ${events} events, ${plans} plans, ` +
        `${Math.round(st.totalBytes / events)} bytes/event` +
        (walPerEvent !== null ? `, WAL ${walPerEvent} bytes/event ingested` : ''),
    );
    const reads = await measureReads(run, targets);
    figures.push({
      events,
      plans,
      ingest: {
        events: n,
        seconds: round(seconds),
        eventsPerSec: Math.round(n / seconds),
        walBytesPerEvent: walPerEvent,
      },
      storage: { ...st, bytesPerEvent: Math.round(st.totalBytes / events) },
      reads,
    });
  }
  return { figures, targets };
}

/** `prices reprice --dry-run` over the window: its exit code, peak RSS and time. */
async function reprice(run: VolumeRun, cli: CliTarget): Promise<Record<string, unknown>> {
  const { from, to } = run.window;
  const r = await runCli(cli.main, cli.env, [
    'prices',
    'reprice',
    '--from',
    from.toISOString(),
    '--to',
    to.toISOString(),
    '--dry-run',
    '--json',
  ]);
  run.log(
    `\nprices reprice --dry-run over ${run.days} days: exit ${r.code}, peak RSS ${r.peakRssMb} MB, ${r.seconds} s`,
  );
  return { exitCode: r.code, peakRssMb: r.peakRssMb, seconds: r.seconds, error: r.code ? r.stderr : undefined };
}

async function main(): Promise<void> {
  if (opts.flag('private-pg')) await rerunOnPrivatePostgres();
  const o = readOptions();
  const { kind, log } = o;
  const redis = await RedisProcess.create();
  await redis.start();
  const db = await createThrowawayDb(kind);
  const build = compileWorker();
  // serve looks for the console's files above its own code
  if (build.main) fs.symlinkSync(path.resolve(__dirname, '..', 'console'), path.join(build.dir, 'console'));
  const prefix = newPrefix('volume');
  const env = { DATABASE_URL: db.url, REDIS_URL: redis.url, QUEUE_PREFIX: prefix, RETENTION_CRON: 'off' };
  let ds: DataSource | undefined;
  let worker: Child | undefined;
  let serve: ServeChild | undefined;
  const pub = newPublisher(redis, prefix);
  const out: Record<string, unknown> = {
    command: `npm run bench:volume -- ${process.argv.slice(2).join(' ')}`.trim(),
    database: kind,
    postgresServer: kind === 'postgres' ? postgresServer() : undefined,
    machine: { cpus: os.cpus().length, loadAvgAtStart: os.loadavg().map((l) => round(l)) },
    window: { from: o.window.from.toISOString(), to: o.window.to.toISOString() },
    workerBuild: build.note,
  };
  try {
    ds = await openDataSource(db.target, { poolSize: 2 });
    await runMigrations(ds);
    worker = await startWorkerChild({ env, main: build.main });
    serve = await startServe(build.main, env);
    const cli = build.main ? { main: build.main, env } : undefined;
    const run: VolumeRun = { ...o, ds, serve, cli };
    await pub.ready();
    const { figures, targets } = await growAndMeasure(run, { sizes: o.sizes, worker, publisher: pub.publisher });
    out.targets = targets;
    out.sizes = figures;
    out.ratios = ratios(figures, log);
    if (!o.skip.has('reprice') && cli) out.reprice = await reprice(run, cli);
    const restartWorker = async (extraEnv: Record<string, string>): Promise<Child> => {
      await worker?.stop();
      worker = await startWorkerChild({ env: { ...env, ...extraEnv }, main: build.main });
      return worker;
    };
    if (!o.skip.has('retention') && cli)
      out.retention = await retention(run, cli, { restartWorker, redisUrl: redis.url, prefix });
  } finally {
    await pub.close().catch(() => undefined);
    await serve?.stop().catch(() => undefined);
    await worker?.stop().catch(() => undefined);
    await obliterate(redis, prefix).catch(() => undefined);
    await redis.destroy();
    if (ds?.isInitialized) await ds.destroy();
    if (opts.flag('keep')) log(`database kept: ${db.url}`);
    else await db.drop();
    fs.rmSync(build.dir, { recursive: true, force: true });
  }
  if (o.json) process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
}

/** Largest size over the first, per read (HTTP medians), and storage per event. */
function ratios(figures: SizeFigures[], log: (line: string) => void): Record<string, number> {
  if (figures.length < 2) return {};
  const first = figures[0];
  const last = figures[figures.length - 1];
  const out: Record<string, number> = {};
  log(`\n== largest / first (${last.events} / ${first.events} events; HTTP medians) ==`);
  for (const name of Object.keys(last.reads)) {
    const a = first.reads[name]?.http.medianMs;
    const b = last.reads[name].http.medianMs;
    if (!a) continue;
    out[name] = round(b / a);
    log(`  ${name.padEnd(42)} ${String(a).padStart(8)} -> ${String(b).padStart(8)} ms   x${out[name]}`);
  }
  return out;
}

/**
 * Retires about a third of the store (finished plans older than 2/3 of the window), then purges
 * it: WAL per retired event, and `plans list` first page's latency before and during the run.
 */
async function retention(run: VolumeRun, cli: CliTarget, target: RetentionTarget): Promise<Record<string, unknown>> {
  const { ds, kind, serve, days, log } = run;
  const age = String(Math.round((days * 2) / 3));
  const policy = {
    RETENTION_COMPLETED_DAYS: age,
    RETENTION_FAILED_DAYS: age,
    RETENTION_CANCELLED_DAYS: age,
    RETENTION_GRACE_DAYS: '7',
    RETENTION_DAG_TTL: '0',
  };
  const listPath = '/v1/plans?limit=20';
  // the worker runs the scheduled retention with this policy; its cron is far off, the bench adds the run's job
  const worker = await target.restartWorker({ ...policy, RETENTION_CRON: '0 0 1 1 *' });
  const before = await latencyWhile(serve.base, READ_KEY, listPath, { seconds: 20 });
  // a control: the same run as a dry run (the CLI process and the run's reads, no write)
  const dryRun = runCli(cli.main, { ...cli.env, ...policy }, ['retention', 'run', '--dry-run', '--json']);
  const duringDryRun = await latencyWhile(serve.base, READ_KEY, listPath, { until: dryRun });
  if ((await dryRun).code !== 0) throw new Error(`retention run --dry-run failed: ${(await dryRun).stderr}`);
  // the retired rows were written weeks before a real retention run, and the purge runs a grace
  // period after the soft delete: a checkpoint before each, so each pays its pages' first images
  await checkpoint(ds, kind);
  const wal0 = await walBytes(ds, kind);
  const softRun = runScheduledRetention(worker, target);
  const during = await latencyWhile(serve.base, READ_KEY, listPath, { until: softRun });
  const soft = await softRun;
  const wal1 = await walBytes(ds, kind);
  // a control: the same reads after the run, to tell its effect from the machine's drift
  const after = await latencyWhile(serve.base, READ_KEY, listPath, { seconds: 10 });
  const retired = await countRetiredEvents(ds);
  await checkpoint(ds, kind);
  const wal1p = await walBytes(ds, kind);
  const purge = await runCli(cli.main, { ...cli.env, ...policy, RETENTION_GRACE_DAYS: '0' }, [
    'retention',
    'run',
    '--json',
  ]);
  if (purge.code !== 0) throw new Error(`retention purge failed: ${purge.stderr}`);
  const wal2 = await walBytes(ds, kind);
  if (kind === 'postgres') await ds.query('VACUUM');
  const wal3 = await walBytes(ds, kind);
  const per = (a: number | null, b: number | null) =>
    a === null || b === null || retired.events === 0 ? null : Math.round((b - a) / retired.events);
  const sum = (...parts: Array<number | null>) =>
    parts.some((p) => p === null) ? null : parts.reduce<number>((a, b) => a + (b ?? 0), 0);
  const figures = {
    retiredPlans: retired.plans,
    retiredEvents: retired.events,
    // RETENTION_PAUSE_PERCENT as the worker and the CLI read it (their default when unset)
    pausePercent: process.env.RETENTION_PAUSE_PERCENT ?? 'default',
    softDeleteSeconds: soft.seconds,
    softDeletePausedSeconds: soft.pausedSeconds,
    purgeSeconds: purge.seconds,
    walBytesPerRetiredEvent: {
      softDelete: per(wal0, wal1),
      purge: per(wal1p, wal2),
      vacuum: per(wal2, wal3),
      total: sum(per(wal0, wal1), per(wal1p, wal2), per(wal2, wal3)),
    },
    plansListBefore: before,
    plansListDuring: during,
    p99DuringOverBefore: before.p99Ms ? round(during.p99Ms / before.p99Ms) : null,
    plansListAfter: after,
    p99AfterOverBefore: before.p99Ms ? round(after.p99Ms / before.p99Ms) : null,
    plansListDuringDryRun: duringDryRun,
    p99DuringDryRunOverBefore: before.p99Ms ? round(duringDryRun.p99Ms / before.p99Ms) : null,
  };
  log(
    `\nretention of ${retired.plans} plans (${retired.events} events): soft delete ${soft.seconds} s (${soft.pausedSeconds} s of it resting), purge ${purge.seconds} s; ` +
      `WAL/retired event ${JSON.stringify(figures.walBytesPerRetiredEvent)}; plans list p99 ${before.p99Ms} ms before, ` +
      `${during.p99Ms} ms during (x${figures.p99DuringOverBefore}, ${during.requests} requests), ${after.p99Ms} ms after (x${figures.p99AfterOverBefore}), ` +
      `${duringDryRun.p99Ms} ms during its dry run (x${figures.p99DuringDryRunOverBefore})`,
  );
  return figures;
}

/** One retention job on the maintenance queue, run by `worker`'s scheduler; resolves with the run's duration. */
async function runScheduledRetention(
  worker: Child,
  target: RetentionTarget,
): Promise<{ seconds: number; pausedSeconds: number }> {
  const queue = new Queue(MAINTENANCE_QUEUE, { connection: { url: target.redisUrl }, prefix: target.prefix });
  try {
    const seen = worker.lines.length;
    await queue.add(RETENTION_JOB, { v: 1 });
    const done = await worker.waitFor(
      (l) => worker.lines.indexOf(l) >= seen && (l.msg === 'retention run' || l.msg === 'retention run failed'),
      3_600_000,
      'the scheduled retention run',
    );
    if (done.msg !== 'retention run') throw new Error(`the scheduled retention run failed: ${JSON.stringify(done)}`);
    return { seconds: round(Number(done.durationMs) / 1000, 2), pausedSeconds: round(Number(done.pausedMs) / 1000, 2) };
  } finally {
    await queue.close();
  }
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
