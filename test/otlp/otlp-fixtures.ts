import type { AttrValue, OtlpSpan } from '../../src/otlp/otlp-span';

/** Attributes in OTLP/JSON form ({ key, value: { stringValue | intValue | ... } }). */
export function otlpAttributes(attrs: Record<string, AttrValue>): object[] {
  const value = (v: AttrValue): object =>
    typeof v === 'string'
      ? { stringValue: v }
      : typeof v === 'boolean'
        ? { boolValue: v }
        : typeof v === 'number'
          ? Number.isInteger(v)
            ? { intValue: String(v) }
            : { doubleValue: v }
          : Array.isArray(v)
            ? { arrayValue: { values: v.map(value) } }
            : {};
  return Object.entries(attrs).map(([key, v]) => ({ key, value: value(v) }));
}

const T0 = 1_767_225_600_000_000_000n; // 2026-01-01T00:00:00Z in ns
const MS = 1_000_000n;

export interface SpanSketch {
  id: string;
  parent?: string;
  name: string;
  start: number;
  end: number;
  attrs?: Record<string, AttrValue>;
  error?: string;
  exception?: { type: string; message: string };
  links?: string[];
}

/** An OtlpSpan of trace `traceId` from a sketch (ids: short names padded to 16 hex digits). */
export function span(traceId: string, s: SpanSketch): OtlpSpan {
  return {
    traceId,
    spanId: hexId(s.id),
    parentSpanId: s.parent ? hexId(s.parent) : '',
    name: s.name,
    startNs: T0 + BigInt(s.start) * MS,
    endNs: T0 + BigInt(s.end) * MS,
    attributes: { 'service.name': 'travel-agents', ...(s.attrs ?? {}) },
    statusCode: s.error !== undefined || s.exception ? 2 : 0,
    statusMessage: s.error ?? '',
    events: s.exception
      ? [
          {
            name: 'exception',
            timeNs: T0 + BigInt(s.end) * MS,
            attributes: { 'exception.type': s.exception.type, 'exception.message': s.exception.message },
          },
        ]
      : [],
    links: (s.links ?? []).map((l) => ({ traceId, spanId: hexId(l) })),
  };
}

export function hexId(name: string): string {
  return Buffer.from(name.padEnd(8, '_').slice(0, 8)).toString('hex');
}

/**
 * A multi-agent run shaped by the GenAI conventions: a workflow span, a planner agent that calls
 * the model and hands off to a researcher, who runs a tool that works and one that fails, then
 * a writer agent after the researcher.
 */
export function genAiRun(traceId: string, conversation = 'conv-42'): OtlpSpan[] {
  const sketches: SpanSketch[] = [
    {
      id: 'root',
      name: 'invoke_workflow trip-planner',
      start: 0,
      end: 1000,
      attrs: {
        'gen_ai.operation.name': 'invoke_workflow',
        'gen_ai.workflow.name': 'trip-planner',
        'gen_ai.conversation.id': conversation,
        'gen_ai.input.messages': 'Plan a weekend in Lisbon',
      },
    },
    {
      id: 'planner',
      parent: 'root',
      name: 'invoke_agent planner',
      start: 10,
      end: 500,
      attrs: { 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': 'planner' },
    },
    {
      id: 'chat1',
      parent: 'planner',
      name: 'chat gpt-4o',
      start: 20,
      end: 80,
      attrs: {
        'gen_ai.operation.name': 'chat',
        'gen_ai.request.model': 'gpt-4o',
        'gen_ai.response.model': 'gpt-4o-2024-08-06',
        'gen_ai.usage.input_tokens': 120,
        'gen_ai.usage.output_tokens': 30,
        'gen_ai.output.messages': 'I will ask the researcher',
      },
    },
    {
      id: 'research',
      parent: 'planner',
      name: 'invoke_agent researcher',
      start: 100,
      end: 450,
      attrs: { 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': 'researcher' },
    },
    {
      id: 'chat2',
      parent: 'research',
      name: 'chat gpt-4o-mini',
      start: 110,
      end: 150,
      // the older attribute names
      attrs: {
        'gen_ai.operation.name': 'chat',
        'gen_ai.request.model': 'gpt-4o-mini',
        'gen_ai.usage.prompt_tokens': 200,
        'gen_ai.usage.completion_tokens': 50,
      },
    },
    {
      id: 'tool1',
      parent: 'research',
      name: 'execute_tool search_flights',
      start: 160,
      end: 250,
      attrs: {
        'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.name': 'search_flights',
        'gen_ai.tool.call.result': '3 flights found',
      },
    },
    {
      id: 'http',
      parent: 'tool1',
      name: 'GET /flights',
      start: 170,
      end: 240,
      attrs: { 'http.request.method': 'GET' },
    },
    {
      id: 'tool2',
      parent: 'research',
      name: 'execute_tool book_hotel',
      start: 260,
      end: 300,
      attrs: { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'book_hotel' },
      exception: { type: 'HotelApiError', message: 'no rooms left' },
    },
    {
      id: 'writer',
      parent: 'root',
      name: 'invoke_agent writer',
      start: 520,
      end: 990,
      attrs: {
        'gen_ai.operation.name': 'invoke_agent',
        'gen_ai.agent.name': 'writer',
        'gen_ai.usage.input_tokens': 300,
        'gen_ai.usage.output_tokens': 400,
        'gen_ai.request.model': 'gpt-4o',
      },
    },
  ];
  return sketches.map((s) => span(traceId, s));
}

/** The same kind of run as OpenInference's LangChain/LangGraph instrumentation describes it. */
export function openInferenceRun(traceId: string): OtlpSpan[] {
  const sketches: SpanSketch[] = [
    {
      id: 'graph',
      name: 'LangGraph',
      start: 0,
      end: 800,
      attrs: { 'openinference.span.kind': 'CHAIN', 'session.id': 'thread-7', 'input.value': '{"question":"weather?"}' },
    },
    { id: 'node1', parent: 'graph', name: 'agent', start: 10, end: 300, attrs: { 'openinference.span.kind': 'CHAIN' } },
    {
      id: 'llm1',
      parent: 'node1',
      name: 'ChatModel',
      start: 20,
      end: 290,
      attrs: {
        'openinference.span.kind': 'LLM',
        'llm.model_name': 'scripted-model',
        'llm.token_count.prompt': 40,
        'llm.token_count.completion': 12,
      },
    },
    {
      id: 'node2',
      parent: 'graph',
      name: 'tools',
      start: 310,
      end: 500,
      attrs: { 'openinference.span.kind': 'CHAIN' },
    },
    {
      id: 'tool',
      parent: 'node2',
      name: 'get_weather',
      start: 320,
      end: 480,
      attrs: { 'openinference.span.kind': 'TOOL', 'tool.name': 'get_weather', 'output.value': 'sunny' },
    },
    {
      id: 'node3',
      parent: 'graph',
      name: 'agent',
      start: 510,
      end: 790,
      attrs: { 'openinference.span.kind': 'CHAIN' },
    },
  ];
  return sketches.map((s) => span(traceId, s));
}

/** An OTLP/JSON ExportTraceServiceRequest holding `spans`. */
export function otlpJsonRequest(spans: OtlpSpan[]): object {
  return {
    resourceSpans: [
      {
        resource: { attributes: [] },
        scopeSpans: [
          {
            spans: spans.map((s) => ({
              traceId: s.traceId,
              spanId: s.spanId,
              ...(s.parentSpanId ? { parentSpanId: s.parentSpanId } : {}),
              name: s.name,
              startTimeUnixNano: String(s.startNs),
              endTimeUnixNano: String(s.endNs),
              attributes: otlpAttributes(s.attributes),
              status: { code: s.statusCode, message: s.statusMessage },
              events: s.events.map((e) => ({
                name: e.name,
                timeUnixNano: String(e.timeNs),
                attributes: otlpAttributes(e.attributes),
              })),
              links: s.links,
            })),
          },
        ],
      },
    ],
  };
}

/**
 * A triage agent handing off to a billing agent, as OpenInference's OpenAI Agents SDK
 * instrumentation exports it: the trace's root is the SDK's "Agent workflow" wrapper (kind AGENT,
 * no agent name); each agent run is an AGENT span named after the agent with `graph.node.id`, the
 * agent handed to also `graph.node.parent_id`; the handoff itself is a TOOL span named
 * `handoff to <agent>` under the agent that hands off; model calls are LLM spans named `response`,
 * function tools TOOL spans with `tool.name`. `graphNodes: false`: as versions before the graph
 * attributes exported it.
 */
export function openAiAgentsRun(traceId: string, { graphNodes = true } = {}): OtlpSpan[] {
  const oi = (kind: string, more: Record<string, AttrValue> = {}) => ({
    'openinference.span.kind': kind,
    'llm.system': 'openai',
    ...more,
  });
  const node = (id: string, parent?: string): Record<string, AttrValue> =>
    graphNodes ? { 'graph.node.id': id, ...(parent ? { 'graph.node.parent_id': parent } : {}) } : {};
  const usage = (prompt: number, completion: number, cached = 0) => ({
    'llm.model_name': 'gpt-4o-2024-08-06',
    'llm.provider': 'openai',
    'llm.token_count.prompt': prompt,
    'llm.token_count.completion': completion,
    'llm.token_count.total': prompt + completion,
    ...(cached ? { 'llm.token_count.prompt_details.cache_read': cached } : {}),
  });
  const sketches: SpanSketch[] = [
    { id: 'wf', name: 'Agent workflow', start: 0, end: 900, attrs: { 'openinference.span.kind': 'AGENT' } },
    { id: 'triage', parent: 'wf', name: 'Triage Agent', start: 5, end: 200, attrs: oi('AGENT', node('Triage Agent')) },
    { id: 'resp1', parent: 'triage', name: 'response', start: 10, end: 150, attrs: oi('LLM', usage(300, 20)) },
    { id: 'handoff', parent: 'triage', name: 'handoff to Billing Agent', start: 160, end: 161, attrs: oi('TOOL') },
    {
      id: 'billing',
      parent: 'wf',
      name: 'Billing Agent',
      start: 210,
      end: 890,
      attrs: oi('AGENT', node('Billing Agent', 'Triage Agent')),
    },
    { id: 'resp2', parent: 'billing', name: 'response', start: 220, end: 400, attrs: oi('LLM', usage(500, 40)) },
    {
      id: 'call1',
      parent: 'billing',
      name: 'lookup_invoice',
      start: 410,
      end: 450,
      attrs: oi('TOOL', { 'tool.name': 'lookup_invoice' }),
      error: 'Error running tool (non-fatal)',
    },
    {
      id: 'call2',
      parent: 'billing',
      name: 'lookup_invoice',
      start: 460,
      end: 500,
      attrs: oi('TOOL', { 'tool.name': 'lookup_invoice', 'output.value': 'INV-7: 42.00' }),
    },
    { id: 'resp3', parent: 'billing', name: 'response', start: 510, end: 880, attrs: oi('LLM', usage(900, 60, 512)) },
  ];
  return sketches.map((s) => span(traceId, s));
}

/**
 * genAiRun with its failing tool's exception moved to a log record, as instrumentations that log
 * exceptions instead of adding span events send it: the span ends with status ERROR and nothing
 * else; `logs` is the OTLP/JSON ExportLogsServiceRequest with the exception record (and an INFO
 * record of the same span, which says nothing of a failure).
 */
export function loggedExceptionRun(traceId: string): { spans: OtlpSpan[]; logs: object } {
  const spans = genAiRun(traceId).map((s) => (s.spanId === hexId('tool2') ? { ...s, events: [] } : s));
  const tool = spans.find((s) => s.spanId === hexId('tool2'))!;
  const record = (severityNumber: number, attrs: Record<string, AttrValue>, body: string) => ({
    timeUnixNano: String(tool.endNs),
    severityNumber,
    body: { stringValue: body },
    attributes: otlpAttributes(attrs),
    traceId,
    spanId: tool.spanId,
  });
  const logs = {
    resourceLogs: [
      {
        resource: { attributes: otlpAttributes({ 'service.name': 'travel-agents' }) },
        scopeLogs: [
          {
            logRecords: [
              record(9, {}, 'calling the hotel API'),
              record(
                17,
                {
                  'exception.type': 'HotelApiError',
                  'exception.message': 'no rooms left',
                  'exception.stacktrace': 'HotelApiError: no rooms left\n    at book (hotel.ts:12)',
                },
                'no rooms left',
              ),
            ],
          },
        ],
      },
    ],
  };
  return { spans, logs };
}

/** An OTLP/JSON request as protobufjs's fromObject takes it: hex ids as bytes. */
export function protobufShaped(request: object): object {
  return JSON.parse(JSON.stringify(request), (k: string, v: unknown) =>
    (k === 'traceId' || k === 'spanId' || k === 'parentSpanId') && typeof v === 'string' ? Buffer.from(v, 'hex') : v,
  ) as object;
}
