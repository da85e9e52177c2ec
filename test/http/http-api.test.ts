import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { PlanEventPublisher } from '../../src/publisher';
import { getPlanLineage } from '../../src/queries/plan-lineage.query';
import { getActivePlan } from '../../src/queries/session-plans.query';
import { PlanEventStore } from '../../src/store/plan-event-store';
import { getResumePoint } from '../../src/queries/workflow-resume.query';
import { runCli } from '../support/cli';
import { TestDb } from '../support/databases';
import { invalidEvent, planRun } from '../support/event-factory';
import { planEvents } from '../support/fork-events';
import { freePort } from '../publisher/support/redis-process';
import { countRows, openRedis, queueCounts, REDIS_URL, silentLogger, waitFor } from '../worker/helpers/queue-harness';
import { ApiStack, call, INGEST_KEY, READ_KEY, startApiStack } from './http-harness';

jest.setTimeout(90_000);

describe.each<TestDb>(['sqlite', 'postgres'])('plan-ledger serve on %s', (kind) => {
  let stack: ApiStack;
  beforeAll(async () => {
    stack = await startApiStack(kind);
  });
  afterAll(async () => {
    await stack?.close();
  });

  it('stores a valid batch, answers invalid events with their violations and keeps their valid neighbours', async () => {
    const events = planRun({ seed: 11, steps: 3 });
    const broken = invalidEvent(11);
    const batch = [events[0], broken, ...events.slice(1)];
    const res = await call(stack, 'POST', '/v1/events', { body: batch });
    expect(res.status).toBe(202);
    expect(res.json).toMatchObject({ accepted: events.length, invalid: 1, dropped: 0 });
    expect(res.json.results[0]).toEqual({
      index: 0,
      status: 'accepted',
      eventId: events[0].eventId,
      seq: events[0].seq,
    });
    expect(res.json.results[1].status).toBe('invalid');
    expect(res.json.results[1].violations).toEqual(
      expect.arrayContaining([
        { path: 'planId', message: 'planId is required' },
        { path: 'payload.inputTokens', message: expect.stringContaining('payload.inputTokens') },
      ]),
    );
    await waitFor('the batch stored', async () => (await countRows(stack.db.ds, 'plan_events')) >= events.length);
    expect(await countRows(stack.db.ds, 'plan_events')).toBe(events.length);

    // the same batch again (a client retry) changes nothing
    expect((await call(stack, 'POST', '/v1/events', { body: batch })).status).toBe(202);
    expect(await stack.worker!.idle(30_000)).toBe(true);
    expect(await countRows(stack.db.ds, 'plan_events')).toBe(events.length);
  });

  it('refuses a missing, unknown or under-scoped key with 401/403, writes nothing and never logs a key', async () => {
    const events = planRun({ seed: 12, steps: 2 });
    const before = await countRows(stack.db.ds, 'plan_events');
    const none = await call(stack, 'POST', '/v1/events', { key: null, body: events });
    const unknown = await call(stack, 'POST', '/v1/events', { key: 'not-a-key-but-long-enough-000', body: events });
    const readOnly = await call(stack, 'POST', '/v1/events', { key: READ_KEY, body: events });
    const ingestOnRead = await call(stack, 'GET', '/v1/plans', { key: INGEST_KEY });
    expect([none.status, unknown.status, readOnly.status, ingestOnRead.status]).toEqual([401, 401, 403, 403]);
    expect(none.json.error).toBe('missing API key: send "Authorization: Bearer <key>"');
    expect(readOnly.json.error).toBe('this API key lacks the ingest scope');
    expect(ingestOnRead.json.error).toBe('this API key lacks the read scope');
    expect(await stack.worker!.idle(30_000)).toBe(true);
    expect(await countRows(stack.db.ds, 'plan_events')).toBe(before);
    const redis = openRedis();
    try {
      expect(await queueCounts(redis, stack.prefix)).toMatchObject({ wait: 0, active: 0, delayed: 0 });
    } finally {
      redis.disconnect();
    }
    expect(stack.logs()).toContain('"url":"/v1/events"'); // request logs are on
    expect(stack.logs()).not.toContain(INGEST_KEY);
    expect(stack.logs()).not.toContain(READ_KEY);
    expect(stack.logs()).not.toContain('not-a-key-but-long-enough-000');
  });

  it('answers 413 past the event count or the body size, 431 past the header size, 400 for a body that is not an array', async () => {
    const many = Array.from({ length: 1001 }, () => ({}));
    const tooMany = await call(stack, 'POST', '/v1/events', { body: many });
    expect(tooMany.status).toBe(413);
    expect(tooMany.json.error).toBe(
      'a batch may hold at most 1000 events (got 1001); split it (HTTP_MAX_BATCH_EVENTS)',
    );
    const huge = await call(stack, 'POST', '/v1/events', { rawBody: `[${'"x",'.repeat(4_300_000)}"x"]` });
    expect(huge.status).toBe(413);
    expect(huge.json.error).toContain('HTTP_BODY_LIMIT_BYTES');
    const bigHeader = await fetch(`${stack.server.url}/v1/plans`, {
      headers: { authorization: `Bearer ${READ_KEY}`, 'x-padding': 'p'.repeat(20_000) },
    });
    expect(bigHeader.status).toBe(431); // HTTP_MAX_HEADER_BYTES, 16 KiB by default
    const notArray = await call(stack, 'POST', '/v1/events', { body: { events: [] } });
    expect(notArray.status).toBe(400);
    expect(notArray.json.error).toBe('the body must be a JSON array of events');
  });

  it('reads give the CLI --json answers; unknown ids 404 with one line; step output raw byte for byte', async () => {
    const events = planRun({ seed: 13, steps: 3, finalize: false });
    const planId = events[0].planId;
    const sessionId = events[0].sessionId;
    expect((await call(stack, 'POST', '/v1/events', { body: events })).status).toBe(202);
    await waitFor(
      'the plan stored',
      async () => (await countRows(stack.db.ds, 'plan_events')) > 0 && (await stack.worker!.idle(5_000)),
    );
    await waitFor(
      'all events',
      async () =>
        Number((await stack.db.ds.query(`SELECT COUNT(*) AS n FROM plan_events WHERE plan_id = '${planId}'`))[0].n) ===
        events.length,
    );

    const env = { DATABASE_URL: stack.db.db.url };
    const pairs = [
      [`/v1/sessions/${sessionId}/active`, ['sessions', 'active', sessionId, '--json']],
      [`/v1/plans/${planId}`, ['plans', 'show', planId, '--json']],
      [`/v1/workflows/${planId}/resume-point`, ['workflows', 'resume-point', planId, '--json']],
      [`/v1/analytics/tokens?from=2026-01-01`, ['analytics', 'tokens', '--from', '2026-01-01', '--json']],
      [`/v1/analytics/cost?by=agent`, ['analytics', 'cost', '--by', 'agent', '--json']],
    ] as const;
    // each CLI run costs seconds (a fresh tsx process): every route once on SQLite, one on PostgreSQL
    for (const [route, args] of kind === 'sqlite' ? pairs : pairs.slice(0, 1)) {
      const [http, cli] = await Promise.all([call(stack, 'GET', route), runCli([...args], env)]);
      expect(http.status).toBe(200);
      expect(http.json).toEqual(JSON.parse(cli.stdout));
    }
    const active = await call(stack, 'GET', `/v1/sessions/${sessionId}/active`);
    expect(active.json.activePlan.nextSeq).toBe(events.length);
    const cost = await call(stack, 'GET', '/v1/analytics/cost?by=model');
    expect(cost.json).toMatchObject({ by: 'model', total: { cost: expect.stringMatching(/^\d+\.\d{2,12}$/) } });
    const badBy = await call(stack, 'GET', '/v1/analytics/cost?by=color');
    expect(badBy.status).toBe(400);
    expect(badBy.json.error).toContain('"color" is not one of model, agent, session, plan');

    const completed = events.find((e) => e.type === 'step.completed')!;
    const stepId = (completed.payload as { stepId: string }).stepId;
    const raw = await call(stack, 'GET', `/v1/plans/${planId}/steps/${stepId}/output`, { accept: 'text/plain' });
    expect(raw.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(raw.text).toBe((completed.payload as { outputContent: string }).outputContent);
    const asJson = await call(stack, 'GET', `/v1/plans/${planId}/steps/${stepId}/output`);
    expect(asJson.json).toMatchObject({ planId, stepId, outputContent: raw.text });

    const missing = await call(stack, 'GET', '/v1/plans/no-such-plan');
    expect(missing.status).toBe(404);
    expect(missing.json).toEqual({ error: 'plan "no-such-plan" not found' });
    expect((await call(stack, 'GET', '/v1/sessions/no-such-session/history')).json).toEqual({
      error: 'session "no-such-session" not found',
    });
    const badLimit = await call(stack, 'GET', `/v1/plans?limit=-3`);
    expect(badLimit.status).toBe(400);
    // a page by the previous page's cursor is the page by offset
    await new PlanEventStore(stack.db.ds).persist(planRun({ seed: 14, steps: 1 }));
    const page1 = await call(stack, 'GET', `/v1/plans?limit=1`);
    expect(page1.json).toMatchObject({ totalExact: true, hasMore: true, nextCursor: expect.any(String) });
    const byCursor = await call(stack, 'GET', `/v1/plans?limit=1&cursor=${page1.json.nextCursor}`);
    const byOffset = await call(stack, 'GET', `/v1/plans?limit=1&offset=1`);
    expect(byCursor.json.plans).toEqual(byOffset.json.plans);
    const both = await call(stack, 'GET', `/v1/plans?limit=1&offset=1&cursor=${page1.json.nextCursor}`);
    expect([both.status, both.json.error]).toEqual([400, 'cursor: give cursor or offset, not both']);
  });

  it('answers the fork tree of a plan as plans lineage --json does; an unknown plan 404 with one line', async () => {
    const root = `http-root-${kind}`;
    await new PlanEventStore(stack.db.ds).persist([
      ...planEvents(root, 'sess-http-l', '2030-01-01T00:00:00.000Z', { done: 2 }),
      ...planEvents(`${root}-f1`, 'sess-http-l', '2030-01-02T00:00:00.000Z', {
        forkOf: { planId: root, kind: 'fork', layer: 1, checkpointId: 'cp-1' },
      }),
      ...planEvents(`${root}-f2`, 'sess-http-m', '2030-01-03T00:00:00.000Z', {
        forkOf: { planId: root, kind: 'replay', layer: 0 },
      }),
      ...planEvents(`${root}-f1-f1`, 'sess-http-m', '2030-01-04T00:00:00.000Z', {
        forkOf: { planId: `${root}-f1`, kind: 'fork', layer: 1 },
      }),
    ]);
    const res = await call(stack, 'GET', `/v1/plans/${root}-f1-f1/lineage`);
    expect(res.status).toBe(200);
    expect(res.json).toEqual(JSON.parse(JSON.stringify(await getPlanLineage(stack.db.ds, `${root}-f1-f1`))));
    expect(res.json).toMatchObject({ rootId: root, plans: 4, truncated: false });
    expect(res.json.root.children.map((c: { planId: string }) => c.planId)).toEqual([`${root}-f1`, `${root}-f2`]);
    expect(res.json.root.children[0].children[0]).toMatchObject({ planId: `${root}-f1-f1`, current: true });
    if (kind === 'sqlite') {
      const cli = await runCli(['plans', 'lineage', `${root}-f1-f1`, '--json'], { DATABASE_URL: stack.db.db.url });
      expect(res.json).toEqual(JSON.parse(cli.stdout));
    }
    const missing = await call(stack, 'GET', '/v1/plans/no-such-plan/lineage');
    expect(missing.status).toBe(404);
    expect(missing.json).toEqual({ error: 'plan "no-such-plan" not found' });
  });

  it('describes every route in /v1/openapi.json and counts requests on /metrics', async () => {
    const doc = (await call(stack, 'GET', '/v1/openapi.json', { key: null })).json;
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.paths).sort()).toEqual([
      '/v1/analytics/reconcile',
      '/v1/analytics/{report}',
      '/v1/approvals',
      '/v1/approvals/{approvalId}',
      '/v1/approvals/{approvalId}/consume',
      '/v1/approvals/{approvalId}/decide',
      '/v1/dead-letters',
      '/v1/dead-letters/purge',
      '/v1/dead-letters/replay',
      '/v1/dead-letters/{id}',
      '/v1/dead-letters/{id}/purge',
      '/v1/dead-letters/{id}/replay',
      '/v1/events',
      '/v1/events/status',
      '/v1/health',
      '/v1/logs',
      '/v1/plans',
      '/v1/plans/{planId}',
      '/v1/plans/{planId}/export',
      '/v1/plans/{planId}/fork',
      '/v1/plans/{planId}/lineage',
      '/v1/plans/{planId}/replay',
      '/v1/plans/{planId}/steps/{step}/output',
      '/v1/sessions/{sessionId}/active',
      '/v1/sessions/{sessionId}/history',
      '/v1/traces',
      '/v1/webhooks/deliveries',
      '/v1/webhooks/deliveries/replay',
      '/v1/webhooks/subscriptions',
      '/v1/webhooks/subscriptions/{id}',
      '/v1/webhooks/subscriptions/{id}/disable',
      '/v1/webhooks/subscriptions/{id}/enable',
      '/v1/workflows/{planId}/resume-point',
    ]);
    expect(Object.keys(doc.paths['/v1/events'].post.responses).sort()).toEqual([
      '202',
      '400',
      '401',
      '403',
      '413',
      '503',
    ]);
    expect(Object.keys(doc.paths['/v1/approvals/{approvalId}/decide'].post.responses).sort()).toEqual([
      '202',
      '400',
      '401',
      '403',
      '404',
      '409',
      '503',
    ]);
    for (const route of ['/v1/plans/{planId}/fork', '/v1/plans/{planId}/replay'])
      expect(Object.keys(doc.paths[route].post.responses).sort()).toEqual(['201', '400', '401', '403', '404', '409']);
    expect(Object.keys(doc.paths['/v1/webhooks/subscriptions'].post.responses).sort()).toEqual([
      '201',
      '400',
      '401',
      '403',
    ]);
    const metrics = (await call(stack, 'GET', '/metrics', { key: null })).text;
    expect(metrics).toMatch(/plan_ledger_http_events_total\{outcome="accepted"\} \d+/);
    expect(metrics).toMatch(/plan_ledger_http_requests_total\{route="\/v1\/events",method="POST",status="202"\} \d+/);
    expect(metrics).toMatch(/plan_ledger_http_auth_refusals_total\{status="401"\} 2/);
  });
});

describe('plan-ledger serve while Redis is unreachable', () => {
  it('accepts into its journal, then answers 503 with Retry-After once the journal is full', async () => {
    const stack = await startApiStack('sqlite', {
      worker: false,
      redisUrl: `redis://127.0.0.1:${await freePort()}`,
      env: { HTTP_MAX_BUFFERED_EVENTS: '10', HTTP_MAX_JOURNAL_BYTES: '200000', HTTP_RETRY_AFTER_SECONDS: '7' },
    });
    try {
      const statuses: number[] = [];
      let refused;
      for (let seed = 100; seed < 200 && !refused; seed++) {
        const res = await call(stack, 'POST', '/v1/events', { body: planRun({ seed, steps: 6 }) });
        statuses.push(res.status);
        if (res.status === 503) refused = res;
      }
      expect(statuses[0]).toBe(202);
      expect(refused).toBeDefined();
      expect(refused!.headers.get('retry-after')).toBe('7');
      expect(refused!.json.error).toBe(
        'the server cannot hold more events until Redis takes its backlog; retry after 7 s',
      );
    } finally {
      await stack.close();
    }
  });
});

describe('nextSeq and PlanEventPublisher.continuePlan', () => {
  it('a restarted executor continues a plan from the resume point without reusing a seq', async () => {
    const stack = await startApiStack('sqlite');
    const journal = fs.mkdtempSync(path.join(os.tmpdir(), 'pl-continue-'));
    const publisher = new PlanEventPublisher({
      redisUrl: REDIS_URL,
      queuePrefix: stack.prefix,
      journalDir: journal,
      logger: silentLogger(),
    });
    try {
      const events = planRun({ seed: 21, steps: 4, finalize: false }).slice(0, 4);
      expect((await call(stack, 'POST', '/v1/events', { body: events })).status).toBe(202);
      await waitFor('stored', async () => (await countRows(stack.db.ds, 'plan_events')) === events.length);
      const planId = events[0].planId;
      const point = await getResumePoint(stack.db.ds, planId);
      expect(point.nextSeq).toBe(4);
      expect((await getActivePlan(stack.db.ds, events[0].sessionId)).activePlan?.nextSeq).toBe(4);
      expect((await call(stack, 'GET', `/v1/workflows/${planId}/resume-point`)).json.nextSeq).toBe(4);

      publisher.continuePlan(planId, point.nextSeq);
      const plan = { planId, sessionId: events[0].sessionId };
      const r = publisher.checkpointSaved(plan, { checkpointId: 'cp-x', layer: 0, state: {} });
      expect(r).toMatchObject({ ok: true, seq: 4 });
      expect(() => publisher.continuePlan(planId, -1)).toThrow('nextSeq must be a non-negative integer, got -1');
      expect(await publisher.flush(10_000)).toBe(true);
      await waitFor('stored', async () => (await countRows(stack.db.ds, 'plan_events')) === 5);
      expect((await getResumePoint(stack.db.ds, planId)).nextSeq).toBe(5);
    } finally {
      await publisher.close(5_000);
      await stack.close();
      fs.rmSync(journal, { recursive: true, force: true });
    }
  });
});
