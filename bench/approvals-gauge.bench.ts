/**
 * The read behind `plan_ledger_approvals_pending` (ApprovalLedger.pendingByAge), run at every
 * scrape of a worker's /metrics, on an `approvals` table of N rows (10 % pending, the rest decided
 * or consumed), against a baseline measured in the same run on the same table: a plain
 * `COUNT(*)` of `approvals`. Each figure is the median of 7 reads after one warm-up.
 *
 *   npx tsx bench/approvals-gauge.bench.ts                    # sqlite, postgres, mariadb; 10k and 100k rows
 *   npx tsx bench/approvals-gauge.bench.ts --db postgres --rows 200000
 */
import 'reflect-metadata';
import * as os from 'node:os';
import { randomUUID } from 'node:crypto';
import { ENTITY, type ApprovalRow } from '../src/store/entities';
import { ApprovalLedger } from '../src/store/approvals/approval-ledger';
import { createMigratedDb, type TestDb } from '../test/support/databases';

const argv = process.argv.slice(2);
const flag = (name: string) => {
  const i = argv.indexOf(`--${name}`);
  return i < 0 ? undefined : argv[i + 1];
};
const kinds = (flag('db')?.split(',') ?? ['sqlite', 'postgres', 'mariadb']) as TestDb[];
const sizes = flag('rows')?.split(',').map(Number) ?? [10_000, 100_000];
const READS = 7;

async function median(fn: () => Promise<unknown>): Promise<number> {
  await fn();
  const times: number[] = [];
  for (let i = 0; i < READS; i++) {
    const t = process.hrtime.bigint();
    await fn();
    times.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  return times.sort((a, b) => a - b)[Math.floor(READS / 2)];
}

function row(i: number, now: number): ApprovalRow {
  const pending = i % 10 === 0;
  const requestedAt = new Date(now - (i % 5000) * 60_000);
  return {
    approvalId: `bench_ap_${i}`,
    planId: `bench_plan_${i % 1000}`,
    sessionId: 'bench_sess',
    stepId: 's1',
    tool: 'send_mail',
    argsDigest: 'a'.repeat(64),
    expiresAt: new Date(now + 86_400_000),
    assignee: i % 3 === 0 ? 'ops' : null,
    reason: null,
    requestedAt,
    requestSeq: i,
    requestEventId: randomUUID(),
    decision: pending ? null : 'approve',
    decidedBy: pending ? null : 'alice',
    feedback: null,
    editedArgsDigest: null,
    decidedAt: pending ? null : requestedAt,
    consumedAt: pending || i % 2 === 0 ? null : requestedAt,
    consumedBy: pending || i % 2 === 0 ? null : 'executor',
    expiredAt: null,
  };
}

async function main(): Promise<void> {
  const results: object[] = [];
  for (const kind of kinds) {
    const { ds, close } = await createMigratedDb(kind);
    try {
      const repo = ds.getRepository<ApprovalRow>(ENTITY.approval);
      const ledger = new ApprovalLedger(ds);
      const now = Date.now();
      let stored = 0;
      for (const size of sizes) {
        for (; stored < size; stored += 100) {
          const chunk: ApprovalRow[] = [];
          for (let i = stored; i < Math.min(size, stored + 100); i++) chunk.push(row(i, now));
          await repo.insert(chunk);
        }
        const baselineMs = await median(() => repo.count());
        const gaugeMs = await median(() => ledger.pendingByAge());
        const line = {
          db: kind,
          rows: size,
          baselineCountMs: Number(baselineMs.toFixed(2)),
          pendingByAgeMs: Number(gaugeMs.toFixed(2)),
          ratio: Number((gaugeMs / baselineMs).toFixed(2)),
        };
        results.push(line);
        console.log(JSON.stringify(line));
      }
    } finally {
      await close();
    }
  }
  console.log(JSON.stringify({ date: new Date().toISOString(), loadAverage: os.loadavg().map((l) => +l.toFixed(2)) }));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
