import fc from 'fast-check';
import type { PlanEvent } from '../../src/contracts';
import type { AttrValue, OtlpSpan } from '../../src/otlp/otlp-span';
import { mapTrace } from '../../src/otlp/span-mapping';
import { TraceAssembler } from '../../src/otlp/trace-assembler';
import { formatMoney } from '../../src/pricing/money';
import { priceStep } from '../../src/pricing/step-cost';
import { span } from './otlp-fixtures';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const opts = { captureContent: false };

type StepEnd = Extract<PlanEvent, { type: 'step.completed' | 'step.failed' }>;
const stepEnds = (events: PlanEvent[]) =>
  events.filter((e): e is StepEnd => e.type === 'step.completed' || e.type === 'step.failed');

/** What the ledger stores of a mapped trace: summed over every plan's step ends. */
function stored(plans: { events: PlanEvent[] }[]) {
  const ends = plans.flatMap((p) => stepEnds(p.events)).map((e) => e.payload);
  return {
    input: ends.reduce((n, p) => n + (p.inputTokens ?? 0), 0),
    output: ends.reduce((n, p) => n + (p.outputTokens ?? 0), 0),
    cacheRead: ends.reduce((n, p) => n + (p.cacheReadTokens ?? 0), 0),
  };
}

/** One call of 100k input tokens, 90k of them cache reads, and 1k output tokens, as each convention says it. */
function cachedCall(attrs: Record<string, AttrValue>): OtlpSpan[] {
  return [
    span(TRACE, {
      id: 'agent',
      name: 'invoke_agent a',
      start: 0,
      end: 100,
      attrs: { 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': 'a' },
    }),
    span(TRACE, { id: 'call', parent: 'agent', name: 'call', start: 10, end: 90, attrs }),
  ];
}

describe('usage: cache, reasoning, provider and reported cost from every convention', () => {
  const cases: [string, Record<string, AttrValue>, string][] = [
    [
      'GenAI conventions (input includes the cache), Anthropic',
      {
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'anthropic',
        'gen_ai.request.model': 'claude-sonnet-4',
        'gen_ai.usage.input_tokens': 100_000,
        'gen_ai.usage.cache_read.input_tokens': 90_000,
        'gen_ai.usage.output_tokens': 1_000,
      },
      '0.072000000000',
    ],
    [
      'GenAI conventions, deprecated names (gen_ai.system, cache_read_input_tokens), OpenAI',
      {
        'gen_ai.operation.name': 'chat',
        'gen_ai.system': 'openai',
        'gen_ai.request.model': 'gpt-4o',
        'gen_ai.usage.prompt_tokens': 100_000,
        'gen_ai.usage.cache_read_input_tokens': 90_000,
        'gen_ai.usage.completion_tokens': 1_000,
      },
      '0.147500000000',
    ],
    [
      'OpenInference (prompt includes its prompt_details), Anthropic',
      {
        'openinference.span.kind': 'LLM',
        'llm.provider': 'anthropic',
        'llm.model_name': 'claude-sonnet-4',
        'llm.token_count.prompt': 100_000,
        'llm.token_count.prompt_details.cache_read': 90_000,
        'llm.token_count.completion': 1_000,
      },
      '0.072000000000',
    ],
    [
      "the AI SDK with Anthropic (its input count is Anthropic's, without the cache)",
      {
        'ai.operationId': 'ai.generateText.doGenerate',
        'ai.model.provider': 'anthropic.messages',
        'ai.model.id': 'claude-sonnet-4',
        'gen_ai.request.model': 'claude-sonnet-4',
        'ai.usage.inputTokens': 10_000,
        'ai.usage.cachedInputTokens': 90_000,
        'ai.usage.outputTokens': 1_000,
        'gen_ai.usage.input_tokens': 10_000,
        'gen_ai.usage.output_tokens': 1_000,
      },
      '0.072000000000',
    ],
  ];

  it.each(cases)('%s: stored with its cache reads, priced at the cache rate', (_name, attrs, cost) => {
    const [end] = stepEnds(mapTrace(cachedCall(attrs), opts).plans[0].events);
    expect(end.payload).toMatchObject({ inputTokens: 100_000, outputTokens: 1_000, cacheReadTokens: 90_000 });
    const p = end.payload as StepEnd['payload'] & { model: string; provider?: string };
    const priced = priceStep(
      {
        model: p.model,
        provider: p.provider ?? null,
        inputTokens: p.inputTokens ?? 0,
        outputTokens: p.outputTokens ?? 0,
        cacheReadTokens: p.cacheReadTokens ?? 0,
        cacheWriteTokens: p.cacheWriteTokens ?? 0,
        reasoningTokens: p.reasoningTokens ?? 0,
        reportedCost: null,
      },
      new Date('2026-01-01T00:00:00Z'),
    );
    expect(formatMoney(priced.cost!)).toBe(cost);
  });

  it.each<[string, Record<string, AttrValue>, string | undefined]>([
    [
      "@anthropic-ai/sdk's own tracing (cache write as gen_ai.usage.cache_write.input_tokens)",
      {
        'gen_ai.provider.name': 'anthropic',
        'gen_ai.response.model': 'claude-sonnet-4',
        'gen_ai.usage.input_tokens': 5_000,
        'gen_ai.usage.cache_write.input_tokens': 1_000,
        'gen_ai.usage.output_tokens': 700,
      },
      'com.anthropic.sdk.typescript',
    ],
    [
      "OpenLLMetry's Anthropic instrumentation (gen_ai.usage.input_tokens is Anthropic's, without the cache)",
      {
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'anthropic',
        'gen_ai.response.model': 'claude-sonnet-4',
        'gen_ai.usage.input_tokens': 4_000,
        'gen_ai.usage.cache_creation.input_tokens': 1_000,
        'gen_ai.usage.output_tokens': 700,
      },
      '@traceloop/instrumentation-anthropic',
    ],
    [
      "the AI SDK with Anthropic (the cache write only in the provider's metadata)",
      {
        'ai.operationId': 'ai.generateText.doGenerate',
        'ai.model.provider': 'anthropic.messages',
        'gen_ai.response.model': 'claude-sonnet-4',
        'ai.usage.promptTokens': 4_000,
        'ai.usage.completionTokens': 700,
        'ai.response.providerMetadata': JSON.stringify({
          anthropic: { usage: { input_tokens: 4_000, cache_creation_input_tokens: 1_000, cache_read_input_tokens: 0 } },
        }),
      },
      'ai',
    ],
  ])('%s: 5,000 input tokens of which 1,000 cache writes', (_name, attrs, scope) => {
    const spans = cachedCall(attrs);
    spans[1]!.scope = scope;
    const [end] = stepEnds(mapTrace(spans, opts).plans[0].events);
    expect(end.payload).toMatchObject({ inputTokens: 5_000, cacheWriteTokens: 1_000, outputTokens: 700 });
  });

  it("counts a call once when @anthropic-ai/sdk's own span of it runs inside an instrumentation's", () => {
    const spans = cachedCall({
      'openinference.span.kind': 'LLM',
      'llm.provider': 'anthropic',
      'llm.model_name': 'claude-sonnet-4',
      'llm.token_count.prompt': 5_000,
      'llm.token_count.prompt_details.cache_read': 1_000,
      'llm.token_count.completion': 700,
    });
    const own = span(TRACE, {
      id: 'sdk',
      parent: 'call',
      name: 'anthropic.messages.create',
      start: 20,
      end: 95,
      attrs: {
        'gen_ai.provider.name': 'anthropic',
        'gen_ai.response.model': 'claude-sonnet-4',
        'gen_ai.usage.input_tokens': 5_000,
        'gen_ai.usage.cache_read.input_tokens': 1_000,
        'gen_ai.usage.output_tokens': 700,
      },
    });
    own.scope = 'com.anthropic.sdk.typescript';
    const ends = stepEnds(mapTrace([...spans, own], opts).plans[0].events);
    expect(ends.map((e) => e.payload)).toEqual([
      expect.objectContaining({ inputTokens: 5_000, cacheReadTokens: 1_000, outputTokens: 700 }),
    ]);
    // on its own (no instrumentation around it) the SDK's span is the call
    const alone = stepEnds(mapTrace([spans[0]!, { ...own, parentSpanId: spans[0]!.spanId }], opts).plans[0].events);
    expect(alone.map((e) => e.payload)).toEqual([expect.objectContaining({ inputTokens: 5_000, outputTokens: 700 })]);
  });

  it('keeps cache writes, reasoning tokens, the provider and a reported cost', () => {
    const [end] = stepEnds(
      mapTrace(
        cachedCall({
          'openinference.span.kind': 'LLM',
          'llm.system': 'OpenAI',
          'llm.model_name': 'o3',
          'llm.token_count.prompt': 5_000,
          'llm.token_count.prompt_details.cache_write': 4_000,
          'llm.token_count.completion': 700,
          'llm.token_count.completion_details.reasoning': 500,
          'llm.cost.total': 0.0123,
        }),
        opts,
      ).plans[0].events,
    );
    expect(end.payload).toMatchObject({
      inputTokens: 5_000,
      cacheWriteTokens: 4_000,
      outputTokens: 700,
      reasoningTokens: 500,
      provider: 'openai',
      reportedCost: '0.012300000000',
    });
  });
});

/** A random trace: spans of every convention's kinds (or none), parents earlier in the list or missing, usage on model calls only. */
const KINDS: Record<string, AttrValue>[] = [
  {},
  { 'gen_ai.operation.name': 'invoke_workflow' },
  { 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': 'a' },
  { 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': 'b' },
  { 'gen_ai.operation.name': 'execute_tool' },
  { 'openinference.span.kind': 'CHAIN' },
  { 'openinference.span.kind': 'AGENT' },
  { 'openinference.span.kind': 'TOOL' },
  { 'ai.operationId': 'ai.generateText' },
  { 'traceloop.span.kind': 'workflow' },
];
const CALLS: ((i: number, o: number, c: number) => Record<string, AttrValue>)[] = [
  (i, o, c) => ({
    'gen_ai.operation.name': 'chat',
    'gen_ai.usage.input_tokens': i + c,
    'gen_ai.usage.cache_read.input_tokens': c,
    'gen_ai.usage.output_tokens': o,
  }),
  (i, o, c) => ({
    'openinference.span.kind': 'LLM',
    'llm.token_count.prompt': i + c,
    'llm.token_count.prompt_details.cache_read': c,
    'llm.token_count.completion': o,
  }),
  (i, o, c) => ({
    'ai.operationId': 'ai.generateText.doGenerate',
    'ai.usage.inputTokens': i + c,
    'ai.usage.cachedInputTokens': c,
    'ai.usage.outputTokens': o,
  }),
  // usage with no kind at all (an instrumentation no convention here names)
  (i, o, c) => ({ 'gen_ai.usage.input_tokens': i + c, 'gen_ai.usage.output_tokens': o }),
];

interface Posted {
  spans: OtlpSpan[];
  /** Tokens per span id. */
  tokens: Map<string, { input: number; output: number; cacheRead: number }>;
}

const arbTrace: fc.Arbitrary<Posted> = fc
  .array(
    fc.record({
      parent: fc.oneof(fc.constant(-1), fc.constant(-2), fc.nat(20)),
      kind: fc.nat(KINDS.length - 1),
      call: fc.option(
        fc.record({ how: fc.nat(CALLS.length - 1), i: fc.nat(5_000), o: fc.nat(5_000), c: fc.nat(5_000) }),
        { nil: undefined },
      ),
      start: fc.nat(50),
      len: fc.nat(50),
      error: fc.boolean(),
    }),
    { minLength: 1, maxLength: 14 },
  )
  .map((sketches) => {
    const tokens: Posted['tokens'] = new Map();
    const spans = sketches.map((s, n) => {
      const id = `s${n}`;
      // a parent earlier in the list, none (a root), or one that never arrives
      const parent = s.parent === -1 || n === 0 ? undefined : s.parent === -2 ? 'gone' : `s${s.parent % n}`;
      const call = s.call ? CALLS[s.call.how](s.call.i, s.call.o, s.call.how === 3 ? 0 : s.call.c) : undefined;
      if (s.call)
        tokens.set(id, {
          input: s.call.i + (s.call.how === 3 ? 0 : s.call.c),
          output: s.call.o,
          cacheRead: s.call.how === 3 ? 0 : s.call.c,
        });
      return span(TRACE, {
        id,
        parent,
        name: `span ${n}`,
        start: s.start + n,
        end: s.start + n + s.len,
        attrs: call ?? KINDS[s.kind],
        error: s.error ? 'failed' : undefined,
      });
    });
    return { spans, tokens };
  });

const sum = (posted: Posted, ids: Iterable<string>) => {
  const total = { input: 0, output: 0, cacheRead: 0 };
  for (const id of ids) {
    const t = posted.tokens.get(id);
    if (t) for (const k of ['input', 'output', 'cacheRead'] as const) total[k] += t[k];
  }
  return total;
};

describe('no span with usage is dropped silently (property)', () => {
  it('the tokens of a trace are the tokens its plans store, whatever its shape', () => {
    fc.assert(
      fc.property(arbTrace, (posted) => {
        const result = mapTrace(posted.spans, opts);
        expect(stored(result.plans)).toEqual(sum(posted, posted.tokens.keys()));
      }),
      { numRuns: 400 },
    );
  });

  it('tokens posted = tokens stored + tokens of the spans reported rejected, late spans included', () => {
    fc.assert(
      fc.property(arbTrace, fc.nat(14), (posted, cut) => {
        const published: PlanEvent[][] = [];
        let now = 0;
        const assembler = new TraceAssembler(
          { captureContent: false, quietMs: 100, rootlessMs: 100, maxSpans: 10_000 },
          { publish: (events) => published.push(events), unmapped: () => undefined },
          () => now,
        );
        const early = posted.spans.slice(0, Math.max(1, cut));
        const late = posted.spans.slice(early.length);
        const first = assembler.add(early);
        now += 1_000;
        assembler.flushDue();
        const second = assembler.add(late);
        // spans with usage are never rejected on arrival; late ones are, all of them
        const withUsage = (list: OtlpSpan[]) => list.filter((s) => posted.tokens.has(hexOf(s))).length;
        expect(first.accepted).toBeGreaterThanOrEqual(withUsage(early));
        expect(second.rejected).toBe(late.length);
        const rejected = sum(posted, late.map(hexOf));
        const kept = stored(published.map((events) => ({ events })));
        const all = sum(posted, posted.tokens.keys());
        expect({
          input: kept.input + rejected.input,
          output: kept.output + rejected.output,
          cacheRead: kept.cacheRead + rejected.cacheRead,
        }).toEqual(all);
      }),
      { numRuns: 300 },
    );
  });
});

/** The sketch id of a span (`s3`) from its hex span id. */
function hexOf(s: OtlpSpan): string {
  return Buffer.from(s.spanId, 'hex').toString().replace(/_+$/, '');
}

describe('OpenLLMetry', () => {
  const kind = (k: string, name: string) => ({
    'traceloop.span.kind': k,
    'traceloop.entity.name': name,
    'traceloop.workflow.name': 'trip',
    'traceloop.association.properties.session_id': 'sess-9',
  });
  const chat = (model: string, input: number, output: number) => ({
    'gen_ai.system': 'openai',
    'llm.request.type': 'chat',
    'gen_ai.request.model': model,
    'gen_ai.usage.prompt_tokens': input,
    'gen_ai.usage.completion_tokens': output,
    'traceloop.workflow.name': 'trip',
  });
  const run = [
    span(TRACE, { id: 'wf', name: 'trip.workflow', start: 0, end: 1000, attrs: kind('workflow', 'trip') }),
    span(TRACE, {
      id: 'plan',
      parent: 'wf',
      name: 'planner.agent',
      start: 10,
      end: 400,
      attrs: kind('agent', 'planner'),
    }),
    span(TRACE, { id: 'c1', parent: 'plan', name: 'openai.chat', start: 20, end: 80, attrs: chat('gpt-4o', 120, 30) }),
    span(TRACE, {
      id: 'res',
      parent: 'wf',
      name: 'researcher.agent',
      start: 410,
      end: 800,
      attrs: kind('agent', 'researcher'),
    }),
    span(TRACE, {
      id: 'c2',
      parent: 'res',
      name: 'openai.chat',
      start: 420,
      end: 480,
      attrs: chat('gpt-4o-mini', 200, 50),
    }),
    span(TRACE, {
      id: 'tool',
      parent: 'res',
      name: 'book_hotel.tool',
      start: 500,
      end: 600,
      attrs: kind('tool', 'book_hotel'),
      exception: { type: 'HotelApiError', message: 'no rooms left' },
    }),
  ];

  it('its workflow, agent and tool spans are a plan, its steps and their tokens; none is refused', () => {
    const assembler = new TraceAssembler(
      { captureContent: false, quietMs: 100, rootlessMs: 100, maxSpans: 100 },
      { publish: () => undefined, unmapped: () => undefined },
    );
    expect(assembler.add(run)).toMatchObject({ accepted: 6, rejected: 0 });
    const { plans } = mapTrace(run, opts);
    expect(plans).toHaveLength(1);
    const events = plans[0].events;
    expect(events[0].sessionId).toBe('sess-9');
    const created = events[0] as Extract<PlanEvent, { type: 'plan.created' }>;
    expect(created.payload.steps.map((s) => [s.agentId, s.title])).toEqual([
      ['planner', 'planner'],
      ['researcher', 'researcher'],
      ['researcher', 'book_hotel'],
    ]);
    expect(stepEnds(events).map((e) => [e.type, e.payload.inputTokens, e.payload.outputTokens])).toEqual([
      ['step.completed', 120, 30],
      ['step.failed', 0, 0],
      ['step.completed', 200, 50],
    ]);
    expect(stepEnds(events).map((e) => (e.payload as { provider?: string }).provider)).toEqual([
      'openai',
      undefined,
      'openai',
    ]);
  });
});
