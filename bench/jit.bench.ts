/**
 * `npx tsx bench/jit.bench.ts [--plans N] [--runs N] [--json]`: what PostgreSQL's JIT adds to the
 * analytics, on a throwaway schema of the real tables. Stored plans (bench/support's many plan runs,
 * spread over 30 days) are copied in the server until `--plans` plans, the rollups rebuilt
 * (`rebuildRollups`, timed), then `analytics agents` over the 30 days timed on one connection with
 * `SET jit = on` and with `jit = off` (the store's setting): the full scan of the steps
 * (`agentUsageScan`, what the report read before the rollups); and the report as it reads now
 * (`agentUsage`: the rollups, and the rows of the partial days) with the store's jit off. Medians
 * of `--runs`.
 */
import 'reflect-metadata';
import type { DataSource, QueryRunner } from 'typeorm';
import { buildAgentUsageQuery } from '../src/queries/analytics.query';
import { ENTITY } from '../src/store/entities';
import { PlanEventStore } from '../src/store/plan-event-store';
import { rebuildRollups } from '../src/store/rollups/rollup-rebuild';
import { sqlDialectOf } from '../src/store/sql/dialects';
import { createMigratedDb } from '../test/support/databases';
import { manyPlanRuns } from '../test/support/event-factory';
import { BenchOptions } from './support/cli-options';

const opts = new BenchOptions('npx tsx bench/jit.bench.ts [options]: PostgreSQL JIT on and off for analytics agents', [
  { name: 'plans', value: 'N', help: 'plans stored (default 50000)' },
  { name: 'runs', value: 'N', help: 'timed runs of each query (default 5, after 1 untimed)' },
  { name: 'json', help: 'print one JSON object' },
]);
const DAY = 86_400_000;

async function copyInServer(ds: DataSource, entity: string, copies: number): Promise<void> {
  const meta = ds.getMetadata(entity);
  const planCol = entity === ENTITY.plan ? 'id' : 'plan_id';
  const cols = meta.columns.map((c) => c.databaseName);
  const exprs = cols.map((c) => {
    if (c === planCol) return `t."${c}" || '-c' || g.n`;
    if (c === 'id') return 'gen_random_uuid()';
    if (c === 'created_at') return `t."created_at" - (g.n % 30) * interval '1 day'`;
    return `t."${c}"`;
  });
  await ds.query(
    `INSERT INTO ${meta.tablePath} (${cols.map((c) => `"${c}"`).join(', ')}) SELECT ${exprs.join(', ')} FROM ${meta.tablePath} t CROSS JOIN generate_series(1, $1::int) AS g(n) WHERE t."${planCol}" NOT LIKE '%-c%'`,
    [copies],
  );
}

async function timed(qr: QueryRunner, jit: boolean, runs: number, query: () => Promise<unknown>): Promise<number> {
  await qr.query(`SET jit = ${jit ? 'on' : 'off'}`);
  await query();
  const ms: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = process.hrtime.bigint();
    await query();
    ms.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  return Math.round(ms.sort((a, b) => a - b)[Math.floor(ms.length / 2)] * 10) / 10;
}

async function main(): Promise<void> {
  const plans = opts.number('plans', 50_000);
  const runs = opts.number('runs', 5);
  const { ds, close } = await createMigratedDb('postgres');
  try {
    const now = Date.now();
    const events = manyPlanRuns(4_000, { seed: 7, startAt: new Date(now - DAY) });
    await new PlanEventStore(ds).persist(events);
    const template = Number((await ds.query('SELECT COUNT(*) AS n FROM execution_plans'))[0].n);
    const copies = Math.max(0, Math.ceil(plans / template) - 1);
    for (const entity of [ENTITY.plan, ENTITY.step]) await copyInServer(ds, entity, copies);
    await ds.query('ANALYZE');
    const started = Date.now();
    const rebuilt = await sqlDialectOf(ds).transaction(ds, (m) => rebuildRollups(m));
    const rebuildSeconds = (Date.now() - started) / 1000;
    const steps = Number((await ds.query('SELECT COUNT(*) AS n FROM plan_steps'))[0].n);
    const range = { from: new Date(now - 30 * DAY), to: new Date(now) };
    const [scanSql, scanParams] = buildAgentUsageQuery(ds, range).getQueryAndParameters();
    const { agentUsage } = await import('../src/queries/analytics.query');
    const qr = ds.createQueryRunner();
    const out: Record<string, number> = {};
    try {
      for (const jit of [true, false])
        out[`scan, jit ${jit ? 'on' : 'off'} (ms)`] = await timed(qr, jit, runs, () => qr.query(scanSql, scanParams));
      // the report as it reads now, on the pool's connections (jit off, the store's setting)
      out['rollups, jit off (ms)'] = await timed(qr, false, runs, () => agentUsage(ds, range));
    } finally {
      await qr.release();
    }
    const result = { plans: rebuilt.plans, steps, rebuildSeconds, ...out };
    if (opts.flag('json')) process.stdout.write(`${JSON.stringify(result)}\n`);
    else for (const [k, v] of Object.entries(result)) process.stdout.write(`${k}: ${v}\n`);
  } finally {
    await close();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`jit bench: ${(err as Error).message}\n`);
  process.exit(1);
});
