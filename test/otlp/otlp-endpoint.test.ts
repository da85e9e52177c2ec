import { gzipSync } from 'node:zlib';
import { loadConfig } from '../../src/config/config';
import { startWorker } from '../../src/worker';
import { ApiStack, call, INGEST_KEY, startApiStack } from '../http/http-harness';
import { RedisProcess } from '../publisher/support/redis-process';
import { silentLogger, waitFor } from '../worker/helpers/queue-harness';
import { genAiRun, otlpJsonRequest } from './otlp-fixtures';

jest.setTimeout(90_000);

const trace = (n: number) => `${n.toString(16).padStart(2, '0')}f7651916cd43dd8448eb211c80319c`;

async function postTraces(stack: ApiStack, body: object, headers: Record<string, string> = {}) {
  return fetch(`${stack.server.url}/v1/traces`, {
    method: 'POST',
    headers: { authorization: `Bearer ${INGEST_KEY}`, 'content-type': 'application/json', ...headers },
    body: headers['content-encoding'] === 'gzip' ? gzipSync(JSON.stringify(body)) : JSON.stringify(body),
  });
}

describe('POST /v1/traces: back-pressure, content capture, encodings', () => {
  let stack: ApiStack;
  beforeAll(async () => {
    stack = await startApiStack('sqlite', {
      env: { OTLP_MAX_HELD_SPANS: '12', OTLP_TRACE_QUIET_MS: '2000', OTLP_CAPTURE_CONTENT: 'true' },
    });
  });
  afterAll(async () => {
    await stack?.close();
  });

  it('answers 429 with Retry-After past OTLP_MAX_HELD_SPANS, taking nothing of that request, and takes it once the traces are mapped', async () => {
    expect((await postTraces(stack, otlpJsonRequest(genAiRun(trace(1))))).status).toBe(200);
    const refused = await postTraces(stack, otlpJsonRequest(genAiRun(trace(2))));
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('5');
    expect(((await refused.json()) as { error: string }).error).toContain('OTLP_MAX_HELD_SPANS');
    await waitFor('the first trace mapped', () => stack.server.server.traces.heldSpans === 0);
    expect((await postTraces(stack, otlpJsonRequest(genAiRun(trace(2))), { 'content-encoding': 'gzip' })).status).toBe(
      200,
    );
    for (const n of [1, 2])
      await waitFor(
        `plan ${n} stored`,
        async () => (await call(stack, 'GET', `/v1/plans/otlp-${trace(n)}`)).status === 200,
      );
  });

  it('stores prompts and outputs with OTLP_CAPTURE_CONTENT=true', async () => {
    const view = (await call(stack, 'GET', `/v1/plans/otlp-${trace(1)}`)).json;
    expect(view.plan.query).toBe('Plan a weekend in Lisbon');
    const tool = view.steps.find((s: { title: string }) => s.title === 'search_flights');
    const output = await call(stack, 'GET', `/v1/plans/otlp-${trace(1)}/steps/${tool.stepId}/output`, {
      accept: 'text/plain',
    });
    expect(output.text).toBe('3 flights found');
  });

  it('refuses an unknown Content-Encoding or Content-Type with 415 and one line', async () => {
    const deflate = await fetch(`${stack.server.url}/v1/traces`, {
      method: 'POST',
      headers: { authorization: `Bearer ${INGEST_KEY}`, 'content-type': 'application/json', 'content-encoding': 'br' },
      body: '{}',
    });
    expect(deflate.status).toBe(415);
    expect(((await deflate.json()) as { error: string }).error).toBe(
      'Content-Encoding br is not supported; send gzip or none',
    );
    const text = await fetch(`${stack.server.url}/v1/traces`, {
      method: 'POST',
      headers: { authorization: `Bearer ${INGEST_KEY}`, 'content-type': 'text/plain' },
      body: 'spans',
    });
    expect(text.status).toBe(415);
    expect(((await text.json()) as { error: string }).error).toBe(
      'Content-Type must be application/x-protobuf or application/json',
    );
  });
});

describe('POST /v1/traces when the publisher journal is near its bound', () => {
  let stack: ApiStack;
  beforeAll(async () => {
    stack = await startApiStack('sqlite', { worker: false, env: { HTTP_MAX_JOURNAL_BYTES: '1024' } });
  });
  afterAll(async () => {
    await stack?.close();
  });

  it('answers 503 with Retry-After, so the exporter retries', async () => {
    const res = await postTraces(stack, otlpJsonRequest(genAiRun(trace(3))));
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('5');
    expect(((await res.json()) as { error: string }).error).toMatch(
      /cannot hold more events until Redis takes its backlog/,
    );
  });
});

describe('POST /v1/traces while Redis is down', () => {
  it('answers the exporter, keeps the mapped events in its publisher, and they are stored once Redis is back', async () => {
    const redis = await RedisProcess.create();
    const stack = await startApiStack('sqlite', {
      worker: false,
      redisUrl: redis.url,
      env: { OTLP_TRACE_QUIET_MS: '200' },
    });
    try {
      expect((await postTraces(stack, otlpJsonRequest(genAiRun(trace(4))))).status).toBe(200);
      await waitFor('the trace mapped', () => stack.server.server.traces.heldSpans === 0);
      expect(await stack.server.flush(500)).toBe(false);
      await redis.start();
      expect(await stack.server.flush(30_000)).toBe(true);
      const worker = await startWorker({
        config: loadConfig({ REDIS_URL: redis.url, QUEUE_PREFIX: stack.prefix, DATABASE_URL: stack.db.db.url }),
        dataSource: stack.db.ds,
        logger: silentLogger(),
        settings: { healthPort: null },
      });
      try {
        await waitFor('the plan stored', async () => {
          const res = await call(stack, 'GET', `/v1/plans/otlp-${trace(4)}`);
          return res.status === 200 && res.json.plan.status === 'completed';
        });
        expect((await call(stack, 'GET', `/v1/plans/otlp-${trace(4)}`)).json.plan).toMatchObject({
          totalSteps: 5,
          failedSteps: 1,
        });
      } finally {
        await worker.close(10_000);
      }
    } finally {
      await stack.close();
      await redis.destroy();
    }
  });
});
