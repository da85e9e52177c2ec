/**
 * Retention benchmark: soft delete, then purge, N plans x S steps (default 100k x 10 = 1M step
 * rows) with their heads, events, DAG, checkpoint and decision on PostgreSQL, in a schema of its
 * own that is dropped afterwards. Reports rows/s per phase and the longest single statement, with
 * no rest between transactions (a run's RETENTION_PAUSE_PERCENT rests are left out).
 *
 *   npm run bench:retention                      # 100k plans x 10 steps, batch 1000
 *   npm run bench:retention -- --plans 20000 --batch 500 --json
 *
 * Options: --plans N (100000), --steps N (10), --batch N (plans per transaction: RETENTION_BATCH_SIZE,
 * default 1000), --handoffs N per plan (0; see BENCHMARKS.md: plan_handoffs.step_id has no index),
 * --handoff-step-index (add the index on plan_handoffs.step_id the schema lacks, to compare),
 * --keep (do not drop the schema), --json (one JSON object on stdout). BENCH_PG_URL overrides the
 * admin URL (default postgres://postgres@127.0.0.1:5432/test).
 */
import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import { DataSource, Logger as TypeOrmLogger } from 'typeorm';
import { parseDatabaseUrl } from '../src/config/database-url';
import { dataSourceOptions } from '../src/store/data-source';
import { runMigrations } from '../src/store/migrator';
import { runRetention } from '../src/retention/retention.service';
import { retentionPolicy } from '../src/retention/retention-config';
import type { RetentionReport } from '../src/retention/retention-report';

interface Args {
  plans: number;
  steps: number;
  batch: number;
  handoffs: number;
  handoffStepIndex: boolean;
  keep: boolean;
  json: boolean;
}

function parseArgs(argv: string[]): Args {
  const args: Args = {
    plans: 100_000,
    steps: 10,
    batch: 1000,
    handoffs: 0,
    handoffStepIndex: false,
    keep: false,
    json: false,
  };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    if (flag === '--json') args.json = true;
    else if (flag === '--keep') args.keep = true;
    else if (flag === '--handoff-step-index') args.handoffStepIndex = true;
    else if (['--plans', '--steps', '--batch', '--handoffs'].includes(flag)) {
      const n = Number(argv[++i]);
      if (!Number.isInteger(n) || n < 0) throw new Error(`${flag} needs a non-negative integer, got "${argv[i]}"`);
      args[flag.slice(2) as 'plans' | 'steps' | 'batch' | 'handoffs'] = n;
    } else
      throw new Error(
        `unknown option ${flag}; expected --plans N --steps N --batch N --handoffs N --handoff-step-index --keep --json`,
      );
  }
  return args;
}

/** Records the longest statement TypeORM ran (it reports every query slower than 1 ms). */
class StatementClock implements TypeOrmLogger {
  longestMs = 0;
  longestSql = '';
  statements = 0;
  /** Total ms per kind of statement (its first words), to see where a phase spends its time. */
  byKind = new Map<string, { count: number; ms: number; maxMs: number }>();
  reset(): void {
    this.longestMs = 0;
    this.longestSql = '';
    this.statements = 0;
    this.byKind.clear();
  }
  top(n: number): Array<{ kind: string; count: number; ms: number; maxMs: number }> {
    return [...this.byKind.entries()]
      .map(([kind, v]) => ({ kind, ...v, ms: Math.round(v.ms), maxMs: Math.round(v.maxMs) }))
      .sort((a, b) => b.ms - a.ms)
      .slice(0, n);
  }
  logQuerySlow(time: number, query: string): void {
    this.statements++;
    const kind = query
      .replace(/"bench_retention_\w+"\./g, '')
      .replace(/\s+/g, ' ')
      .slice(0, 70);
    const k = this.byKind.get(kind) ?? { count: 0, ms: 0, maxMs: 0 };
    this.byKind.set(kind, { count: k.count + 1, ms: k.ms + time, maxMs: Math.max(k.maxMs, time) });
    if (time > this.longestMs) {
      this.longestMs = time;
      this.longestSql = query
        .replace(/\$\d+(, \$\d+){3,}/g, (list) => `${list.split(', ')[0]}, ..., ${list.split(', ').pop()}`)
        .slice(0, 200);
    }
  }
  logQuery(): void {}
  logQueryError(): void {}
  logSchemaBuild(): void {}
  logMigration(): void {}
  log(): void {}
}

const DAY = 86_400_000;

/** Bulk load with server-side generate_series: one INSERT ... SELECT per table. */
async function load(ds: DataSource, a: Args, ended: Date): Promise<Record<string, number>> {
  const pid = `'bp-' || lpad(p::text, 7, '0')`;
  const plans = `generate_series(0, ${a.plans - 1}) p`;
  const at = `$1::timestamptz - make_interval(secs => p)`;
  const statements: Array<[string, string]> = [
    [
      'sessions',
      `INSERT INTO sessions (id, created_at, updated_at) SELECT 'bs-' || s, $1, $1 FROM generate_series(0, ${Math.ceil(a.plans / 100) - 1}) s`,
    ],
    [
      'execution_plans',
      `INSERT INTO execution_plans (id, session_id, query, status, summary, total_steps, completed_steps, total_input_tokens, total_output_tokens, created_at, updated_at, completed_at)
      SELECT ${pid}, 'bs-' || (p / 100), 'Research and implement feature ' || p, 'completed', 'All steps done', ${a.steps}, ${a.steps}, 5000, 2500, ${at} - interval '1 hour', ${at}, ${at} FROM ${plans}`,
    ],
    [
      'plan_heads',
      `INSERT INTO plan_heads (plan_id, session_id, version, event_count, last_seq, updated_at) SELECT ${pid}, 'bs-' || (p / 100), 3, ${2 + 2 * a.steps}, ${1 + 2 * a.steps}, ${at} FROM ${plans}`,
    ],
    [
      'plan_steps',
      `INSERT INTO plan_steps (id, plan_id, step_key, step_index, agent_id, task, title, depends_on, status, result, output_content, model, input_tokens, output_tokens, started_at, completed_at, created_at)
      SELECT md5(p || '-' || s)::uuid, ${pid}, 's' || s, s, 'agent-' || (s % 4), 'Task ' || s || ' of plan ' || p || ': collect, analyse and summarise the sources', 'Step ' || s,
        CASE WHEN s = 0 THEN '[]' ELSE '["s' || (s - 1) || '"]' END, 'completed', 'done: step ' || s, repeat('output of the step, ', 10), 'gpt-4o', 500, 250,
        ${at} - interval '50 minutes', ${at} - interval '40 minutes', ${at} - interval '1 hour'
      FROM ${plans}, generate_series(0, ${a.steps - 1}) s`,
    ],
    [
      'plan_events',
      `INSERT INTO plan_events (event_id, plan_id, session_id, type, seq, spec_version, occurred_at, recorded_at, payload)
      SELECT md5('e' || p || '-' || k)::uuid, ${pid}, 'bs-' || (p / 100), CASE WHEN k = 0 THEN 'plan.created' ELSE 'plan.finalized' END, k, 1, ${at}, ${at}, '{"summary":"All steps done"}'
      FROM ${plans}, generate_series(0, 1) k`,
    ],
    [
      'workflow_dags',
      `INSERT INTO workflow_dags (workflow_id, dag, intent, created_at) SELECT ${pid}, '{"steps":[],"layers":[]}', 'Research and implement', ${at} FROM ${plans}`,
    ],
    [
      'workflow_checkpoints',
      `INSERT INTO workflow_checkpoints (id, workflow_id, checkpoint_key, layer, state, created_at) SELECT md5('c' || p)::uuid, ${pid}, 'c0', 0, '{"layer":0}', ${at} FROM ${plans}`,
    ],
    [
      'plan_decisions',
      `INSERT INTO plan_decisions (id, plan_id, session_id, decision, decided_by, decided_at) SELECT md5('d' || p)::uuid, ${pid}, 'bs-' || (p / 100), 'approve', 'alice', ${at} FROM ${plans}`,
    ],
  ];
  if (a.handoffs > 0) {
    statements.push([
      'plan_handoffs',
      `INSERT INTO plan_handoffs (id, plan_id, step_id, handoff_key, from_agent_id, to_agent_id, reason, timestamp)
      SELECT md5('h' || p || '-' || h)::uuid, ${pid}, md5(p || '-' || (h % ${a.steps}))::uuid, 'h' || h, 'agent-a', 'agent-b', 'next step', ${at} FROM ${plans}, generate_series(0, ${a.handoffs - 1}) h`,
    ]);
  }
  const rows: Record<string, number> = {};
  for (const [table, sql] of statements) {
    await ds.query(sql, [ended]);
    rows[table] = Number((await ds.query(`SELECT count(*) AS n FROM ${table}`))[0].n);
  }
  await ds.query('ANALYZE');
  return rows;
}

function total(report: RetentionReport, kind: 'softDeleted' | 'purged'): number {
  return Object.values(report.tables).reduce((sum, c) => sum + c[kind], 0);
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const say = (line: string) => !args.json && process.stderr.write(`${line}\n`);
  const admin = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  const schema = `bench_retention_${randomBytes(3).toString('hex')}`;
  const url = new URL(admin);
  url.searchParams.set('schema', schema);
  const clock = new StatementClock();
  const ds = new DataSource({
    ...dataSourceOptions(parseDatabaseUrl(url.toString()), { poolSize: 2, logger: clock }),
    maxQueryExecutionTime: 1,
  } as never);
  await ds.initialize();
  try {
    await ds.query(`CREATE SCHEMA "${schema}"`);
    await runMigrations(ds);
    // without it every deleted plan_steps row makes PostgreSQL scan plan_handoffs (FK check)
    if (args.handoffStepIndex) await ds.query('CREATE INDEX "IX_plan_handoffs_step" ON plan_handoffs (step_id)');
    const now = new Date();
    say(`loading ${args.plans} plans x ${args.steps} steps into schema ${schema} ...`);
    const t0 = Date.now();
    const rows = await load(ds, args, new Date(now.getTime() - 40 * DAY));
    const loadMs = Date.now() - t0;
    say(`loaded ${Object.values(rows).reduce((s, n) => s + n, 0)} rows in ${loadMs} ms`);
    // no rest between transactions (RETENTION_PAUSE_PERCENT 0): rows/s of the work itself
    const policy = retentionPolicy({ batchSize: args.batch, orphanDays: 0, dagTtlMinutes: 1440, pausePercent: 0 });

    const phase = async (name: string, at: Date, kind: 'softDeleted' | 'purged') => {
      clock.reset();
      const started = Date.now();
      const report = await runRetention(ds, policy, { now: at });
      const ms = Date.now() - started;
      const r = {
        phase: name,
        plans: kind === 'softDeleted' ? report.plans.softDeleted : report.plans.purged,
        rows: total(report, kind),
        stepRows: report.tables.plan_steps[kind],
        durationMs: ms,
        rowsPerSecond: Math.round(total(report, kind) / (ms / 1000)),
        stepRowsPerSecond: Math.round(report.tables.plan_steps[kind] / (ms / 1000)),
        batches: report.batches,
        longestStatementMs: Math.round(clock.longestMs),
        longestStatement: clock.longestSql,
        slowestKinds: clock.top(5),
      };
      for (const k of r.slowestKinds)
        say(`  ${String(k.ms).padStart(7)} ms in ${String(k.count).padStart(4)} x (max ${k.maxMs} ms) ${k.kind}`);
      say(
        `${name}: ${r.rows} rows (${r.stepRows} steps) in ${ms} ms = ${r.rowsPerSecond} rows/s, ${r.stepRowsPerSecond} step rows/s; ${r.batches} batches; longest statement ${r.longestStatementMs} ms: ${r.longestStatement}`,
      );
      return r;
    };
    const soft = await phase('soft delete', now, 'softDeleted');
    // the grace period passes: autovacuum re-analyses tables where >10% of rows changed long before
    await ds.query('ANALYZE');
    const purge = await phase('purge', new Date(now.getTime() + 8 * DAY), 'purged');
    const left = Number((await ds.query('SELECT count(*) AS n FROM plan_steps'))[0].n);
    const result = {
      database: 'postgres',
      plans: args.plans,
      stepsPerPlan: args.steps,
      handoffsPerPlan: args.handoffs,
      handoffStepIndex: args.handoffStepIndex,
      batchSize: args.batch,
      loadedRows: rows,
      loadMs,
      phases: [soft, purge],
      stepRowsLeft: left,
      longestStatementMs: Math.max(soft.longestStatementMs, purge.longestStatementMs),
    };
    if (args.json) process.stdout.write(`${JSON.stringify(result)}\n`);
    else say(`longest statement overall: ${result.longestStatementMs} ms (target < 1000 ms); step rows left: ${left}`);
  } finally {
    if (!args.keep) await ds.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
    await ds.destroy();
  }
}

main().catch((err) => {
  process.stderr.write(`bench:retention failed: ${(err as Error).message}\n`);
  process.exitCode = 1;
});
