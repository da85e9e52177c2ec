import { gzipSync } from 'node:zlib';
import { encodeRequest } from '../../src/otlp/otlp-codec';
import { ApiStack, call, INGEST_KEY, startApiStack } from '../http/http-harness';
import { waitFor } from '../worker/helpers/queue-harness';
import { hexId, loggedExceptionRun, otlpJsonRequest, protobufShaped } from './otlp-fixtures';

jest.setTimeout(90_000);

const trace = (n: number) => `${n.toString(16).padStart(2, '0')}e7651916cd43dd8448eb211c80319c`;

async function post(stack: ApiStack, url: string, body: object, protobuf = false) {
  const bytes = protobuf ? encodeRequest(protobufShaped(body), 'logs') : JSON.stringify(body);
  return fetch(`${stack.server.url}${url}`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${INGEST_KEY}`,
      'content-type': protobuf ? 'application/x-protobuf' : 'application/json',
      'content-encoding': 'gzip',
    },
    body: gzipSync(bytes),
  });
}

/** The plan as a user reads it, with the trace's id taken out (two traces of the same run compare equal). */
async function planRows(stack: ApiStack, traceId: string) {
  let view: { plan: { status: string } } | undefined;
  await waitFor(`plan of trace ${traceId} stored`, async () => {
    const res = await call(stack, 'GET', `/v1/plans/otlp-${traceId}`);
    view = res.status === 200 ? res.json : undefined;
    return view?.plan.status === 'completed';
  });
  return JSON.parse(JSON.stringify(view).replaceAll(traceId, '<trace>')) as {
    steps: { stepId: string; status: string; error?: string }[];
  };
}

describe('POST /v1/logs: exception log records give the failed step its error', () => {
  let stack: ApiStack;
  beforeAll(async () => {
    stack = await startApiStack('sqlite', { env: { OTLP_TRACE_QUIET_MS: '300' } });
  });
  afterAll(async () => {
    await stack?.close();
  });

  it('stores the same rows whether the logs come before or after their spans (protobuf and JSON, gzip)', async () => {
    // logs first (protobuf), then the spans
    const a = loggedExceptionRun(trace(1));
    const logsFirst = await post(stack, '/v1/logs', a.logs, true);
    expect(logsFirst.status).toBe(200);
    expect(logsFirst.headers.get('content-type')).toContain('application/x-protobuf');
    expect((await post(stack, '/v1/traces', otlpJsonRequest(a.spans))).status).toBe(200);

    // the spans first, the logs after them (JSON), the root span last so the trace waits for it
    const b = loggedExceptionRun(trace(2));
    const root = b.spans.filter((s) => s.parentSpanId === '');
    expect(
      (await post(stack, '/v1/traces', otlpJsonRequest(b.spans.filter((s) => s.parentSpanId !== '')))).status,
    ).toBe(200);
    const logsAfter = await post(stack, '/v1/logs', b.logs);
    expect(logsAfter.status).toBe(200);
    expect(await logsAfter.json()).toEqual({
      partialSuccess: { rejectedLogRecords: '1', errorMessage: '1 not an exception or ERROR log record' },
    });
    expect((await post(stack, '/v1/traces', otlpJsonRequest(root))).status).toBe(200);

    const [rowsA, rowsB] = [await planRows(stack, trace(1)), await planRows(stack, trace(2))];
    expect(rowsB).toEqual(rowsA);
    expect(rowsA.steps.find((s) => s.stepId === hexId('tool2'))).toMatchObject({
      status: 'failed',
      error: 'HotelApiError: no rooms left',
    });
  });

  it('says what is wrong with a log record it cannot read, in one line', async () => {
    const res = await post(stack, '/v1/logs', {
      resourceLogs: [
        {
          scopeLogs: [
            {
              logRecords: [{ severityNumber: 17, body: { stringValue: 'boom' }, traceId: 'nope', spanId: hexId('x') }],
            },
          ],
        },
      ],
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      error: 'resourceLogs[0].scopeLogs[0].logRecords[0].traceId must be 32 hex digits (got "nope")',
    });
  });
});
