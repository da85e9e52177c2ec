import { gzipSync } from 'node:zlib';
import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { JsonTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import fc from 'fast-check';
import { decodeTraces, encodeRequest } from '../../src/otlp/otlp-codec';
import { mapTrace } from '../../src/otlp/span-mapping';
import type { TestDb } from '../support/databases';
import { waitFor } from '../worker/helpers/queue-harness';
import { ApiStack, call, INGEST_KEY, startApiStack } from '../http/http-harness';
import { runGenAiAgents } from './support/sdk-run';

const run = promisify(execFile);

jest.setTimeout(120_000);

async function storedPlan(stack: ApiStack, planId: string) {
  let view: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  await waitFor(`plan ${planId} stored and finalized`, async () => {
    const res = await call(stack, 'GET', `/v1/plans/${planId}`);
    view = res.json;
    return res.status === 200 && view.plan.status === 'completed';
  });
  return view;
}

/**
 * Runs an instrumented agent script of ./support against the stack, its exporter set up by the
 * OTEL_EXPORTER_OTLP_* variables alone; what it prints (its trace id) trimmed.
 */
async function runInstrumented(
  stack: ApiStack,
  script: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<string> {
  const { stdout } = await run(process.execPath, ['-r', 'tsx/cjs', path.join(__dirname, 'support', script), ...args], {
    env: {
      ...process.env,
      OTEL_EXPORTER_OTLP_ENDPOINT: stack.server.url,
      OTEL_EXPORTER_OTLP_HEADERS: `Authorization=Bearer ${INGEST_KEY}`,
      ...env,
    },
  });
  return stdout.trim();
}

/** What a user checks of an agent run read back: steps, tokens, the failure, the handoff, the DAG. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
function expectTheRun(view: any) {
  expect(view.plan).toMatchObject({
    totalSteps: 5,
    completedSteps: 4,
    failedSteps: 1,
    inputTokens: 620,
    outputTokens: 480,
  });
  const steps = view.steps.map((s: any) => [s.agentId, s.title, s.status, s.inputTokens, s.outputTokens, s.model]); // eslint-disable-line @typescript-eslint/no-explicit-any
  expect(steps).toEqual([
    ['planner', 'planner', 'completed', 120, 30, 'gpt-4o'],
    ['researcher', 'researcher', 'completed', 200, 50, 'gpt-4o-mini'],
    ['researcher', 'search_flights', 'completed', 0, 0, null],
    ['researcher', 'book_hotel', 'failed', 0, 0, null],
    ['writer', 'writer', 'completed', 300, 400, 'gpt-4o'],
  ]);
  expect(view.steps[3].error).toBe('no rooms left');
  expect(view.steps[3].dependsOn).toEqual([view.steps[2].stepId]);
  expect(view.steps[4].dependsOn).toEqual([view.steps[0].stepId]);
  expect(view.handoffs).toEqual([
    expect.objectContaining({ fromAgentId: 'planner', toAgentId: 'researcher', stepId: view.steps[1].stepId }),
  ]);
}

describe.each<TestDb>(['sqlite', 'postgres', 'mariadb'])('OTLP exporters into plan-ledger serve on %s', (kind) => {
  let stack: ApiStack;
  beforeAll(async () => {
    stack = await startApiStack(kind, { env: { OTLP_TRACE_QUIET_MS: '1000', OTLP_TRACE_ROOTLESS_MS: '5000' } });
  });
  afterAll(async () => {
    await stack?.close();
  });

  it.each(['proto', 'json'])(
    'the %s exporter, set up by OTEL_EXPORTER_OTLP_ENDPOINT and _HEADERS alone, makes the run a plan',
    async (exporter) => {
      const conversation = `conv-${exporter}-${kind}`;
      const traceId = await runInstrumented(
        stack,
        'instrumented-agents.ts',
        [exporter, conversation],
        exporter === 'json' ? { OTEL_EXPORTER_OTLP_COMPRESSION: 'gzip' } : {},
      );
      const view = await storedPlan(stack, `otlp-${traceId}`);
      expectTheRun(view);
      expect(view.plan.sessionId).toBe(conversation);
      expect(view.source).toEqual({ kind: 'opentelemetry', traceId });
      const history = await call(stack, 'GET', `/v1/sessions/${conversation}/history`);
      expect(JSON.stringify(history.json)).toContain(`otlp-${traceId}`);
      const metrics = await (await fetch(`${stack.server.url}/metrics`)).text();
      expect(metrics).toMatch(/plan_ledger_otlp_spans_total\{outcome="accepted"\} [1-9]/);
    },
  );

  it('a LangGraph JS run instrumented by OpenInference (scripted model) becomes a plan with its handoffs, tool failure and tokens', async () => {
    const thread = `thread-${kind}`;
    const view = await storedPlan(stack, `otlp-${await runInstrumented(stack, 'langgraph-agents.ts', [thread])}`);
    expect(view.plan).toMatchObject({
      sessionId: thread,
      totalSteps: 5,
      completedSteps: 4,
      failedSteps: 1,
      inputTokens: 620,
      outputTokens: 480,
    });
    expect(
      view.steps.map((s: { agentId: string; title: string; status: string }) => [s.agentId, s.title, s.status]),
    ).toEqual([
      ['planner', 'planner', 'completed'],
      ['researcher', 'researcher', 'completed'],
      ['researcher', 'search_flights', 'completed'],
      ['researcher', 'book_hotel', 'failed'],
      ['writer', 'writer', 'completed'],
    ]);
    expect(view.steps[3].error).toMatch(/^no rooms left/);
    expect(view.steps[0].model).toBe('scripted-model');
    expect(view.steps[4].dependsOn).toEqual([view.steps[1].stepId]);
    expect(view.handoffs.map((h: { fromAgentId: string; toAgentId: string }) => [h.fromAgentId, h.toAgentId])).toEqual([
      ['planner', 'researcher'],
      ['researcher', 'writer'],
    ]);
  });

  it('a Vercel AI SDK run (its own telemetry, scripted models) becomes a plan: agents called through tools are handoffs', async () => {
    const session = `ai-sdk-${kind}`;
    const view = await storedPlan(stack, `otlp-${await runInstrumented(stack, 'ai-sdk-agents.ts', [session])}`);
    expect(view.plan).toMatchObject({
      sessionId: session,
      totalSteps: 9,
      completedSteps: 8,
      failedSteps: 1,
      inputTokens: 790,
      outputTokens: 515,
    });
    const failed = view.steps.filter((s: { status: string }) => s.status === 'failed');
    expect(failed.map((s: { title: string; agentId: string; error: string }) => [s.title, s.agentId, s.error])).toEqual(
      [['book_hotel', 'researcher', 'no rooms left']],
    );
    const agents = view.steps.filter((s: { task: string }) => s.task === 'ai.generateText');
    expect(
      agents.map((s: { agentId: string; inputTokens: number; model: string }) => [s.agentId, s.inputTokens, s.model]),
    ).toEqual([
      ['researcher', 300, 'scripted-small'],
      ['writer', 300, 'scripted-large'],
    ]);
    expect(view.handoffs.map((h: { fromAgentId: string; toAgentId: string }) => [h.fromAgentId, h.toAgentId])).toEqual([
      ['planner', 'researcher'],
      ['planner', 'writer'],
    ]);
  });

  it('shuffled, split and duplicated export batches store the same rows as the mapping of the whole trace', async () => {
    const memory = new InMemorySpanExporter();
    const tp = new BasicTracerProvider({
      resource: resourceFromAttributes({ 'service.name': 'travel-agents' }),
      spanProcessors: [new SimpleSpanProcessor(memory)],
    });
    const traceId = await runGenAiAgents(tp.getTracer('agents'), `conv-shuffled-${kind}`);
    const spans: ReadableSpan[] = memory.getFinishedSpans();
    const asJson = (list: ReadableSpan[]) =>
      JSON.parse(Buffer.from(JsonTraceSerializer.serializeRequest(list)!).toString());
    const expected = mapTrace(decodeTraces('json', asJson(spans)), { captureContent: false }).plans[0].events;
    // one shuffled order, cut in batches, some sent twice, half of them as gzip protobuf
    const order = fc.sample(fc.shuffledSubarray(spans, { minLength: spans.length }), { numRuns: 1, seed: 42 })[0];
    const batches = [order.slice(0, 2), order.slice(2, 5), order.slice(0, 2), order.slice(5), order.slice(4, 7)];
    for (const [i, batch] of batches.entries()) {
      const json = asJson(batch);
      const proto = i % 2 === 0;
      const body = proto
        ? gzipSync(
            encodeRequest(
              JSON.parse(JSON.stringify(json), (k: string, v: unknown) =>
                (k === 'traceId' || k === 'spanId' || k === 'parentSpanId') && typeof v === 'string'
                  ? Buffer.from(v, 'hex')
                  : v,
              ),
            ),
          )
        : JSON.stringify(json);
      const res = await fetch(`${stack.server.url}/v1/traces`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${INGEST_KEY}`,
          'content-type': proto ? 'application/x-protobuf' : 'application/json',
          ...(proto ? { 'content-encoding': 'gzip' } : {}),
        },
        body,
      });
      expect(res.status).toBe(200);
    }
    const planId = `otlp-${traceId}`;
    expectTheRun(await storedPlan(stack, planId));
    const rows = await stack.db.ds.query(
      `SELECT event_id, seq, type FROM plan_events WHERE plan_id = ${kind === 'postgres' ? '$1' : '?'} ORDER BY seq`,
      [planId],
    );
    expect(
      rows.map((r: { event_id: string; seq: number; type: string }) => [
        r.event_id.toLowerCase(),
        Number(r.seq),
        r.type,
      ]),
    ).toEqual(expected.map((e) => [e.eventId, e.seq, e.type]));
  });

  it('answers partialSuccess for spans it cannot use, 400 for a body it cannot read, 401 without a key', async () => {
    const json = {
      resourceSpans: [
        {
          scopeSpans: [
            {
              spans: [
                {
                  traceId: '5b8efff798038103d269b633813fc60c',
                  spanId: 'eee19b7ec3c1b174',
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
    const ok = await call(stack, 'POST', '/v1/traces', { body: json });
    expect(ok.status).toBe(200);
    expect(ok.json).toEqual({
      partialSuccess: { rejectedSpans: '1', errorMessage: '1 no GenAI or OpenInference attributes' },
    });
    const bad = await fetch(`${stack.server.url}/v1/traces`, {
      method: 'POST',
      headers: { authorization: `Bearer ${INGEST_KEY}`, 'content-type': 'application/x-protobuf' },
      body: Buffer.from([0x0a, 0xff, 0xff, 0xff]),
    });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain('not a protobuf ExportTraceServiceRequest');
    expect((await call(stack, 'POST', '/v1/traces', { key: null, body: json })).status).toBe(401);
  });
});
