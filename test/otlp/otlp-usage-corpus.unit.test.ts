import type { PlanEvent } from '../../src/contracts';
import { decodeTraces } from '../../src/otlp/otlp-codec';
import { mapTrace } from '../../src/otlp/span-mapping';
import { CASES, caseName, loadCase, requestBody } from '../fixtures/otlp-usage/cases';

type StepEnd = Extract<PlanEvent, { type: 'step.completed' | 'step.failed' }>;

describe.each(CASES.map(caseName))('the usage corpus through the mapping: %s', (name) => {
  const { requests, expected } = loadCase(name);
  const spans = requests.flatMap((r) => {
    const { format, body } = requestBody(r);
    return decodeTraces(format, body);
  });
  const { plans } = mapTrace(spans, { captureContent: false });

  it('makes one plan of the run, with its session', () => {
    expect(plans.map((p) => p.events[0]?.planId)).toEqual([expected.planId]);
    expect(plans[0]!.events[0]).toMatchObject({ type: 'plan.created', sessionId: expected.sessionId });
  });

  it('stores every token the spans carry: input (cache included), output, cache read and write, reasoning', () => {
    const ends = plans[0]!.events.filter((e): e is StepEnd => e.type === 'step.completed' || e.type === 'step.failed');
    const sum = (k: 'inputTokens' | 'outputTokens' | 'cacheReadTokens' | 'cacheWriteTokens' | 'reasoningTokens') =>
      ends.reduce((n, e) => n + (e.payload[k] ?? 0), 0);
    const { cost: _cost, ...tokens } = expected.stored;
    expect({
      input: sum('inputTokens'),
      output: sum('outputTokens'),
      cacheRead: sum('cacheReadTokens'),
      cacheWrite: sum('cacheWriteTokens'),
      reasoning: sum('reasoningTokens'),
    }).toEqual(tokens);
  });

  it('fails the tool call that failed, and only it', () => {
    const failed = plans[0]!.events.filter((e) => e.type === 'step.failed');
    expect(failed).toHaveLength(1);
    expect(failed[0]!.payload).toMatchObject({ error: expect.stringContaining('no rooms left') });
  });
});
