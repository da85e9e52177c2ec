import { parsePlanEvent } from '../../src/contracts';
import type { PlanEvent, PlanEventInput } from '../../src/contracts';
import {
  EVENT_ID,
  OCCURRED_AT,
  accepted,
  chain,
  checkpoint,
  completed,
  created,
  decision,
  envelope,
  pairs,
  step,
  violationsOf,
} from './plan-event.fixtures';

const EXTERNAL_ID_RULE =
  "must be an external id (1-64 letters, digits, '_', '.', ':' or '-', starting with a letter or digit)";
const TIMESTAMP_RULE = 'must be an ISO-8601 timestamp in UTC, e.g. 2024-05-01T12:00:00.000Z';
const TIMESTAMP_RANGE =
  'must be between 1000-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z, the range every supported database stores alike';
const TYPES_RULE =
  'must be one of: plan.created, plan.decision, step.started, step.completed, step.failed, step.skipped, handoff.recorded, checkpoint.saved, plan.finalized, approval.requested, approval.decided';

describe('parsePlanEvent: valid events', () => {
  it.each([
    ['plan.created minimal', envelope('plan.created', { query: 'q', steps: [] })],
    [
      'plan.created full',
      created({
        requiresApproval: true,
        complexity: 100,
        steps: [
          step(0, { title: 'Research', expectedOutput: 'markdown', dependsOn: [] }),
          step(1, { dependsOn: ['s0'] }),
        ],
      }),
    ],
    ['plan.decision approve', decision({ decision: 'approve' })],
    [
      'plan.decision reject full',
      decision({ decision: 'reject', feedback: 'too broad', decidedBy: 'alice@example.com' }),
    ],
    ['plan.decision edit', decision({ decision: 'edit', steps: chain(2), feedback: '', decidedBy: 'bob' })],
    ['step.started minimal', envelope('step.started', { stepId: 's1' })],
    ['step.started full', envelope('step.started', { stepId: 's1', agentId: 'writer' })],
    ['step.completed minimal', completed()],
    [
      'step.completed full',
      completed({
        result: 'ok',
        outputContent: '# Report\n...',
        model: 'gpt-4o',
        inputTokens: 0,
        outputTokens: 2_147_483_647,
      }),
    ],
    [
      'step.completed with usage and a reported cost',
      completed({
        model: 'claude-sonnet-4-5',
        provider: 'anthropic',
        cacheReadTokens: 5,
        cacheWriteTokens: 2,
        reasoningTokens: 0,
        reportedCost: '999999999999.999999999999',
      }),
    ],
    [
      'step.failed with usage',
      envelope('step.failed', { stepId: 's1', error: 'x', provider: 'openai', cacheReadTokens: 1, reportedCost: '0' }),
    ],
    ['step.failed minimal', envelope('step.failed', { stepId: 's1', error: '' })],
    [
      'step.failed full',
      envelope('step.failed', { stepId: 's1', error: 'timeout', inputTokens: 5, outputTokens: 0, model: 'm' }),
    ],
    ['step.skipped minimal', envelope('step.skipped', { stepId: 's1' })],
    ['step.skipped full', envelope('step.skipped', { stepId: 's1', reason: 'dependency failed' })],
    [
      'handoff.recorded minimal',
      envelope('handoff.recorded', { handoffId: 'h1', fromAgentId: 'a', toAgentId: 'b', reason: 'x' }),
    ],
    [
      'handoff.recorded full',
      envelope('handoff.recorded', {
        handoffId: 'h1',
        stepId: 's1',
        fromAgentId: 'a',
        toAgentId: 'b',
        reason: 'r'.repeat(50),
        explanation: 'b knows SQL',
      }),
    ],
    ['checkpoint.saved minimal', checkpoint({})],
    [
      'checkpoint.saved full',
      checkpoint({ done: ['s0', 's1'], outputs: { s0: { text: 'x', score: 0.5, ok: true, none: null } } }),
    ],
    ['plan.finalized minimal', envelope('plan.finalized', { status: 'cancelled' })],
    [
      'plan.finalized full',
      envelope('plan.finalized', { status: 'failed', summary: 's', failureReason: 'step s2 failed' }),
    ],
    ['a leap-day occurredAt', completed({}, { occurredAt: '2024-02-29T23:59:59.999Z' })],
    ['the earliest occurredAt every database stores', completed({}, { occurredAt: '1000-01-01T00:00:00.000Z' })],
    ['the latest occurredAt every database stores', completed({}, { occurredAt: '9999-12-31T23:59:59.999Z' })],
    [
      'UUID ids and seq 0',
      envelope(
        'step.started',
        { stepId: '7d444840-9dc0-11d1-b245-5ffdce74fad2' },
        { planId: EVENT_ID, sessionId: 'tenant:a.b-c_d', seq: 0 },
      ),
    ],
  ])('accepts %s, returning it unchanged', (_name, input) => {
    expect(accepted(input)).toStrictEqual(input);
  });

  it('accepts JSON text and returns the parsed event', () => {
    expect(accepted(JSON.stringify(completed()))).toStrictEqual(completed());
  });

  it('normalises eventId to lower case and occurredAt to toISOString()', () => {
    const event = accepted(
      completed({}, { eventId: EVENT_ID.toUpperCase(), occurredAt: '2024-05-01T12:00:00.123456+00:00' }),
    );
    expect(event.eventId).toBe(EVENT_ID);
    expect(event.occurredAt).toBe('2024-05-01T12:00:00.123Z');
    expect(accepted(completed({}, { occurredAt: '2024-05-01T12:00:00Z' })).occurredAt).toBe(OCCURRED_AT);
    // past milliseconds the fraction is truncated, so the last instant of 9999 stays in range
    expect(accepted(completed({}, { occurredAt: '9999-12-31T23:59:59.999999999+00:00' })).occurredAt).toBe(
      '9999-12-31T23:59:59.999Z',
    );
    expect(accepted(completed({}, { occurredAt: '1000-01-01T00:00:00Z' })).occurredAt).toBe('1000-01-01T00:00:00.000Z');
  });

  it('returns a copy: the caller mutating its object later changes nothing', () => {
    const input = completed({ result: 'first' });
    const event = accepted(input);
    (input.payload as Record<string, unknown>).result = 'changed';
    expect(event.payload).toMatchObject({ result: 'first' });
    expect(event).not.toBe(input);
  });

  it('drops undefined optional fields, as JSON would', () => {
    expect(accepted(completed({ model: undefined })).payload).not.toHaveProperty('model');
  });

  it('narrows the payload by type (compile-time usage)', () => {
    const result = parsePlanEvent(completed({ model: 'm' }));
    if (!result.ok) throw result.error;
    const event: PlanEvent = result.event;
    if (event.type !== 'step.completed') throw new Error('wrong type');
    const tokens: number = event.payload.inputTokens + event.payload.outputTokens;
    const model: string | undefined = event.payload.model;
    expect([tokens, model]).toEqual([30, 'm']);
  });
});

/** Never called: `tsc --noEmit` checks that the types narrow and reject what they should. */
export function typeLevelChecks(event: PlanEvent): void {
  if (event.type === 'plan.finalized') {
    // @ts-expect-error a plan.finalized payload carries no token counts
    void event.payload.inputTokens;
  }
  const input: PlanEventInput = { type: 'step.started', planId: 'p', sessionId: 's', payload: { stepId: 's1' } };
  // @ts-expect-error the payload must match the type
  const wrong: PlanEventInput = { type: 'step.started', planId: 'p', sessionId: 's', payload: { status: 'failed' } };
  void [input, wrong];
}

describe('parsePlanEvent: field violations', () => {
  it.each<[string, unknown, [string, string][]]>([
    [
      'steps[2].agentId not a string',
      created({ steps: [step(0), step(1), step(2, { agentId: 42 })] }),
      [['payload.steps[2].agentId', 'payload.steps[2].agentId must be a string']],
    ],
    [
      'missing required payload field',
      completed({ inputTokens: undefined }),
      [['payload.inputTokens', 'payload.inputTokens is required']],
    ],
    [
      'reported cost as a JSON number',
      completed({ reportedCost: 0.01 }),
      [['payload.reportedCost', 'payload.reportedCost must be a string']],
    ],
    [
      'reported cost not a plain decimal',
      envelope('step.failed', { stepId: 's1', error: 'x', reportedCost: '1e-3' }),
      [
        [
          'payload.reportedCost',
          'payload.reportedCost must be a decimal string of at most 12 digits before and 12 after the point, e.g. "0.0123"',
        ],
      ],
    ],
    [
      'negative cache tokens',
      completed({ cacheReadTokens: -1 }),
      [['payload.cacheReadTokens', 'payload.cacheReadTokens must be at least 0']],
    ],
    [
      'negative tokens',
      completed({ inputTokens: -1 }),
      [['payload.inputTokens', 'payload.inputTokens must be at least 0']],
    ],
    [
      'fractional tokens',
      completed({ outputTokens: 1.5 }),
      [['payload.outputTokens', 'payload.outputTokens must be an integer']],
    ],
    [
      'numeric string, no implicit conversion',
      completed({ outputTokens: '5' }),
      [['payload.outputTokens', 'payload.outputTokens must be an integer']],
    ],
    [
      'tokens past SQL INT',
      completed({ inputTokens: 2_147_483_648 }),
      [['payload.inputTokens', 'payload.inputTokens must be at most 2147483647']],
    ],
    ['null optional field', completed({ model: null }), [['payload.model', 'payload.model must be a string']]],
    ['empty model', completed({ model: '' }), [['payload.model', 'payload.model must be 1 to 100 characters long']]],
    [
      'model over 100',
      completed({ model: 'm'.repeat(101) }),
      [['payload.model', 'payload.model must be 1 to 100 characters long']],
    ],
    [
      'handoff reason over 50',
      envelope('handoff.recorded', { handoffId: 'h', fromAgentId: 'a', toAgentId: 'b', reason: 'r'.repeat(51) }),
      [['payload.reason', 'payload.reason must be 1 to 50 characters long']],
    ],
    [
      'expectedOutput over 50',
      created({ steps: [step(0, { expectedOutput: 'x'.repeat(51) })] }),
      [['payload.steps[0].expectedOutput', 'payload.steps[0].expectedOutput must be at most 50 characters long']],
    ],
    [
      'title over 500',
      created({ steps: [step(0, { title: 't'.repeat(501) })] }),
      [['payload.steps[0].title', 'payload.steps[0].title must be at most 500 characters long']],
    ],
    [
      'decidedBy over 200',
      decision({ decision: 'approve', decidedBy: 'd'.repeat(201) }),
      [['payload.decidedBy', 'payload.decidedBy must be at most 200 characters long']],
    ],
    ['empty query', created({ query: '' }), [['payload.query', 'payload.query must not be empty']]],
    [
      'empty task',
      created({ steps: [step(0, { task: '' })] }),
      [['payload.steps[0].task', 'payload.steps[0].task must not be empty']],
    ],
    [
      'index out of range',
      created({ steps: [step(0, { index: 100_001 })] }),
      [['payload.steps[0].index', 'payload.steps[0].index must be at most 100000']],
    ],
    [
      'complexity over 100',
      created({ complexity: 101 }),
      [['payload.complexity', 'payload.complexity must be at most 100']],
    ],
    [
      'requiresApproval not boolean',
      created({ requiresApproval: 'yes' }),
      [['payload.requiresApproval', 'payload.requiresApproval must be a boolean']],
    ],
    [
      'stepId with a space',
      envelope('step.started', { stepId: 'step 1' }),
      [['payload.stepId', `payload.stepId ${EXTERNAL_ID_RULE}`]],
    ],
    ['planId too long', completed({}, { planId: 'p'.repeat(65) }), [['planId', `planId ${EXTERNAL_ID_RULE}`]]],
    ['sessionId starting with _', completed({}, { sessionId: '_s' }), [['sessionId', `sessionId ${EXTERNAL_ID_RULE}`]]],
    ['eventId not a UUID', completed({}, { eventId: 'evt-1' }), [['eventId', 'eventId must be a UUID']]],
    ['unknown type', completed({}, { type: 'step.paused' }), [['type', `type ${TYPES_RULE}`]]],
    ['missing type', completed({}, { type: undefined }), [['type', 'type is required']]],
    [
      'specVersion 2',
      completed({}, { specVersion: 2 }),
      [['specVersion', 'specVersion must be 1, the only spec version this parser supports']],
    ],
    [
      'specVersion as a string',
      completed({}, { specVersion: '1' }),
      [['specVersion', 'specVersion must be 1, the only spec version this parser supports']],
    ],
    ['negative seq', completed({}, { seq: -1 }), [['seq', 'seq must be at least 0']]],
    ['seq past SQL INT', completed({}, { seq: 2_147_483_648 }), [['seq', 'seq must be at most 2147483647']]],
    [
      'occurredAt with +02:00',
      completed({}, { occurredAt: '2024-05-01T14:00:00+02:00' }),
      [['occurredAt', `occurredAt ${TIMESTAMP_RULE}`]],
    ],
    [
      'occurredAt without zone',
      completed({}, { occurredAt: '2024-05-01T12:00:00' }),
      [['occurredAt', `occurredAt ${TIMESTAMP_RULE}`]],
    ],
    [
      'occurredAt -00:00',
      completed({}, { occurredAt: '2024-05-01T12:00:00-00:00' }),
      [['occurredAt', `occurredAt ${TIMESTAMP_RULE}`]],
    ],
    [
      'occurredAt date only',
      completed({}, { occurredAt: '2024-05-01' }),
      [['occurredAt', `occurredAt ${TIMESTAMP_RULE}`]],
    ],
    [
      'occurredAt 29 Feb of a common year',
      completed({}, { occurredAt: '2023-02-29T00:00:00Z' }),
      [['occurredAt', `occurredAt ${TIMESTAMP_RULE}`]],
    ],
    [
      'occurredAt 31 April',
      completed({}, { occurredAt: '2024-04-31T00:00:00Z' }),
      [['occurredAt', `occurredAt ${TIMESTAMP_RULE}`]],
    ],
    [
      'occurredAt 29 Feb 2100 (not a leap year)',
      completed({}, { occurredAt: '2100-02-29T00:00:00Z' }),
      [['occurredAt', `occurredAt ${TIMESTAMP_RULE}`]],
    ],
    [
      'occurredAt as epoch ms',
      completed({}, { occurredAt: 1714564800000 }),
      [['occurredAt', 'occurredAt must be a string']],
    ],
    [
      'occurredAt in year 0000 (PostgreSQL refuses it)',
      completed({}, { occurredAt: '0000-01-01T00:00:00Z' }),
      [['occurredAt', `occurredAt ${TIMESTAMP_RANGE}`]],
    ],
    [
      'occurredAt 1 ms before the range',
      completed({}, { occurredAt: '0999-12-31T23:59:59.999Z' }),
      [['occurredAt', `occurredAt ${TIMESTAMP_RANGE}`]],
    ],
    [
      'occurredAt in year 0999 as +00:00',
      completed({}, { occurredAt: '0999-06-01T12:00:00+00:00' }),
      [['occurredAt', `occurredAt ${TIMESTAMP_RANGE}`]],
    ],
    [
      'occurredAt 29 Feb 0800, a valid date before the range',
      completed({}, { occurredAt: '0800-02-29T00:00:00Z' }),
      [['occurredAt', `occurredAt ${TIMESTAMP_RANGE}`]],
    ],
    [
      'occurredAt with a 5-digit year',
      completed({}, { occurredAt: '10000-01-01T00:00:00Z' }),
      [['occurredAt', `occurredAt ${TIMESTAMP_RULE}`]],
    ],
    [
      'occurredAt with an expanded year',
      completed({}, { occurredAt: '+010000-01-01T00:00:00.000Z' }),
      [['occurredAt', `occurredAt ${TIMESTAMP_RULE}`]],
    ],
    ['payload an array', completed({}, { payload: [] }), [['payload', 'payload must be an object']]],
    ['payload a string', completed({}, { payload: 'x' }), [['payload', 'payload must be an object']]],
    ['payload missing', completed({}, { payload: undefined }), [['payload', 'payload is required']]],
    [
      'unknown type: payload only needs to be an object',
      completed({}, { type: 'x', payload: { anything: 1 } }),
      [['type', `type ${TYPES_RULE}`]],
    ],
    ['unknown top-level field', completed({}, { traceId: 'x' }), [['traceId', 'traceId is not an allowed field']]],
    ['unknown payload field', completed({ cost: 1 }), [['payload.cost', 'payload.cost is not an allowed field']]],
    [
      'unknown step field',
      created({ steps: [step(0, { tool: 'x' })] }),
      [['payload.steps[0].tool', 'payload.steps[0].tool is not an allowed field']],
    ],
    [
      'unknown field with an odd name',
      completed({ 'a b': 1 }),
      [['payload["a b"]', 'payload["a b"] is not an allowed field']],
    ],
    [
      'unknown field named like an index',
      completed({ '2': 1 }),
      [['payload["2"]', 'payload["2"] is not an allowed field']],
    ],
    [
      'bad decision',
      decision({ decision: 'maybe' }),
      [['payload.decision', 'payload.decision must be one of: approve, edit, reject']],
    ],
    [
      'bad final status',
      envelope('plan.finalized', { status: 'done' }),
      [['payload.status', 'payload.status must be one of: completed, failed, cancelled']],
    ],
    ['state an array', checkpoint([]), [['payload.state', 'payload.state must be an object']]],
    ['state null', checkpoint(null), [['payload.state', 'payload.state must be an object']]],
    [
      'negative layer',
      envelope('checkpoint.saved', { checkpointId: 'c', layer: -1, state: {} }),
      [['payload.layer', 'payload.layer must be at least 0']],
    ],
    ['steps missing', created({ steps: undefined }), [['payload.steps', 'payload.steps is required']]],
    ['steps null', created({ steps: null }), [['payload.steps', 'payload.steps must be an array']]],
    ['steps not an array', created({ steps: {} }), [['payload.steps', 'payload.steps must be an array']]],
    [
      'a step that is not an object',
      created({ steps: [step(0), 'step 1', step(2)] }),
      [['payload.steps[1]', 'payload.steps[1] must be an object']],
    ],
    [
      'a step that is an array',
      created({ steps: [[step(0)]] }),
      [['payload.steps[0]', 'payload.steps[0] must be an object']],
    ],
    [
      'dependsOn not an array',
      created({ steps: [step(0, { dependsOn: 's1' })] }),
      [['payload.steps[0].dependsOn', 'payload.steps[0].dependsOn must be an array']],
    ],
    [
      'dependsOn with a bad id',
      created({ steps: [step(0), step(1, { dependsOn: ['s0', 7] })] }),
      [['payload.steps[1].dependsOn', 'payload.steps[1].dependsOn must contain only external ids']],
    ],
    [
      'dependsOn with a repeated id',
      created({ steps: [step(0), step(1, { dependsOn: ['s0', 's0'] })] }),
      [['payload.steps[1].dependsOn', 'payload.steps[1].dependsOn must not contain duplicates']],
    ],
  ])('%s', (_name, input, expected) => {
    expect(pairs(input)).toEqual(expected);
  });

  it('lists every violation at once, envelope first, in one message', () => {
    const input = created({ query: 5, steps: [step(0, { agentId: null, extra: 1 })] });
    Object.assign(input, { specVersion: 3, seq: 'x', occurredAt: 'yesterday' });
    const result = parsePlanEvent(input);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error.violations.map((v) => v.path)).toEqual([
      'specVersion',
      'seq',
      'occurredAt',
      'payload.query',
      'payload.steps[0].extra',
      'payload.steps[0].agentId',
    ]);
    expect(result.error.message).toBe(
      'invalid plan event: specVersion must be 1, the only spec version this parser supports; seq must be an integer; ' +
        `occurredAt ${TIMESTAMP_RULE}; payload.query must be a string; payload.steps[0].extra is not an allowed field; ` +
        'payload.steps[0].agentId must be a string',
    );
  });

  it('never echoes values into messages', () => {
    const secret = 'SECRET-VALUE-42';
    const result = parsePlanEvent(
      completed(
        { model: secret.repeat(10), inputTokens: secret, stepId: `${secret} x` },
        { planId: `${secret} `, occurredAt: secret },
      ),
    );
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error.message).not.toContain(secret);
  });

  it('caps the list at 50 violations plus a count of the rest', () => {
    const payload = Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`extra${i}`, i]));
    const violations = violationsOf(completed(payload));
    expect(violations).toHaveLength(51);
    expect(violations[50]).toEqual({ path: '', message: '(root) has 10 more violations (not listed)' });
  });

  it('quotes an unknown key on one line, whatever characters it holds', () => {
    const [violation] = violationsOf(completed({ 'evil\nkey\u2028': 1 }));
    expect(violation.path).toBe('payload["evil\\nkey\\u2028"]');
    expect(violation.message).not.toMatch(/[\n\u2028]/);
  });
});
