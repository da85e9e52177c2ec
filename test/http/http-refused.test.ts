import type { PlanEvent } from '../../src/contracts';
import { TestDb } from '../support/databases';
import { planRun } from '../support/event-factory';
import { openRedis, readDeadLetters, waitFor } from '../worker/helpers/queue-harness';
import { ADMIN_KEY, ApiStack, call, INGEST_KEY, READ_KEY, startApiStack } from './http-harness';

jest.setTimeout(90_000);

type Completed = Extract<PlanEvent, { type: 'step.completed' }>;

describe.each<TestDb>(['sqlite', 'postgres'])('events serve refuses, and read-your-writes, on %s', (kind) => {
  let stack: ApiStack;
  beforeAll(async () => {
    // a gap is waited for forever: a refused event's seq must be voided, never timed out
    stack = await startApiStack(kind, { workerSettings: { gapTimeoutMs: 0 }, env: { HTTP_ADMIN_KEYS: ADMIN_KEY } });
  });
  afterAll(async () => stack?.close());

  const deadLetters = async () => {
    const redis = openRedis();
    try {
      return await readDeadLetters(redis, stack.prefix);
    } finally {
      redis.disconnect();
    }
  };
  const planHead = async (planId: string) => {
    const [h] = await stack.db.ds.query(
      `SELECT applied_seq, pending_events FROM plan_heads WHERE plan_id = '${planId}'`,
    );
    return h && { applied: h.applied_seq === null ? null : Number(h.applied_seq), pending: Number(h.pending_events) };
  };
  const status = (eventIds: unknown, waitMs?: number, key?: string | null) =>
    call(stack, 'POST', '/v1/events/status', { key, body: waitMs === undefined ? { eventIds } : { eventIds, waitMs } });

  it("an event refused in the middle of a plan goes to the dead-letter queue with its reason and content, and the plan's later events apply at once", async () => {
    const events = planRun({ seed: 71, steps: 3 });
    const at = events.findIndex((e) => e.type === 'step.completed');
    const good = events[at] as Completed;
    const refused = { ...good, payload: { ...good.payload, inputTokens: -1 } };
    const batch = events.map((e, i) => (i === at ? refused : e));
    const res = await call(stack, 'POST', '/v1/events', { body: batch });
    expect(res.status).toBe(202);
    expect(res.json).toMatchObject({ accepted: events.length - 1, invalid: 1 });
    expect(res.json.results[at]).toMatchObject({
      status: 'invalid',
      violations: [expect.objectContaining({ path: 'payload.inputTokens' })],
    });

    const planId = good.planId;
    const last = Math.max(...events.map((e) => e.seq));
    await waitFor(
      'the plan applied past the refused seq',
      async () => (await planHead(planId))?.applied === last,
      60_000,
      100,
    );
    expect(await planHead(planId)).toEqual({ applied: last, pending: 0 });
    const [plan] = await stack.db.ds.query(`SELECT status FROM execution_plans WHERE id = '${planId}'`);
    expect(plan.status).toBe('completed'); // plan.finalized, after the refused seq, is applied

    const letters = (await deadLetters()).filter((l) => l.eventId === refused.eventId);
    expect(letters).toHaveLength(1);
    expect(letters[0]).toMatchObject({
      kind: 'invalid',
      event: refused,
      planId,
      error: { violations: [expect.objectContaining({ path: 'payload.inputTokens' })] },
    });

    // read your writes: every published id is applied, the refused one is refused, an unknown one unknown
    const unknown = '0196b1f4-0000-7000-8000-000000000000';
    const answer = await status([...events.map((e) => e.eventId.toUpperCase()), unknown]);
    expect(answer.status).toBe(200);
    expect(answer.json).toEqual({
      applied: events.filter((e) => e !== good).map((e) => e.eventId),
      waiting: [],
      refused: [good.eventId],
      unknown: [unknown],
    });
  });

  it('an event too large for a job is forwarded as its identity and a note, dead-lettered, and its seq voided', async () => {
    const events = planRun({ seed: 72, steps: 2 });
    const at = events.findIndex((e) => e.type === 'step.completed');
    const good = events[at] as Completed;
    const huge = { ...good, payload: { ...good.payload, outputContent: 'x'.repeat(1_100_000) } };
    const res = await call(stack, 'POST', '/v1/events', { body: events.map((e, i) => (i === at ? huge : e)) });
    expect(res.json).toMatchObject({ accepted: events.length - 1, invalid: 1 });
    const last = Math.max(...events.map((e) => e.seq));
    await waitFor(
      'the plan applied past the refused seq',
      async () => (await planHead(good.planId))?.applied === last,
      60_000,
      100,
    );
    const [letter] = (await deadLetters()).filter((l) => l.eventId === good.eventId);
    expect(letter.kind).toBe('invalid');
    expect(letter.event).toMatchObject({
      eventId: good.eventId,
      planId: good.planId,
      seq: good.seq,
      payload: expect.stringMatching(
        /^omitted by plan-ledger: the event was \d+ bytes of JSON, over the limit of 1048576$/,
      ),
    });
    expect((await status([good.eventId])).json.refused).toEqual([good.eventId]);
  });

  it('answers a refused event with every rule it breaks, the first of each field (a 2 MB output holding a NUL: both)', async () => {
    const events = planRun({ seed: 74, steps: 2 });
    const at = events.findIndex((e) => e.type === 'step.completed');
    const good = events[at] as Completed;
    const output = `${'x'.repeat(2_000_000)}\u0000`;
    const broken = { ...good, payload: { ...good.payload, outputContent: output } };
    const alsoBroken = {
      ...good,
      eventId: '0196b1f4-0000-7000-8000-0000000000aa',
      seq: -1,
      payload: { ...good.payload, result: 'a\u0000', stepId: undefined },
    };
    const res = await call(stack, 'POST', '/v1/events', { body: [broken, alsoBroken] });
    expect(res.status).toBe(202);
    const nul = (path: string) => ({
      path,
      message: `${path} must not contain the NUL character (U+0000): PostgreSQL cannot store it`,
    });
    expect(res.json).toMatchObject({ accepted: 0, invalid: 2 });
    expect(res.json.results[0].violations).toEqual([
      nul('payload.outputContent'),
      { path: '', message: '(root) must be at most 1048576 bytes of UTF-8 JSON' },
    ]);
    expect(res.json.results[1].violations).toEqual([
      { path: 'seq', message: 'seq must be at least 0' },
      nul('payload.result'),
      { path: 'payload.stepId', message: 'payload.stepId is required' },
    ]);
  });

  it('waits for events to be applied when asked (waitMs), and refuses a malformed request with one line', async () => {
    const events = planRun({ seed: 73, steps: 4 });
    expect((await call(stack, 'POST', '/v1/events', { body: events })).status).toBe(202);
    // asked at once: answered when every id is applied, not before
    const answer = await status(
      events.map((e) => e.eventId),
      30_000,
    );
    expect(answer.json).toEqual({ applied: events.map((e) => e.eventId), waiting: [], refused: [], unknown: [] });

    const bad = [
      [{ eventIds: 'x' }, 'eventIds: must be an array of event ids'],
      [{ eventIds: ['nope'] }, 'eventIds[0]: must be an event id (a UUID)'],
      [{ eventIds: [], waitMs: -1 }, 'waitMs: must be an integer from 0 to 30000'],
      [{ eventIds: [], waitMs: 30_001 }, 'waitMs: must be an integer from 0 to 30000'],
      [[], 'body: must be a JSON object { "eventIds": [...], "waitMs": 0 }'],
      [
        { eventIds: Array.from({ length: 10_001 }, () => events[0].eventId) },
        'eventIds: at most 10000 ids per request (got 10001)',
      ],
    ] as const;
    for (const [body, error] of bad) {
      const r = await call(stack, 'POST', '/v1/events/status', { body });
      expect({ status: r.status, json: r.json }).toEqual({ status: 400, json: { error } });
    }
    // ingest, read and admin keys may ask; none, or an unknown key, may not
    const ids = [events[0].eventId];
    expect([
      (await status(ids, 0, INGEST_KEY)).status,
      (await status(ids, 0, READ_KEY)).status,
      (await status(ids, 0, ADMIN_KEY)).status,
    ]).toEqual([200, 200, 200]);
    expect([
      (await status(ids, 0, null)).status,
      (await status(ids, 0, 'not-a-key-but-long-enough-000')).status,
    ]).toEqual([401, 401]);
  });

  it('a session that never had a plan has no active plan (200, activePlan null), not 404', async () => {
    const res = await call(stack, 'GET', '/v1/sessions/never-seen/active');
    expect({ status: res.status, json: res.json }).toEqual({
      status: 200,
      json: { sessionId: 'never-seen', activePlan: null, otherActivePlanIds: [] },
    });
  });
});
