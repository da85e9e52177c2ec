import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { loadConfig } from '../../src/config/config';
import { mapTrace } from '../../src/otlp/span-mapping';
import { startWorker, WorkerHandle } from '../../src/worker';
import { INGEST_KEY } from '../http/http-harness';
import { ServeProcess } from '../http/serve-process';
import { freePort } from '../publisher/support/redis-process';
import { createMigratedDb, TestDb } from '../support/databases';
import { dropPrefix, openRedis, REDIS_URL, silentLogger, uniquePrefix } from '../worker/helpers/queue-harness';
import { genAiRun, otlpJsonRequest } from './otlp-fixtures';

jest.setTimeout(600_000);

const RUNS = 4;
const TRACES = 30;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A 200 from POST /v1/traces means durable: `serve` is killed (-9) while an exporter streams
 * traces at it (each trace in two requests, its root span last, as exporters send them), then
 * started again on the same port and journal; the exporter resends what was not answered 200, as
 * OTLP exporters do. Spans held for unfinished traces at the kill must come back: every trace must
 * end as its plan, with exactly the events the mapping makes of the whole trace, each once.
 */
describe.each<TestDb>(['sqlite', 'postgres'])('POST /v1/traces while serve is killed -9 (%s)', (kind) => {
  let db: Awaited<ReturnType<typeof createMigratedDb>>;
  let worker: WorkerHandle;
  let serve: ServeProcess;
  const prefix = uniquePrefix('otlpkill');
  const journal = fs.mkdtempSync(path.join(os.tmpdir(), 'plan-ledger-otlpkill-'));

  beforeAll(async () => {
    db = await createMigratedDb(kind);
    const env = { REDIS_URL, QUEUE_PREFIX: prefix, DATABASE_URL: db.db.url };
    worker = await startWorker({
      config: loadConfig(env),
      dataSource: db.ds,
      logger: silentLogger(),
      settings: { healthPort: null, concurrency: 8, batchSize: 200 },
    });
    serve = new ServeProcess(await freePort(), { ...env, HTTP_JOURNAL_DIR: journal, OTLP_TRACE_QUIET_MS: '400' });
    await serve.start();
  });

  afterAll(async () => {
    await serve?.kill();
    await worker?.close(10_000).catch(() => undefined);
    const redis = openRedis();
    await dropPrefix(redis, prefix).catch(() => undefined);
    redis.disconnect();
    await db?.close();
    fs.rmSync(journal, { recursive: true, force: true });
  });

  /** One export, resent until it is answered 200 (a connection refused while serve restarts included). */
  async function exportUntilTaken(body: string): Promise<void> {
    for (;;) {
      try {
        const res = await fetch(`${serve.url}/v1/traces`, {
          method: 'POST',
          headers: { authorization: `Bearer ${INGEST_KEY}`, 'content-type': 'application/json' },
          body,
        });
        await res.arrayBuffer();
        if (res.status === 200) return;
      } catch {
        // refused or reset: serve is down; resend
      }
      await sleep(100);
    }
  }

  it(`maps every trace to its whole plan, each event once, in ${RUNS} of ${RUNS} runs`, async () => {
    for (let run = 0; run < RUNS; run++) {
      const traceIds = Array.from({ length: TRACES }, (_, i) =>
        `${run.toString(16)}${i.toString(16).padStart(3, '0')}`.padEnd(32, 'a'),
      );
      const requests: string[] = [];
      // children of trace i, then the root of trace i-2: several traces are always half-sent
      for (let i = 0; i < TRACES + 2; i++) {
        if (i < TRACES)
          requests.push(JSON.stringify(otlpJsonRequest(genAiRun(traceIds[i]).filter((s) => s.parentSpanId !== ''))));
        if (i >= 2)
          requests.push(
            JSON.stringify(otlpJsonRequest(genAiRun(traceIds[i - 2]).filter((s) => s.parentSpanId === ''))),
          );
      }
      const killAfter = 10 + ((run * 13) % (requests.length - 20));
      for (let r = 0; r < requests.length; r++) {
        await exportUntilTaken(requests[r]);
        await sleep(30);
        if (r === killAfter) {
          await serve.kill();
          await serve.start();
        }
      }
      for (const traceId of traceIds) {
        const expected = mapTrace(genAiRun(traceId), { captureContent: false }).plans.flatMap((p) => p.events);
        const planId = expected[0].planId;
        let rows: { event_id: string }[] = [];
        for (let wait = 0; wait < 300 && rows.length < expected.length; wait++) {
          rows = await db.ds.query(
            `SELECT event_id FROM plan_events WHERE plan_id = '${planId}' AND type <> 'seq.voided'`,
          );
          if (rows.length < expected.length) await sleep(100);
        }
        expect({ run, planId, ids: rows.map((r) => r.event_id).sort() }).toEqual({
          run,
          planId,
          ids: expected.map((e) => e.eventId).sort(),
        });
      }
    }
  });
});
