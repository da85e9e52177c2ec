/**
 * `npm run bench:reprice` (`-- --help` lists the options): the peak memory of `prices reprice` as
 * the range grows. At each size of `--sizes` (default 50k then 500k finished steps), in a fresh
 * database (`--db postgres|sqlite|mariadb`, default postgres):
 *
 * 1. one plan of 10 finished steps (gpt-4o usage, a 2 KB output on 2 of them) is stored through
 *    PlanEventStore.persist, then its plan, head and step rows are copied with new ids until the
 *    range holds the size's steps (batched INSERTs from this process);
 * 2. a child process of its own runs `repriceSteps` over the whole range, first as a dry run and
 *    then applied after a price override for gpt-4o (every step changes), and reports its peak RSS
 *    (`process.resourceUsage().maxRSS`) after each.
 *
 * The child is a fresh process per size, so its peak is the reprice's alone, not the seeding's.
 */
import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { spawn } from 'node:child_process';
import * as os from 'node:os';
import type { DataSource } from 'typeorm';
import { openDataSource } from '../src/store/data-source';
import type { DatabaseTarget } from '../src/config/database-url';
import { ENTITY, ExecutionPlanRow, PlanHeadRow, PlanStepRow } from '../src/store/entities';
import { PlanEventStore } from '../src/store/plan-event-store';
import { addPriceOverride } from '../src/store/price-overrides';
import { repriceSteps } from '../src/store/price-reprice';
import { rowsPerStatement } from '../src/store/sql/batch-limits';
import { sqlDialectOf } from '../src/store/sql/dialects';
import { runMigrations } from '../src/store/migrator';
import { createThrowawayDb, type TestDb } from '../test/support/databases';
import { parsedEvent } from '../test/support/parsed-event';
import { gpt4oOverride } from '../test/support/price-fixtures';
import { BenchOptions } from './support/cli-options';
import { mb, round } from './support/latency';

const CHILD_ENV = 'REPRICE_BENCH_CHILD';
const STEPS_PER_PLAN = 10;
const AT = '2026-03-02T12:00:00.000Z';
const RANGE = { from: new Date('2026-03-01T00:00:00.000Z'), to: new Date('2026-03-03T00:00:00.000Z') };

const TEMPLATE = 'bench-reprice-template';

/** The template plan's events: created, then each step completed with usage (2 KB outputs on 2 of them). */
function templateEvents() {
  const ev = (seq: number, type: string, payload: object) =>
    parsedEvent({ planId: TEMPLATE, sessionId: 'bench-reprice', seq, type, payload, occurredAt: AT });
  const steps = Array.from({ length: STEPS_PER_PLAN }, (_, i) => ({
    stepId: `s${i}`,
    index: i,
    agentId: 'coder',
    task: 't',
  }));
  return [
    ev(0, 'plan.created', { query: 'reprice bench', steps }),
    ...steps.map((s, i) =>
      ev(1 + i, 'step.completed', {
        stepId: s.stepId,
        model: 'gpt-4o',
        inputTokens: 1000 + i,
        outputTokens: 300 + i,
        ...(i % 5 === 0 ? { outputContent: 'x'.repeat(2048) } : {}),
      }),
    ),
  ];
}

/** Inserts rows of one entity, as many per statement as the database's parameter limit allows. */
async function insertAll(ds: DataSource, entity: string, rows: object[]): Promise<void> {
  if (rows.length === 0) return;
  const per = rowsPerStatement(sqlDialectOf(ds), Object.keys(rows[0]).length);
  for (let i = 0; i < rows.length; i += per)
    await ds
      .createQueryBuilder()
      .insert()
      .into(entity)
      .values(rows.slice(i, i + per))
      .updateEntity(false)
      .execute();
}

/**
 * On PostgreSQL: copies of the template's rows of `entity` made inside the server, one per number of
 * generate_series(1, plans - 1), the plan id `bench-reprice-<n>` (and a new uuid for a step).
 */
async function copyInServer(ds: DataSource, entity: string, plans: number): Promise<void> {
  const meta = ds.getMetadata(entity);
  const planCol = entity === ENTITY.plan ? 'id' : 'plan_id';
  const cols = meta.columns.map((c) => c.databaseName);
  const exprs = cols.map((c) =>
    c === planCol ? `'bench-reprice-' || g.n` : c === 'id' ? 'gen_random_uuid()' : `t."${c}"`,
  );
  await ds.query(
    `INSERT INTO ${meta.tablePath} (${cols.map((c) => `"${c}"`).join(', ')}) SELECT ${exprs.join(', ')} FROM ${meta.tablePath} t CROSS JOIN generate_series(1, $1::int) AS g(n) WHERE t."${planCol}" = $2`,
    [plans - 1, TEMPLATE],
  );
}

/** Copies of the template plan (plan, head, steps) until `plans` plans are stored; then the planner's statistics. */
async function seed(ds: DataSource, plans: number): Promise<void> {
  await new PlanEventStore(ds, undefined, { overridesRefreshMs: 0, rowCacheBytes: 0 }).persist(templateEvents());
  if (ds.options.type === 'postgres') {
    for (const entity of [ENTITY.plan, ENTITY.head, ENTITY.step]) await copyInServer(ds, entity, plans);
    await ds.query('ANALYZE');
    return;
  }
  await seedByInserts(ds, plans);
  await ds.query(
    ds.options.type === 'mariadb' || ds.options.type === 'mysql'
      ? 'ANALYZE TABLE plan_steps, execution_plans'
      : 'ANALYZE',
  );
}

/** Copies of the template plan by batched INSERTs from this process. */
async function seedByInserts(ds: DataSource, plans: number): Promise<void> {
  const plan = await ds.getRepository<ExecutionPlanRow>(ENTITY.plan).findOneByOrFail({ id: TEMPLATE });
  const head = await ds.getRepository<PlanHeadRow>(ENTITY.head).findOneByOrFail({ planId: TEMPLATE });
  const steps = await ds.getRepository<PlanStepRow>(ENTITY.step).findBy({ planId: TEMPLATE });
  const perBatch = 2_000;
  for (let start = 1; start < plans; start += perBatch) {
    const ids = Array.from({ length: Math.min(perBatch, plans - start) }, (_, k) => `bench-reprice-${start + k}`);
    await insertAll(
      ds,
      ENTITY.plan,
      ids.map((id) => ({ ...plan, id })),
    );
    await insertAll(
      ds,
      ENTITY.head,
      ids.map((planId) => ({ ...head, planId })),
    );
    await insertAll(
      ds,
      ENTITY.step,
      ids.flatMap((planId) => steps.map((s) => ({ ...s, id: randomUUID(), planId }))),
    );
  }
}

/** In the child: both reprices over the range, the peak RSS after each, as one JSON line. */
async function child(target: DatabaseTarget): Promise<void> {
  const ds = await openDataSource(target, { poolSize: 2 });
  const peak = () => mb(process.resourceUsage().maxRSS * 1024);
  try {
    let t = performance.now();
    const dry = await repriceSteps(ds, { ...RANGE, apply: false });
    const dryRun = {
      steps: dry.steps,
      changed: dry.changedSteps,
      peakRssMb: peak(),
      seconds: round((performance.now() - t) / 1000),
    };
    console.error(`dry run: ${JSON.stringify(dryRun)}`);
    await addPriceOverride(ds, gpt4oOverride(RANGE.from));
    t = performance.now();
    const applied = await repriceSteps(ds, { ...RANGE, apply: true });
    const apply = {
      steps: applied.steps,
      changed: applied.changedSteps,
      plans: applied.plans,
      peakRssMb: peak(),
      seconds: round((performance.now() - t) / 1000),
    };
    process.stdout.write(`${JSON.stringify({ dryRun, apply })}\n`);
  } finally {
    await ds.destroy();
  }
}

/** Runs the child on the database; its JSON line. */
function runChild(target: DatabaseTarget): Promise<Record<string, unknown>> {
  const proc = spawn(process.execPath, [...process.execArgv, __filename], {
    env: { ...process.env, [CHILD_ENV]: JSON.stringify(target) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
  return new Promise((resolve, reject) =>
    proc.once('exit', (code) =>
      code === 0
        ? resolve(JSON.parse(out.trim().split('\n').pop()!))
        : reject(new Error(`the reprice child exited ${code}`)),
    ),
  );
}

function parseSize(text: string): number {
  const m = /^(\d+(?:\.\d+)?)([km]?)$/i.exec(text.trim());
  if (!m) throw new Error(`--sizes: "${text}" is not a count of steps (e.g. 50k, 500k, 1m)`);
  return Math.round(Number(m[1]) * { '': 1, k: 1_000, m: 1_000_000 }[m[2].toLowerCase() as '' | 'k' | 'm']);
}

async function measure(kind: TestDb, steps: number): Promise<Record<string, unknown>> {
  const db = await createThrowawayDb(kind);
  try {
    const ds = await openDataSource(db.target, { poolSize: 2 });
    try {
      await runMigrations(ds);
      const t = performance.now();
      await seed(ds, Math.ceil(steps / STEPS_PER_PLAN));
      console.error(`seeded ${steps} steps in ${round((performance.now() - t) / 1000)} s`);
    } finally {
      await ds.destroy();
    }
    return { steps, ...(await runChild(db.target)) };
  } finally {
    await db.drop();
  }
}

async function main(): Promise<void> {
  const opts = new BenchOptions('npm run bench:reprice -- [options]: peak RSS of prices reprice as the range grows', [
    { name: 'sizes', value: 'list', help: 'finished steps in the range, e.g. 50k,500k (default 50k,500k)' },
    { name: 'db', value: 'kind', help: 'postgres (default), sqlite or mariadb' },
    { name: 'json', help: 'print one JSON object with every figure' },
  ]);
  const kind = opts.string('db', 'postgres') as TestDb;
  if (!['postgres', 'sqlite', 'mariadb'].includes(kind))
    throw new Error(`--db: "${kind}" is not postgres, sqlite or mariadb`);
  const sizes = opts.string('sizes', '50k,500k').split(',').map(parseSize);
  const out = {
    command: `npm run bench:reprice -- ${process.argv.slice(2).join(' ')}`.trim(),
    database: kind,
    machine: { cpus: os.cpus().length, loadAvgAtStart: os.loadavg().map((l) => round(l)) },
    sizes: [] as Array<Record<string, unknown>>,
  };
  for (const steps of sizes) {
    const figures = await measure(kind, steps);
    console.error(JSON.stringify(figures));
    out.sizes.push(figures);
  }
  const all = { ...out, loadAvgAtEnd: os.loadavg().map((l) => round(l)) };
  if (opts.flag('json')) console.log(JSON.stringify(all, null, 2));
  else
    for (const f of out.sizes)
      console.log(`${kind}, ${f.steps} steps: dry run ${JSON.stringify(f.dryRun)}; applied ${JSON.stringify(f.apply)}`);
}

const target = process.env[CHILD_ENV];
(target ? child(JSON.parse(target) as DatabaseTarget) : main()).catch((err: Error) => {
  console.error(`reprice bench: ${err.stack ?? err.message}`);
  process.exit(1);
});
