/**
 * `npx tsx bench/volume-compare.bench.ts --stores URL1,URL2 [--rounds N] [--json]`: the list and
 * analytics reads of `npm run bench:volume`, timed in this process (the query functions, no HTTP)
 * against stores already filled and kept (`TEST_PG_URL=<a server that stays> npm run bench:volume --
 * --sizes 100k --keep`, then the same with `--sizes 1m`: `--private-pg` removes its server), taking
 * turns: each round times every read once on each store in turn,
 * so that both stores are measured under the same load of the machine. Prints the median per
 * read and store, and each store's median over the first's.
 *
 * Each store is read over its own window: the 30 days up to its newest plan (to the next minute),
 * and the UTC day in the middle of that window, as bench:volume's reads do.
 */
import 'reflect-metadata';
import type { DataSource } from 'typeorm';
import { parseDatabaseUrl } from '../src/config/database-url';
import { agentUsage, handoffPatterns, plansPerDay } from '../src/queries/analytics.query';
import { costUsage } from '../src/queries/cost-usage.query';
import { listPlans } from '../src/queries/plan-list.query';
import type { DateRange } from '../src/queries/query-args';
import { tokenUsage } from '../src/queries/token-usage.query';
import { openDataSource } from '../src/store/data-source';
import { BenchOptions } from './support/cli-options';
import { round } from './support/latency';

const opts = new BenchOptions(
  'npx tsx bench/volume-compare.bench.ts [options]: the same reads on filled stores, in turns',
  [
    {
      name: 'stores',
      value: 'list',
      help: 'database URLs of the stores, smallest first (e.g. two kept bench:volume stores)',
    },
    { name: 'rounds', value: 'N', help: 'rounds of every read on every store (default 9)' },
    { name: 'agent', value: 'id', help: 'the agent of the --agent reads (default coder)' },
    { name: 'json', help: 'print one JSON object with every figure' },
  ],
);

const DAY_MS = 86_400_000;
const PAGE = 20;

interface Read {
  name: string;
  run: (ds: DataSource, w: { month: DateRange; day: DateRange }) => Promise<unknown>;
}

function reads(agentId: string): Read[] {
  const list: Read[] = [
    { name: 'plans list, first page', run: (ds) => listPlans(ds, { limit: PAGE }) },
    { name: 'plans list, page 100 (offset)', run: (ds) => listPlans(ds, { limit: PAGE, offset: 99 * PAGE }) },
    { name: 'plans list --status failed', run: (ds) => listPlans(ds, { limit: PAGE, statuses: ['failed'] }) },
    { name: 'plans list --agent', run: (ds) => listPlans(ds, { limit: PAGE, agentId }) },
    {
      name: 'plans list --agent, page 37 (offset)',
      run: (ds) => listPlans(ds, { limit: PAGE, agentId, offset: 36 * PAGE }),
    },
  ];
  for (const span of ['month', 'day'] as const) {
    const label = span === 'month' ? '30 days' : 'one day';
    list.push(
      { name: `analytics daily, ${label}`, run: (ds, w) => plansPerDay(ds, w[span]) },
      { name: `analytics agents, ${label}`, run: (ds, w) => agentUsage(ds, w[span]) },
      { name: `analytics handoffs, ${label}`, run: (ds, w) => handoffPatterns(ds, w[span]) },
      { name: `analytics cost by model, ${label}`, run: (ds, w) => costUsage(ds, w[span], 'model') },
      { name: `analytics cost by agent, ${label}`, run: (ds, w) => costUsage(ds, w[span], 'agent') },
      { name: `analytics tokens, ${label}`, run: (ds, w) => tokenUsage(ds, w[span]) },
    );
  }
  return list;
}

async function windowOf(ds: DataSource): Promise<{ month: DateRange; day: DateRange }> {
  const [{ newest }] = (await ds.query(`SELECT MAX(created_at) AS newest FROM execution_plans`)) as [
    { newest: unknown },
  ];
  if (newest === null || newest === undefined) throw new Error('volume-compare: a store holds no plans');
  const to = new Date(Math.ceil(new Date(newest as string).getTime() / 60_000) * 60_000 + 60_000);
  const from = new Date(to.getTime() - 30 * DAY_MS);
  const dayFrom = new Date(Math.floor((from.getTime() + to.getTime()) / 2 / DAY_MS) * DAY_MS);
  return { month: { from, to }, day: { from: dayFrom, to: new Date(dayFrom.getTime() + DAY_MS) } };
}

const median = (ms: number[]) => {
  const sorted = [...ms].sort((a, b) => a - b);
  return round(sorted[Math.floor(sorted.length / 2)], 1);
};

async function main(): Promise<void> {
  const urls = opts
    .string('stores', '')
    .split(',')
    .map((u) => u.trim())
    .filter((u) => u !== '');
  if (urls.length < 2) throw new Error('--stores: give two database URLs or more, smallest store first');
  const rounds = opts.number('rounds', 9);
  const list = reads(opts.string('agent', 'coder'));
  const stores: Array<{ ds: DataSource; w: Awaited<ReturnType<typeof windowOf>>; plans: number }> = [];
  try {
    for (const url of urls) {
      const ds = await openDataSource(parseDatabaseUrl(url), { poolSize: 4 });
      const [{ n }] = (await ds.query(`SELECT COUNT(*) AS n FROM execution_plans`)) as [{ n: unknown }];
      stores.push({ ds, w: await windowOf(ds), plans: Number(n) });
    }
    const times = list.map(() => stores.map(() => [] as number[]));
    for (const s of stores) for (const r of list) await r.run(s.ds, s.w); // one untimed pass
    for (let round = 0; round < rounds; round++)
      for (const [i, r] of list.entries())
        for (const [j, s] of stores.entries()) {
          const started = performance.now();
          await r.run(s.ds, s.w);
          times[i][j].push(performance.now() - started);
        }
    const out = list.map((r, i) => {
      const medians = times[i].map(median);
      return { read: r.name, medianMs: medians, overFirst: medians.map((m) => round(m / medians[0], 2)) };
    });
    if (opts.flag('json')) {
      process.stdout.write(`${JSON.stringify({ plans: stores.map((s) => s.plans), rounds, reads: out }, null, 2)}\n`);
      return;
    }
    process.stdout.write(
      `| read (median ms) | ${stores.map((s) => `${s.plans} plans`).join(' | ')} | last / first |\n`,
    );
    process.stdout.write(`| --- |${stores.map(() => ' --- |').join('')} --- |\n`);
    for (const r of out)
      process.stdout.write(`| ${r.read} | ${r.medianMs.join(' | ')} | ${r.overFirst[r.overFirst.length - 1]} |\n`);
  } finally {
    for (const s of stores) await s.ds.destroy();
  }
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).message}\n`);
  process.exit(1);
});
