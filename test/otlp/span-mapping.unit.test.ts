import fc from 'fast-check';
import { checkStoredEvent, PlanEvent } from '../../src/contracts';
import { decodeTraces, encodeRequest, encodeResponse } from '../../src/otlp/otlp-codec';
import { derivedEventIds, mapTrace, OVERRIDE } from '../../src/otlp/span-mapping';
import { planSourceOf } from '../../src/otlp/trace-source';
import { formatPlanHeader } from '../../src/queries/plan-timeline.format';
import { TraceAssembler } from '../../src/otlp/trace-assembler';
import type { OtlpSpan } from '../../src/otlp/otlp-span';
import { genAiRun, hexId, openAiAgentsRun, openInferenceRun, otlpAttributes, span } from './otlp-fixtures';

const TRACE = '0af7651916cd43dd8448eb211c80319c';
const opts = { captureContent: false };

function byType(events: PlanEvent[], type: PlanEvent['type']) {
  return events.filter((e) => e.type === type);
}

describe('span mapping: GenAI conventions', () => {
  const { plans, mapped, unmapped } = mapTrace(genAiRun(TRACE), opts);
  const events = plans[0].events;

  it('makes one plan of the workflow span, with every event valid under the contract and seqs without gaps', () => {
    expect(plans).toHaveLength(1);
    expect(plans[0].planId).toBe(`otlp-${TRACE}`);
    for (const e of events) expect(checkStoredEvent(e)).toMatchObject({ ok: true });
    expect(events.map((e) => e.seq)).toEqual(events.map((_e, i) => i));
    expect(events[0].type).toBe('plan.created');
    expect(events.at(-1)!.type).toBe('plan.finalized');
    expect(new Set(events.map((e) => e.eventId)).size).toBe(events.length);
    expect(events.every((e) => e.sessionId === 'conv-42')).toBe(true);
  });

  it('turns agent and tool spans into steps, with tokens and model from the LLM spans (old and new names)', () => {
    const created = events[0] as Extract<PlanEvent, { type: 'plan.created' }>;
    expect(created.payload.steps.map((s) => [s.agentId, s.title])).toEqual([
      ['planner', 'planner'],
      ['researcher', 'researcher'],
      ['researcher', 'search_flights'],
      ['researcher', 'book_hotel'],
      ['writer', 'writer'],
    ]);
    const done = byType(events, 'step.completed').map((e) => e.payload);
    expect(done).toContainEqual(
      expect.objectContaining({ inputTokens: 120, outputTokens: 30, model: 'gpt-4o-2024-08-06' }),
    );
    expect(done).toContainEqual(expect.objectContaining({ inputTokens: 200, outputTokens: 50, model: 'gpt-4o-mini' }));
    expect(done).toContainEqual(expect.objectContaining({ inputTokens: 300, outputTokens: 400, model: 'gpt-4o' }));
  });

  it('derives dependsOn from the span tree and the time order of siblings', () => {
    const steps = (events[0] as Extract<PlanEvent, { type: 'plan.created' }>).payload.steps;
    expect(steps[3].dependsOn).toEqual([hexId('tool1')]);
    expect(steps[4].dependsOn).toEqual([hexId('planner')]);
    expect(steps[0].dependsOn).toBeUndefined();
  });

  it('records the handoff of one agent to another, and the failed tool with its exception', () => {
    expect(byType(events, 'handoff.recorded').map((e) => e.payload)).toEqual([
      expect.objectContaining({ fromAgentId: 'planner', toAgentId: 'researcher', stepId: hexId('research') }),
    ]);
    expect(byType(events, 'step.failed').map((e) => e.payload)).toEqual([
      expect.objectContaining({ stepId: hexId('tool2'), error: 'HotelApiError: no rooms left' }),
    ]);
    expect(byType(events, 'plan.finalized')[0].payload).toEqual({ status: 'completed' });
  });

  it('counts the spans it does not map', () => {
    expect(mapped).toBe(8);
    expect([...unmapped]).toEqual([['inside a plan but neither an agent, tool nor LLM span', 1]]);
  });

  it('stores prompts and outputs only when content capture is on', () => {
    const text = JSON.stringify(events);
    expect(text).not.toContain('Lisbon');
    expect(text).not.toContain('3 flights found');
    const captured = JSON.stringify(mapTrace(genAiRun(TRACE), { captureContent: true }).plans[0].events);
    expect(captured).toContain('Plan a weekend in Lisbon');
    expect(captured).toContain('3 flights found');
  });
});

describe('span mapping: OpenInference, the OpenAI Agents SDK handing off', () => {
  const stepsOf = (events: PlanEvent[]) =>
    (events[0] as Extract<PlanEvent, { type: 'plan.created' }>).payload.steps.map((s) => [s.agentId, s.title]);

  for (const graphNodes of [true, false])
    describe(
      graphNodes ? 'with graph.node.id / parent_id' : 'with the handoff span only (no graph.node attributes)',
      () => {
        const result = mapTrace(openAiAgentsRun(TRACE, { graphNodes }), opts);
        const events = result.plans[0].events;

        it('records one handoff, from the triage agent to the billing agent, and no delegation from the service', () => {
          expect(result.plans).toHaveLength(1);
          expect(byType(events, 'handoff.recorded').map((e) => e.payload)).toEqual([
            {
              handoffId: `handoff-${hexId('billing')}`,
              stepId: hexId('billing'),
              fromAgentId: 'Triage Agent',
              toAgentId: 'Billing Agent',
              reason: 'handoff',
            },
          ]);
          for (const e of events) expect(checkStoredEvent(e)).toMatchObject({ ok: true });
        });

        it('makes steps of the agents and their tools only: neither the workflow wrapper nor the handoff span is a step', () => {
          expect(stepsOf(events)).toEqual([
            ['Triage Agent', 'Triage Agent'],
            ['Billing Agent', 'Billing Agent'],
            ['Billing Agent', 'lookup_invoice'],
            ['Billing Agent', 'lookup_invoice'],
          ]);
          expect(byType(events, 'step.failed').map((e) => (e.payload as { stepId: string }).stepId)).toEqual([
            hexId('call1'),
          ]);
        });

        it('counts every span as mapped, the tokens on the agents that called the model', () => {
          expect([...result.unmapped]).toEqual([]);
          expect(result.mapped).toBe(9);
          const done = byType(events, 'step.completed').map((e) => e.payload);
          expect(done).toContainEqual(
            expect.objectContaining({ stepId: hexId('triage'), inputTokens: 300, outputTokens: 20 }),
          );
          expect(done).toContainEqual(
            expect.objectContaining({
              stepId: hexId('billing'),
              inputTokens: 1400,
              outputTokens: 100,
              cacheReadTokens: 512,
            }),
          );
        });
      },
    );

  it('reads graph.node.parent_id as the node it names: the agent of the span that is that node', () => {
    const spans = openAiAgentsRun(TRACE).map((s) =>
      s.spanId === hexId('triage')
        ? { ...s, attributes: { ...s.attributes, 'graph.node.id': 'node-1' } }
        : s.spanId === hexId('billing')
          ? { ...s, attributes: { ...s.attributes, 'graph.node.parent_id': 'node-1' } }
          : s,
    );
    const handoffs = byType(mapTrace(spans, opts).plans[0].events, 'handoff.recorded').map((e) => e.payload);
    expect(handoffs).toEqual([expect.objectContaining({ fromAgentId: 'Triage Agent', toAgentId: 'Billing Agent' })]);
  });

  it('keeps a wrapper that reports usage as a step, so its tokens are stored', () => {
    const nested = (usage: boolean) =>
      [
        span(TRACE, { id: 'top', name: 'run', start: 0, end: 950, attrs: { 'openinference.span.kind': 'CHAIN' } }),
        ...openAiAgentsRun(TRACE),
      ].map((s) =>
        s.spanId === hexId('wf')
          ? {
              ...s,
              parentSpanId: hexId('top'),
              attributes: { ...s.attributes, ...(usage ? { 'llm.token_count.prompt': 50 } : {}) },
            }
          : s,
      );
    const steps = (usage: boolean) =>
      (mapTrace(nested(usage), opts).plans[0].events[0] as Extract<PlanEvent, { type: 'plan.created' }>).payload.steps;
    expect(steps(false).map((s) => s.agentId)).toEqual([
      'Triage Agent',
      'Billing Agent',
      'Billing Agent',
      'Billing Agent',
    ]);
    expect(steps(true).map((s) => s.agentId)).toEqual([
      'Agent workflow',
      'Triage Agent',
      'Billing Agent',
      'Billing Agent',
      'Billing Agent',
    ]);
  });

  it('counts out a handoff span whose agent never runs in the plan, with its reason', () => {
    const spans = openAiAgentsRun(TRACE, { graphNodes: false }).map((s) =>
      s.spanId === hexId('handoff') ? { ...s, name: 'handoff to Refunds Agent' } : s,
    );
    const result = mapTrace(spans, opts);
    expect([...result.unmapped]).toEqual([['a handoff span naming an agent that has no later span in its plan', 1]]);
    expect(byType(result.plans[0].events, 'handoff.recorded')).toEqual([]);
  });
});

describe('span mapping: OpenInference and overrides', () => {
  it('maps a LangGraph-shaped trace: the root CHAIN is the plan, its nodes are steps, session.id the session', () => {
    const { plans } = mapTrace(openInferenceRun(TRACE), opts);
    const events = plans[0].events;
    expect(events[0].sessionId).toBe('thread-7');
    const steps = (events[0] as Extract<PlanEvent, { type: 'plan.created' }>).payload.steps;
    expect(steps.map((s) => s.task)).toEqual(['agent', 'tools', 'get_weather', 'agent']);
    expect(byType(events, 'step.completed')[0].payload).toMatchObject({
      inputTokens: 40,
      outputTokens: 12,
      model: 'scripted-model',
    });
    for (const e of events) expect(checkStoredEvent(e)).toMatchObject({ ok: true });
  });

  it('takes the outermost agent span as the plan when there is no workflow span; its own LLM call is a step', () => {
    const spans = genAiRun(TRACE).filter((s) => s.spanId !== hexId('root') && s.spanId !== hexId('writer'));
    const { plans } = mapTrace(spans, opts);
    expect(plans).toHaveLength(1);
    const created = plans[0].events[0] as Extract<PlanEvent, { type: 'plan.created' }>;
    expect(created.payload.steps.map((s) => s.agentId)).toEqual(['planner', 'researcher', 'researcher', 'researcher']);
    expect(created.payload.steps[0].task).toBe('chat gpt-4o');
    expect(byType(plans[0].events, 'handoff.recorded')[0].payload).toMatchObject({ fromAgentId: 'planner' });
  });

  it('honours the plan id, step id and depends-on attributes', () => {
    const spans = genAiRun(TRACE).map((s) => {
      if (s.spanId === hexId('root')) return { ...s, attributes: { ...s.attributes, [OVERRIDE.planId]: 'trip-2026' } };
      if (s.spanId === hexId('planner'))
        return { ...s, attributes: { ...s.attributes, [OVERRIDE.stepId]: 'plan-the-trip' } };
      if (s.spanId === hexId('tool1'))
        return { ...s, attributes: { ...s.attributes, [OVERRIDE.dependsOn]: ['plan-the-trip'] } };
      return s;
    });
    const events = mapTrace(spans, opts).plans[0].events;
    expect(events[0].planId).toBe('trip-2026');
    const steps = (events[0] as Extract<PlanEvent, { type: 'plan.created' }>).payload.steps;
    expect(steps[0].stepId).toBe('plan-the-trip');
    expect(steps[2].dependsOn).toEqual(['plan-the-trip']);
  });

  it('records a handoff declared by plan_ledger.handoff_from instead of the one the tree implies', () => {
    const spans = genAiRun(TRACE).map((s) =>
      s.spanId === hexId('writer')
        ? {
            ...s,
            attributes: {
              ...s.attributes,
              [OVERRIDE.handoffFrom]: 'researcher',
              [OVERRIDE.handoffReason]: 'draft_ready',
            },
          }
        : s,
    );
    const handoffs = byType(mapTrace(spans, opts).plans[0].events, 'handoff.recorded').map((e) => e.payload);
    expect(handoffs).toEqual([
      expect.objectContaining({ fromAgentId: 'planner', toAgentId: 'researcher', reason: 'delegation' }),
      expect.objectContaining({
        fromAgentId: 'researcher',
        toAgentId: 'writer',
        reason: 'draft_ready',
        stepId: hexId('writer'),
      }),
    ]);
  });

  it('maps a trace with nothing GenAI to no plan, counting its spans', () => {
    const plain = [span(TRACE, { id: 'a', name: 'GET /', start: 0, end: 5 })];
    const result = mapTrace(plain, opts);
    expect(result.plans).toEqual([]);
    expect([...result.unmapped]).toEqual([['no GenAI or OpenInference attributes', 1]]);
  });
});

describe('span mapping: order, duplicates and batches change nothing', () => {
  const spans = [
    ...genAiRun(TRACE),
    ...openInferenceRun(TRACE).map((s) => ({ ...s, traceId: TRACE.replace('0', '1') })),
  ];
  const byTrace = (list: OtlpSpan[]) =>
    [...new Set(list.map((s) => s.traceId))].sort().flatMap(
      (t) =>
        mapTrace(
          list.filter((s) => s.traceId === t),
          opts,
        ).plans,
    );
  const expected = byTrace(spans);

  it('shuffled and duplicated spans give the same events (property)', () => {
    fc.assert(
      fc.property(
        fc.shuffledSubarray(spans, { minLength: 0 }),
        fc.infiniteStream(fc.nat(spans.length - 1)),
        (extra, pick) => {
          const dupes = extra.slice(0, 5).map((_, i) => spans[pick.next().value % spans.length] ?? spans[i]);
          const shuffled = fc.sample(
            fc.shuffledSubarray([...spans, ...dupes], { minLength: spans.length + dupes.length }),
            1,
          )[0];
          expect(byTrace(shuffled)).toEqual(expected);
        },
      ),
      { numRuns: 50 },
    );
  });

  it('spans split over requests in any order, retried, give the same events as the whole trace (property)', () => {
    fc.assert(
      fc.property(
        fc.shuffledSubarray(spans, { minLength: spans.length, maxLength: spans.length }),
        fc.array(fc.integer({ min: 1, max: 6 }), { minLength: 1, maxLength: 10 }),
        fc.nat(3),
        (order, sizes, retries) => {
          const published: PlanEvent[][] = [];
          let now = 0;
          const assembler = new TraceAssembler(
            { captureContent: false, quietMs: 100, rootlessMs: 1_000, maxSpans: 10_000 },
            { publish: (events) => published.push(events), unmapped: () => undefined },
            () => now,
          );
          const requests: OtlpSpan[][] = [];
          for (let at = 0, i = 0; at < order.length; i++) {
            const size = sizes[i % sizes.length];
            requests.push(order.slice(at, at + size));
            at += size;
          }
          for (let i = 0; i < retries && i < requests.length; i++) requests.push(requests[i]);
          for (const request of requests) {
            expect(assembler.add(request).ok).toBe(true);
            now += 10;
            assembler.flushDue();
          }
          now += 100;
          assembler.flushDue();
          const sorted = published.sort((a, b) => (a[0].planId < b[0].planId ? -1 : 1));
          expect(sorted).toEqual([...expected].sort((a, b) => (a.planId < b.planId ? -1 : 1)).map((p) => p.events));
        },
      ),
      { numRuns: 60 },
    );
  });

  it('refuses a request past the held-span bound, taking nothing of it', () => {
    const assembler = new TraceAssembler(
      { captureContent: false, quietMs: 100, rootlessMs: 1_000, maxSpans: 10 },
      { publish: () => undefined, unmapped: () => undefined },
    );
    expect(assembler.add(genAiRun(TRACE)).ok).toBe(true);
    expect(assembler.add(openInferenceRun(TRACE.replace('0', '2')))).toMatchObject({ ok: false });
    expect(assembler.heldSpans).toBe(9);
  });
});

describe('plan source', () => {
  it('is stored in the plan.created of a plan mapped from a trace, whatever its plan id; a plan sent as events has none', () => {
    const source = (spans: OtlpSpan[]) => planSourceOf(mapTrace(spans, opts).plans[0].events[0].payload);
    expect(source(genAiRun(TRACE))).toEqual({ kind: 'opentelemetry', traceId: TRACE });
    const renamed = genAiRun(TRACE).map((s) =>
      s.spanId === hexId('root') ? { ...s, attributes: { ...s.attributes, [OVERRIDE.planId]: 'trip-2026' } } : s,
    );
    expect(source(renamed)).toEqual({ kind: 'opentelemetry', traceId: TRACE });
    // the event id says nothing: a sender may stamp version 8 UUIDs too
    const sent = { eventId: derivedEventIds('p', 's')('plan.created'), payload: { query: 'q', steps: [] } };
    expect(planSourceOf(sent.payload)).toEqual({ kind: 'events', traceId: null });
    expect(planSourceOf(undefined)).toEqual({ kind: 'events', traceId: null });
    const plan = {
      planId: `otlp-${TRACE}`,
      status: 'completed',
      sessionId: 's',
      query: 'q',
      totalSteps: 0,
      completedSteps: 0,
      failedSteps: 0,
      skippedSteps: 0,
      inputTokens: 0,
      outputTokens: 0,
    } as never;
    expect(formatPlanHeader(plan, { steps: [], source: { kind: 'opentelemetry', traceId: TRACE } })[2]).toBe(
      `source:    OpenTelemetry trace ${TRACE}`,
    );
    expect(formatPlanHeader(plan, { steps: [], source: { kind: 'events', traceId: null } })[2]).toMatch(/^steps:/);
  });
});

describe('OTLP codec', () => {
  it('reads the same spans from protobuf and from OTLP/JSON, and answers partialSuccess in each', () => {
    const json = {
      resourceSpans: [
        {
          resource: { attributes: otlpAttributes({ 'service.name': 'svc' }) },
          scopeSpans: [
            {
              spans: [
                {
                  traceId: TRACE,
                  spanId: hexId('a'),
                  name: 'invoke_agent a',
                  startTimeUnixNano: '1767225600000000000',
                  endTimeUnixNano: '1767225600100000000',
                  attributes: otlpAttributes({
                    'gen_ai.operation.name': 'invoke_agent',
                    'gen_ai.usage.input_tokens': 7,
                  }),
                  status: { code: 2, message: 'boom' },
                },
              ],
            },
          ],
        },
      ],
    };
    const fromJson = decodeTraces('json', json);
    const proto = JSON.parse(JSON.stringify(json), (k: string, v: unknown) =>
      (k === 'traceId' || k === 'spanId') && typeof v === 'string' ? Buffer.from(v, 'hex') : v,
    );
    expect(decodeTraces('protobuf', encodeRequest(proto))).toEqual(fromJson);
    expect(fromJson[0]).toMatchObject({
      attributes: { 'service.name': 'svc', 'gen_ai.usage.input_tokens': 7 },
      statusCode: 2,
    });
    expect(encodeResponse('json', 2, 'why')).toEqual({ partialSuccess: { rejectedSpans: '2', errorMessage: 'why' } });
    expect(encodeResponse('json', 0, '')).toEqual({});
  });

  it('says what is wrong with a body it cannot read', () => {
    expect(() => decodeTraces('protobuf', Buffer.from([0x0a, 0xff, 0xff]))).toThrow(
      /not a protobuf ExportTraceServiceRequest/,
    );
    expect(() => decodeTraces('json', [])).toThrow(/ExportTraceServiceRequest object/);
    expect(() => decodeTraces('json', { resourceSpans: [{ scopeSpans: [{ spans: [{ traceId: 'xyz' }] }] }] })).toThrow(
      /resourceSpans\[0\]\.scopeSpans\[0\]\.spans\[0\]\.traceId must be 32 hex digits/,
    );
  });
});
