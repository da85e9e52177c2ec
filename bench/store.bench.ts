/**
 * `npm run bench:store` (`-- --json`; `-- --events N --batch N --inflight N --db postgres|sqlite|mariadb`;
 * `--no-parse` skips the contract checks, e.g. to profile the store alone).
 *
 * The worker's two CPU items apart, in this process, without queues: the contract check per event
 * (parsePlanEvent, and checkStoredEvent which the worker runs) and PlanEventStore.persist of
 * realistic events in batches (the worker's defaults: 2000 events, 4 transactions in flight), with
 * the CPU used per event by this process and by the database server.
 */
import 'reflect-metadata';
import * as os from 'node:os';
import { checkStoredEvent, parsePlanEvent } from '../src/contracts';
import { PlanEventStore } from '../src/store/plan-event-store';
import { createMigratedDb, TestDb } from '../test/support/databases';
import { manyPlanRuns } from '../test/support/event-factory';
import { cpuSeconds, pidsOf } from './support/e2e-processes';
import { round } from './support/latency';

function option(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && process.argv[i + 1] ? process.argv[i + 1] : fallback;
}
const json = process.argv.includes('--json');
const N = Number(option('events', '100000'));
const BATCH = Number(option('batch', '2000'));
const IN_FLIGHT = Number(option('inflight', '4'));
const DB = option('db', 'postgres') as TestDb;
const skipParse = process.argv.includes('--no-parse');

const serverComm: Record<TestDb, string | undefined> = { postgres: 'postgres', mariadb: 'mariadbd', sqlite: undefined };

function serverCpu(): number {
  const comm = serverComm[DB];
  return comm ? pidsOf(comm).reduce((n, pid) => n + cpuSeconds(pid), 0) : 0;
}
function ownCpu(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

async function main(): Promise<void> {
  const events = manyPlanRuns(N, { seed: 77 }).slice(0, N);
  const raw = events.map((e) => JSON.parse(JSON.stringify(e)) as unknown);

  let t = performance.now();
  let c = ownCpu();
  if (!skipParse) for (const r of raw) if (!parsePlanEvent(r).ok) throw new Error('factory event rejected');
  const parseUs = ((ownCpu() - c) * 1e6) / N;
  const parseWall = (performance.now() - t) / 1000;
  // The worker's check since checkStoredEvent: parsePlanEvent's verdict, fast rules on valid events.
  t = performance.now();
  c = ownCpu();
  if (!skipParse) for (const r of raw) if (!checkStoredEvent(r).ok) throw new Error('factory event rejected');
  const checkUs = ((ownCpu() - c) * 1e6) / N;
  const checkWall = (performance.now() - t) / 1000;

  const { ds, close } = await createMigratedDb(DB, { poolSize: IN_FLIGHT + 1 });
  try {
    const store = new PlanEventStore(ds);
    const batches: (typeof events)[] = [];
    for (let i = 0; i < events.length; i += BATCH) batches.push(events.slice(i, i + BATCH));
    const s0 = serverCpu();
    c = ownCpu();
    t = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        while (next < batches.length) await store.persist(batches[next++]);
      }),
    );
    const seconds = (performance.now() - t) / 1000;
    const result = {
      db: DB,
      events: N,
      batch: BATCH,
      inFlight: IN_FLIGHT,
      // null with --no-parse
      parsePlanEvent: skipParse ? null : { usPerEvent: round(parseUs), eventsPerSec: Math.round(N / parseWall) },
      checkStoredEvent: skipParse ? null : { usPerEvent: round(checkUs), eventsPerSec: Math.round(N / checkWall) },
      persist: {
        eventsPerSec: Math.round(N / seconds),
        seconds: round(seconds),
        nodeCpuUsPerEvent: round(((ownCpu() - c) * 1e6) / N),
        serverCpuUsPerEvent: round(((serverCpu() - s0) * 1e6) / N),
      },
      loadAverage: os.loadavg().map((l) => round(l)),
    };
    process.stdout.write(json ? `${JSON.stringify(result, null, 2)}\n` : `${JSON.stringify(result)}\n`);
  } finally {
    await close();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`bench:store failed: ${(err as Error).stack ?? err}\n`);
    process.exit(1);
  },
);
