import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { status } from '@grpc/grpc-js';
import { loadConfig } from '../../src/config/config';
import { encodeRequest } from '../../src/otlp/otlp-codec';
import { mapTrace } from '../../src/otlp/span-mapping';
import { startWorker, WorkerHandle } from '../../src/worker';
import { INGEST_KEY } from '../http/http-harness';
import { ServeProcess } from '../http/serve-process';
import { freePort } from '../publisher/support/redis-process';
import { createMigratedDb, TestDb } from '../support/databases';
import { dropPrefix, openRedis, REDIS_URL, silentLogger, uniquePrefix } from '../worker/helpers/queue-harness';
import { genAiRun, otlpJsonRequest, protobufShaped } from './otlp-fixtures';
import { grpcExport } from './support/grpc-client';

jest.setTimeout(600_000);

const RUNS = 4;
const TRACES = 30;
/** Export calls in flight at once, as an exporter with several batches queued sends them. */
const IN_FLIGHT = 2;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * An OK from OTLP/gRPC `TraceService/Export` means durable, as a 200 from POST /v1/traces does:
 * `serve` is killed (-9) while grpc-js calls are in flight (each trace in two messages, its root
 * span last, several traces always half-sent), then started again on the same ports and journal;
 * the exporter resends every call that was not answered OK (UNAVAILABLE while serve is down or cut).
 * Every trace must end as its plan, with exactly the events the mapping makes of the whole trace,
 * each once.
 */
describe.each<TestDb>(['sqlite', 'postgres'])('OTLP/gRPC Export while serve is killed -9 (%s)', (kind) => {
  let db: Awaited<ReturnType<typeof createMigratedDb>>;
  let worker: WorkerHandle;
  let serve: ServeProcess;
  let address: string;
  const prefix = uniquePrefix('otlpgrpckill');
  const journal = fs.mkdtempSync(path.join(os.tmpdir(), 'plan-ledger-otlpgrpckill-'));

  beforeAll(async () => {
    db = await createMigratedDb(kind);
    const env = { REDIS_URL, QUEUE_PREFIX: prefix, DATABASE_URL: db.db.url };
    worker = await startWorker({
      config: loadConfig(env),
      dataSource: db.ds,
      logger: silentLogger(),
      settings: { healthPort: null, concurrency: 8, batchSize: 200 },
    });
    const grpcPort = await freePort();
    address = `127.0.0.1:${grpcPort}`;
    serve = new ServeProcess(await freePort(), {
      ...env,
      HTTP_JOURNAL_DIR: journal,
      OTLP_TRACE_QUIET_MS: '400',
      OTLP_GRPC_PORT: String(grpcPort),
    });
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

  /** One Export call, made again until it is answered OK; the answers that were not OK are counted. */
  async function exportUntilOk(message: Buffer, refused: Map<string, number>): Promise<void> {
    for (;;) {
      const answer = await grpcExport(address, 'traces', message, INGEST_KEY);
      if (answer.code === status.OK) return;
      const name = status[answer.code];
      refused.set(name, (refused.get(name) ?? 0) + 1);
      await sleep(100);
    }
  }

  it(`maps every trace to its whole plan, each event once, in ${RUNS} of ${RUNS} runs`, async () => {
    for (let run = 0; run < RUNS; run++) {
      const traceIds = Array.from({ length: TRACES }, (_, i) =>
        `${run.toString(16)}${i.toString(16).padStart(3, '0')}`.padEnd(32, 'b'),
      );
      const message = (spans: ReturnType<typeof genAiRun>) =>
        Buffer.from(encodeRequest(protobufShaped(otlpJsonRequest(spans))));
      // children of trace i, then the root of trace i-2; a root is sent once its trace's children were answered OK
      const calls: { message: Buffer; after?: number }[] = [];
      const childrenCall = new Map<number, number>();
      for (let i = 0; i < TRACES + 2; i++) {
        if (i < TRACES) {
          childrenCall.set(i, calls.length);
          calls.push({ message: message(genAiRun(traceIds[i]).filter((s) => s.parentSpanId !== '')) });
        }
        if (i >= 2)
          calls.push({
            message: message(genAiRun(traceIds[i - 2]).filter((s) => s.parentSpanId === '')),
            after: childrenCall.get(i - 2),
          });
      }
      const answered = calls.map(() => {
        let resolve!: () => void;
        const promise = new Promise<void>((r) => (resolve = r));
        return { promise, resolve };
      });
      const killAt = 10 + ((run * 13) % (calls.length - 20));
      const refused = new Map<string, number>();
      let next = 0;
      let restarted: Promise<void> | undefined;
      const lane = async () => {
        while (next < calls.length) {
          const c = next++;
          if (calls[c].after !== undefined) await answered[calls[c].after!].promise;
          const sent = exportUntilOk(calls[c].message, refused);
          if (c === killAt) {
            // kill -9 while this call (and the other lane's) is on its way or being taken
            await sleep(run * 5);
            restarted = serve.kill().then(() => serve.start());
          }
          await sent;
          answered[c].resolve();
          await sleep(20);
        }
      };
      await Promise.all(Array.from({ length: IN_FLIGHT }, lane));
      await restarted;
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
      // the calls made while serve was down were refused as a gRPC client sees a server gone: UNAVAILABLE
      expect([...refused.keys()]).toEqual(['UNAVAILABLE']);
    }
  });
});
