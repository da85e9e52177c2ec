import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { status } from '@grpc/grpc-js';
import { runCli } from '../support/cli';
import { createThrowawayDb, TestDb } from '../support/databases';
import { freePort } from '../publisher/support/redis-process';
import { REDIS_URL, uniquePrefix, waitFor } from '../worker/helpers/queue-harness';
import { ApiStack, call, INGEST_KEY, READ_KEY, startApiStack } from '../http/http-harness';
import { ServeProcess } from '../http/serve-process';
import { grpcExport } from './support/grpc-client';

const run = promisify(execFile);

jest.setTimeout(120_000);

/** A span with no GenAI or OpenInference attribute, as OTLP/JSON. */
const HEALTH_CHECK = {
  resourceSpans: [
    {
      scopeSpans: [
        {
          spans: [
            {
              traceId: Buffer.from('5b8efff798038103d269b633813fc60c', 'hex'),
              spanId: Buffer.from('eee19b7ec3c1b174', 'hex'),
              name: 'GET /health',
              startTimeUnixNano: '1767225600000000000',
              endTimeUnixNano: '1767225600001000000',
            },
          ],
        },
      ],
    },
  ],
};

/** Runs the instrumented agents with the official OTLP/gRPC exporter, set up by the OTEL_EXPORTER_OTLP_* variables alone. */
async function runGrpcExporter(stack: ApiStack, conversation: string, env: Record<string, string>): Promise<string> {
  const { stdout } = await run(
    process.execPath,
    ['-r', 'tsx/cjs', path.join(__dirname, 'support', 'instrumented-agents.ts'), 'grpc', conversation],
    {
      env: {
        ...process.env,
        OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${stack.server.grpcPort}`,
        OTEL_EXPORTER_OTLP_HEADERS: `Authorization=Bearer ${INGEST_KEY}`,
        ...env,
      },
    },
  );
  return stdout.trim();
}

describe.each<TestDb>(['sqlite', 'postgres'])('OTLP/gRPC into plan-ledger serve on %s', (kind) => {
  let stack: ApiStack;
  let address: string;
  beforeAll(async () => {
    stack = await startApiStack(kind, {
      env: { OTLP_GRPC_PORT: '0', OTLP_TRACE_QUIET_MS: '1000', OTLP_TRACE_ROOTLESS_MS: '5000' },
    });
    address = `127.0.0.1:${stack.server.grpcPort}`;
  });
  afterAll(async () => {
    await stack?.close();
  });

  it.each([
    ['plain', {}],
    ['gzip', { OTEL_EXPORTER_OTLP_COMPRESSION: 'gzip' }],
  ])('the official OTLP/gRPC exporter (%s) makes the run a plan with its tokens', async (mode, env) => {
    const conversation = `conv-grpc-${mode}-${kind}`;
    const traceId = await runGrpcExporter(stack, conversation, env);
    const planId = `otlp-${traceId}`;
    let view: any; // eslint-disable-line @typescript-eslint/no-explicit-any
    await waitFor(`plan ${planId} stored and finalized`, async () => {
      const res = await call(stack, 'GET', `/v1/plans/${planId}`);
      view = res.json;
      return res.status === 200 && view.plan.status === 'completed';
    });
    expect(view.plan).toMatchObject({
      sessionId: conversation,
      totalSteps: 5,
      completedSteps: 4,
      failedSteps: 1,
      inputTokens: 620,
      outputTokens: 480,
    });
    expect(view.source).toEqual({ kind: 'opentelemetry', traceId });
    const steps = view.steps.map((s: any) => [s.agentId, s.title, s.status, s.inputTokens, s.outputTokens]); // eslint-disable-line @typescript-eslint/no-explicit-any
    expect(steps).toEqual([
      ['planner', 'planner', 'completed', 120, 30],
      ['researcher', 'researcher', 'completed', 200, 50],
      ['researcher', 'search_flights', 'completed', 0, 0],
      ['researcher', 'book_hotel', 'failed', 0, 0],
      ['writer', 'writer', 'completed', 300, 400],
    ]);
    expect(view.steps[3].error).toBe('no rooms left');
  });

  it('answers partialSuccess as OTLP/HTTP does, for spans and for log records', async () => {
    expect(await grpcExport(address, 'traces', HEALTH_CHECK, INGEST_KEY)).toEqual({
      code: status.OK,
      response: { partialSuccess: { rejectedSpans: 1, errorMessage: '1 no GenAI or OpenInference attributes' } },
    });
    const logs = {
      resourceLogs: [
        { scopeLogs: [{ logRecords: [{ timeUnixNano: '1767225600000000000', body: { stringValue: 'hi' } }] }] },
      ],
    };
    const answer = await grpcExport(address, 'logs', logs, INGEST_KEY);
    expect(answer.code).toBe(status.OK);
    expect(answer.response).toMatchObject({ partialSuccess: { rejectedLogRecords: 1 } });
  });

  it('refuses no key and an unknown key (UNAUTHENTICATED), a read key (PERMISSION_DENIED), an unreadable message (INVALID_ARGUMENT)', async () => {
    expect(await grpcExport(address, 'traces', HEALTH_CHECK)).toEqual({
      code: status.UNAUTHENTICATED,
      details: 'missing API key: send "Authorization: Bearer <key>"',
    });
    expect(await grpcExport(address, 'traces', HEALTH_CHECK, 'wrong-key-0123456789abcdef')).toEqual({
      code: status.UNAUTHENTICATED,
      details: 'unknown API key',
    });
    expect(await grpcExport(address, 'logs', HEALTH_CHECK, READ_KEY)).toEqual({
      code: status.PERMISSION_DENIED,
      details: 'this API key lacks the ingest scope',
    });
    const bad = await grpcExport(address, 'traces', Buffer.from([0x0a, 0xff, 0xff, 0xff]), INGEST_KEY);
    expect(bad.code).toBe(status.INVALID_ARGUMENT);
    expect(bad.details).toContain('not a protobuf ExportTraceServiceRequest');
  });

  it('the official exporter with a wrong key is refused (its export fails with UNAUTHENTICATED) and adds no span', async () => {
    const metric = async (pattern: RegExp) =>
      Number(pattern.exec(await (await fetch(`${stack.server.url}/metrics`)).text())?.[1] ?? 0);
    const accepted = /plan_ledger_otlp_spans_total\{outcome="accepted"\} (\d+)/;
    const before = await metric(accepted);
    await expect(
      runGrpcExporter(stack, `conv-refused-${kind}`, {
        OTEL_EXPORTER_OTLP_HEADERS: 'Authorization=Bearer wrong-key-0123456789abcdef',
      }),
    ).rejects.toMatchObject({ code: 1, stderr: expect.stringContaining('16 UNAUTHENTICATED: unknown API key') });
    expect(await metric(/plan_ledger_http_auth_refusals_total\{status="401"\} (\d+)/)).toBeGreaterThan(0);
    expect(await metric(accepted)).toBe(before);
  });

  it('once shutdown starts, answers UNAVAILABLE with a RetryInfo of HTTP_RETRY_AFTER_SECONDS', async () => {
    stack.server.server.beginClosing();
    expect(await grpcExport(address, 'traces', HEALTH_CHECK, INGEST_KEY)).toEqual({
      code: status.UNAVAILABLE,
      details: 'the server is shutting down; retry after 5 s',
      retryDelay: 5,
    });
  });
});

describe('plan-ledger serve with OTLP_GRPC_PORT (the command)', () => {
  it('says in one line what is wrong with OTLP_GRPC_PORT, or that its port is taken', async () => {
    const keys = { HTTP_INGEST_KEYS: INGEST_KEY };
    const same = await runCli(['serve'], { ...keys, HTTP_PORT: '4318', OTLP_GRPC_PORT: '4318' });
    expect({ code: same.code, stderr: same.stderr.trim() }).toEqual({
      code: 2,
      stderr:
        'plan-ledger: invalid configuration: OTLP_GRPC_PORT: 4318 is HTTP_PORT too; give the gRPC receiver a port of its own (4317)',
    });
    const word = await runCli(['serve'], { ...keys, OTLP_GRPC_PORT: 'grpc' });
    expect(word.stderr.trim()).toBe('plan-ledger: invalid configuration: OTLP_GRPC_PORT: "grpc" is not an integer');
    const db = await createThrowawayDb('sqlite');
    const taken = net.createServer();
    const port = await new Promise<number>((resolve) =>
      taken.listen(0, '127.0.0.1', () => resolve((taken.address() as net.AddressInfo).port)),
    );
    const journal = fs.mkdtempSync(path.join(os.tmpdir(), 'plan-ledger-grpc-'));
    try {
      const busy = await runCli(['serve'], {
        ...keys,
        DATABASE_URL: db.url,
        REDIS_URL,
        QUEUE_PREFIX: uniquePrefix('grpc'),
        HTTP_PORT: '0',
        HTTP_JOURNAL_DIR: journal,
        OTLP_GRPC_PORT: String(port),
      });
      expect({ code: busy.code, stderr: busy.stderr.trim() }).toEqual({
        code: 1,
        stderr: `plan-ledger: serve cannot start: OTLP_GRPC_PORT: cannot listen on 127.0.0.1:${port} (listen EADDRINUSE: address already in use 127.0.0.1:${port})`,
      });
    } finally {
      taken.close();
      await db.drop();
      fs.rmSync(journal, { recursive: true, force: true });
    }
  });

  it('takes gRPC exports, and on SIGTERM closes the gRPC port and exits 0 with nothing on stderr', async () => {
    const db = await createThrowawayDb('sqlite');
    const journal = fs.mkdtempSync(path.join(os.tmpdir(), 'plan-ledger-grpc-'));
    const grpcPort = await freePort();
    const serve = new ServeProcess(await freePort(), {
      DATABASE_URL: db.url,
      REDIS_URL,
      QUEUE_PREFIX: uniquePrefix('grpc'),
      HTTP_JOURNAL_DIR: journal,
      OTLP_GRPC_PORT: String(grpcPort),
    });
    try {
      await serve.start();
      const address = `127.0.0.1:${grpcPort}`;
      expect((await grpcExport(address, 'traces', HEALTH_CHECK, INGEST_KEY)).code).toBe(status.OK);
      expect(await serve.stop()).toBe(0);
      expect(serve.stderr()).toBe('');
      expect((await grpcExport(address, 'traces', HEALTH_CHECK, INGEST_KEY)).code).toBe(status.UNAVAILABLE);
    } finally {
      await serve.kill();
      await db.drop();
      fs.rmSync(journal, { recursive: true, force: true });
    }
  });
});
