import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { loadConfig } from '../../src/config/config';
import { startWorker, WorkerHandle } from '../../src/worker';
import { freePort } from '../publisher/support/redis-process';
import { createMigratedDb, TestDb } from '../support/databases';
import { dropPrefix, openRedis, REDIS_URL, silentLogger, uniquePrefix } from '../worker/helpers/queue-harness';
import { driver, kill, lineWhere } from './python/py-run';
import { ServeProcess } from './serve-process';

jest.setTimeout(900_000);

const RUNS = 10;
const EVENTS = 5_000;
const THREADS = 4;

/**
 * A 2xx from `plan-ledger serve` means durable: the ingest server is killed (-9) while 4 threads of
 * a Python client stream 5,000 events at it, then started again on the same port. The client keeps
 * (journals) and resends whatever was not answered 2xx; an event the server answered 2xx for must
 * therefore be in Redis already, or in the server's fsynced journal, or it is gone for good. Every
 * run must end with all 5,000 events stored exactly once.
 */
describe.each<TestDb>(['sqlite', 'postgres'])('serve killed -9 mid-stream (%s)', (kind) => {
  let db: Awaited<ReturnType<typeof createMigratedDb>>;
  let worker: WorkerHandle;
  let serve: ServeProcess;
  const prefix = uniquePrefix('kill9');
  const dirs: string[] = [];
  const tmp = () => {
    const d = fs.mkdtempSync(path.join(os.tmpdir(), 'plan-ledger-kill9-'));
    dirs.push(d);
    return d;
  };

  beforeAll(async () => {
    db = await createMigratedDb(kind);
    const env = { REDIS_URL, QUEUE_PREFIX: prefix, DATABASE_URL: db.db.url };
    worker = await startWorker({
      config: loadConfig(env),
      dataSource: db.ds,
      logger: silentLogger(),
      settings: { healthPort: null, concurrency: 16, batchSize: 500 },
    });
    serve = new ServeProcess(await freePort(), { ...env, HTTP_JOURNAL_DIR: tmp() });
    await serve.start();
  });

  afterAll(async () => {
    await serve?.kill();
    await worker?.close(10_000).catch(() => undefined);
    const redis = openRedis();
    await dropPrefix(redis, prefix).catch(() => undefined);
    redis.disconnect();
    await db?.close();
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  });

  async function stored(tag: string): Promise<{ rows: number; distinct: number }> {
    const [row] = await db.ds.query(
      `SELECT COUNT(*) AS n, COUNT(DISTINCT event_id) AS d FROM plan_events WHERE plan_id LIKE '${tag}-%' AND type <> 'seq.voided'`,
    );
    return { rows: Number(row.n), distinct: Number(row.d) };
  }

  it(`stores every event exactly once in ${RUNS} of ${RUNS} runs`, async () => {
    const outcomes: string[] = [];
    for (let run = 0; run < RUNS; run++) {
      const tag = `k${run}`;
      const client = driver('paced', serve.url, tmp(), tag, EVENTS, THREADS, 1.5);
      try {
        await lineWhere(client, (l) => l.started === true);
        // somewhere in the stream: each run kills at another point of it
        await new Promise((resolve) => setTimeout(resolve, 150 + ((run * 97) % 900)));
        await serve.kill();
        await serve.start();
        const done = await lineWhere(client, (l) => l.flushed !== undefined, 180_000);
        expect(done).toMatchObject({ flushed: true, accepted: EVENTS, dropped: 0, lost: 0 });
        // every batch was answered 2xx, so every job is in Redis: once the worker is idle, all is stored
        expect(await worker.idle(60_000)).toBe(true);
        const counts = await stored(tag);
        outcomes.push(`${counts.distinct}/${counts.rows}`);
        expect({ run, ...counts }).toEqual({ run, rows: EVENTS, distinct: EVENTS });
      } finally {
        kill(client);
      }
    }
    if (process.env.PLAN_LEDGER_REPORT) process.stdout.write(`KILL9 ${kind}: ${outcomes.join(' ')}\n`);
  });
});
