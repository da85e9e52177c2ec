/**
 * `npm run bench:reconcile` (`-- --steps N`, default 1,000,000; `-- --rounds N`, default 3;
 * `-- --db sqlite|postgres`, default sqlite).
 *
 * `plan-ledger cost reconcile` of a year of daily Anthropic exports (usage and cost, 365 days x 3
 * models, in pages of 31 days as the API gives them) against a ledger of N steps spread over
 * 2026 (four models: three Anthropic, one OpenAI that the bill leaves out). The steps are seeded by
 * one INSERT ... SELECT (not through the worker: the worker's speed is bench:e2e's). The exports
 * are written from the ledger's own sums with one day in ten off by a few percent. Baseline, in
 * the same run on the same database: `analytics cost --by model --json`, one aggregate over the
 * same steps. Each round runs both through the CLI's entry in this process; medians reported.
 */
import 'reflect-metadata';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { DataSource } from 'typeorm';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { run } from '../src/cli/main';
import { moneyFromColumn } from '../src/pricing';
import { createMigratedDb } from '../test/support/databases';
import { BenchOptions } from './support/cli-options';

const opts = new BenchOptions('npm run bench:reconcile -- [options]: cost reconcile of a year of exports', [
  { name: 'steps', value: 'N', help: 'ledger steps (default 1000000)' },
  { name: 'rounds', value: 'N', help: 'rounds (default 3); the median is reported' },
  { name: 'db', value: 'sqlite|postgres', help: 'the database (default sqlite)' },
]);

const STEPS_PER_PLAN = 1000;

/** The SQL that seeds and sums, per database: the same rows on each. */
const SQL = {
  sqlite: {
    series: (n: number) => `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ${n - 1})`,
    from: 'n',
    planAt: `'2026-01-01 00:00:00.000'`,
    at: `strftime('%Y-%m-%d %H:%M:%f', '2026-01-01', '+' || (i % 365) || ' days', '+' || (i % 86400) || ' seconds')`,
    id: `printf('%08x-0000-4000-8000-%012x', i / ${STEPS_PER_PLAN}, i)`,
    cost: `printf('0.%012d', 1000000 + (i % 1000) * 1000)`,
    day: 'substr(completed_at, 1, 10)',
    sumCost: `SUM(CAST(REPLACE(cost, '.', '') AS INTEGER))`,
  },
  postgres: {
    series: () => '',
    from: '',
    planAt: `timestamptz '2026-01-01 00:00:00+00'`,
    at: `timestamptz '2026-01-01 00:00:00+00' + (i % 365) * interval '1 day' + (i % 86400) * interval '1 second'`,
    id: `(lpad(to_hex(i / ${STEPS_PER_PLAN}), 8, '0') || '-0000-4000-8000-' || lpad(to_hex(i), 12, '0'))::uuid`,
    cost: `(1000000 + (i % 1000) * 1000) / 1000000000000.0`,
    day: `to_char(completed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')`,
    sumCost: 'SUM(cost)::text',
  },
};

async function seed(ds: DataSource, db: 'sqlite' | 'postgres', steps: number): Promise<Map<string, Sums>> {
  const q = SQL[db];
  const from = (n: number) => (db === 'postgres' ? `generate_series(0, ${n - 1}) AS n(i)` : q.from);
  const plans = Math.ceil(steps / STEPS_PER_PLAN);
  await ds.query(`INSERT INTO sessions (id) VALUES ('bench-session')`);
  await ds.query(
    `${q.series(plans)}
     INSERT INTO execution_plans (id, session_id, query, status, total_steps, created_at, updated_at)
     SELECT 'bench-plan-' || i, 'bench-session', 'q', 'completed', ${STEPS_PER_PLAN}, ${q.planAt}, ${q.planAt}
     FROM ${from(plans)}`,
  );
  await ds.query(
    `${q.series(steps)}
     INSERT INTO plan_steps (id, plan_id, step_key, step_index, agent_id, task, status, model, provider,
       input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost, cost_source,
       started_at, completed_at, created_at)
     SELECT ${q.id}, 'bench-plan-' || (i / ${STEPS_PER_PLAN}),
       'k' || (i % ${STEPS_PER_PLAN}), i % ${STEPS_PER_PLAN}, 'agent', 't', 'completed',
       CASE i % 4 WHEN 0 THEN 'claude-sonnet-4-20250514' WHEN 1 THEN 'claude-opus-4-20250514'
                  WHEN 2 THEN 'claude-3-5-haiku-20241022' ELSE 'gpt-4o' END,
       CASE i % 4 WHEN 3 THEN 'openai' ELSE 'anthropic' END,
       2000 + i % 997, 100 + i % 89, 1000 + i % 500, i % 7 * 10,
       ${q.cost}, 'table', ${q.at}, ${q.at}, ${q.at}
     FROM ${from(steps)}`,
  );
  const rows: Record<string, unknown>[] = await ds.query(
    `SELECT ${q.day} AS day, model, SUM(input_tokens) AS input, SUM(output_tokens) AS output,
            SUM(cache_read_tokens) AS cr, SUM(cache_write_tokens) AS cw, ${q.sumCost} AS cost
     FROM plan_steps WHERE provider = 'anthropic' GROUP BY 1, 2`,
  );
  const sums = new Map<string, Sums>();
  for (const r of rows)
    sums.set(`${String(r.day)}\t${String(r.model)}`, {
      input: Number(r.input),
      output: Number(r.output),
      cacheRead: Number(r.cr),
      cacheWrite: Number(r.cw),
      cost: db === 'sqlite' ? BigInt(r.cost as number) : moneyFromColumn(r.cost)!,
    });
  return sums;
}

interface Sums {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  cost: bigint;
}

/** The year's usage and cost exports as arrays of pages of 31 daily buckets; every tenth day 3 % more. */
function writeExports(dir: string, sums: Map<string, Sums>): { usage: string; cost: string } {
  const days = [...new Set([...sums.keys()].map((k) => k.split('\t')[0]!))].sort();
  const usagePages: object[] = [];
  const costPages: object[] = [];
  for (let p = 0; p < days.length; p += 31) {
    const usage: object[] = [];
    const cost: object[] = [];
    for (const [d, day] of days.slice(p, p + 31).entries()) {
      const off = (p + d) % 10 === 0 ? 1.03 : 1;
      const bucket = { starting_at: `${day}T00:00:00Z`, ending_at: `${day}T23:59:59Z` };
      const usageResults: object[] = [];
      const costResults: object[] = [];
      for (const [key, s] of sums) {
        const [sumDay, model] = key.split('\t') as [string, string];
        if (sumDay !== day) continue;
        usageResults.push({
          uncached_input_tokens: Math.round((s.input - s.cacheRead - s.cacheWrite) * off),
          cache_creation: { ephemeral_1h_input_tokens: 0, ephemeral_5m_input_tokens: s.cacheWrite },
          cache_read_input_tokens: s.cacheRead,
          output_tokens: s.output,
          model,
          service_tier: 'standard',
        });
        const pico = off === 1 ? s.cost : (s.cost * 103n) / 100n;
        const cents = `${pico / 10n ** 10n}.${(pico % 10n ** 10n).toString().padStart(10, '0')}`;
        costResults.push({ currency: 'USD', amount: cents, cost_type: 'tokens', model });
      }
      usage.push({ ...bucket, results: usageResults });
      cost.push({ ...bucket, results: costResults });
    }
    usagePages.push({ data: usage, has_more: p + 31 < days.length, next_page: null });
    costPages.push({ data: cost, has_more: p + 31 < days.length, next_page: null });
  }
  const files = { usage: join(dir, 'usage_report_messages.json'), cost: join(dir, 'cost_report.json') };
  writeFileSync(files.usage, JSON.stringify(usagePages));
  writeFileSync(files.cost, JSON.stringify(costPages));
  return files;
}

async function timed(url: string, args: string[]): Promise<{ ms: number; out: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const started = process.hrtime.bigint();
  const code = await run(['node', 'plan-ledger', ...args], {
    env: { DATABASE_URL: url, LOG_LEVEL: 'warn' },
    out: (l) => out.push(l),
    err: (l) => err.push(l),
  });
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  if (code !== 0) throw new Error(`${args.join(' ')} exited ${code}: ${err.join(' ')}`);
  return { ms, out: out.join('\n') };
}

const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
const median = (xs: number[]) => sorted(xs)[Math.floor(xs.length / 2)]!;

async function main(): Promise<void> {
  const steps = opts.number('steps', 1_000_000);
  const rounds = opts.number('rounds', 3);
  const db = opts.string('db', 'sqlite');
  if (db !== 'sqlite' && db !== 'postgres') throw new Error(`--db: "${db}" is not sqlite or postgres`);
  const dir = mkdtempSync(join(tmpdir(), 'bench-reconcile-'));
  const ledger = await createMigratedDb(db, { poolSize: 1 });
  try {
    const url = ledger.db.url;
    let started = Date.now();
    const sums = await seed(ledger.ds, db, steps);
    await ledger.ds.destroy();
    const seedS = (Date.now() - started) / 1000;
    started = Date.now();
    const files = writeExports(dir, sums);
    const writeS = (Date.now() - started) / 1000;
    const reconcileArgs = ['cost', 'reconcile', '--anthropic', files.usage, '--anthropic', files.cost, '--json'];
    const baselineArgs = ['analytics', 'cost', '--by', 'model', '--json'];
    const reconcile: number[] = [];
    const baseline: number[] = [];
    let report: Record<string, unknown> = {};
    for (let r = 0; r < rounds; r++) {
      const a = await timed(url, reconcileArgs);
      reconcile.push(a.ms);
      report = JSON.parse(a.out) as Record<string, unknown>;
      baseline.push((await timed(url, baselineArgs)).ms);
    }
    const byDay = report.byDay as unknown[];
    console.log(
      `${db}: steps ${steps.toLocaleString('en-US')} (seeded in ${seedS.toFixed(1)} s), exports written in ${writeS.toFixed(1)} s`,
    );
    console.log(
      `reconciled ${byDay.length} day x model rows: coverage ${String(report.coveragePct)} %, delta ${String(report.costDeltaPct)} %`,
    );
    const fmt = (xs: number[]) =>
      `${(median(xs) / 1000).toFixed(2)} s (min ${(sorted(xs)[0]! / 1000).toFixed(2)}, max ${(sorted(xs)[xs.length - 1]! / 1000).toFixed(2)})`;
    console.log(`cost reconcile, a year of daily exports: ${fmt(reconcile)}`);
    console.log(`baseline analytics cost --by model: ${fmt(baseline)}`);
    console.log(
      `reconcile / baseline: ${(median(reconcile) / median(baseline)).toFixed(2)}x; target: reconcile under 60 s`,
    );
  } finally {
    await ledger.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
