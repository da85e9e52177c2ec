/**
 * The admin API of webhooks on a real `serve` with an in-process worker, real Redis and each local
 * database: subscriptions added, listed, disabled, enabled and removed over HTTP with the admin
 * scope; the secret in the 201 only; deliveries listed and replayed; the answers equal to the
 * CLI's `--json`; and the worker's /metrics counting deliveries, failures, dead ones and the lag.
 */
import { webhookTypes } from '../../src/store/outbox/webhook-triggers';
import { DEFAULT_WEBHOOK_CONFIG } from '../../src/webhooks/webhook-config';
import { parseAllowance } from '../../src/webhooks/webhook-target';
import { runCli } from '../support/cli';
import { ALL_TEST_DBS, TestDb } from '../support/databases';
import { planRun } from '../support/event-factory';
import { freePort } from '../publisher/support/redis-process';
import { waitFor } from '../worker/helpers/queue-harness';
import { ADMIN_KEY, ApiStack, call, INGEST_KEY, READ_KEY, startApiStack } from '../http/http-harness';
import { Receiver } from './receiver';

jest.setTimeout(180_000);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.each<TestDb>(ALL_TEST_DBS)('the webhooks admin API on %s', (kind) => {
  let stack: ApiStack;
  let receiver: Receiver | undefined;
  const admin = (method: string, route: string, body?: unknown) => call(stack, method, route, { key: ADMIN_KEY, body });
  const cli = async (...args: string[]) => {
    const r = await runCli(['webhooks', ...args, '--json'], { DATABASE_URL: stack.db.db.url });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    return JSON.parse(r.stdout);
  };
  const metrics = async () => {
    const res = await fetch(`http://127.0.0.1:${stack.worker!.healthPort}/metrics`);
    expect(res.status).toBe(200);
    return res.text();
  };
  const sample = (text: string, name: string) => {
    const line = text.split('\n').find((l) => l.startsWith(`${name} `));
    return line === undefined ? 0 : Number(line.split(' ')[1]);
  };

  beforeAll(async () => {
    stack = await startApiStack(kind, {
      env: { HTTP_ADMIN_KEYS: ADMIN_KEY, WEBHOOKS_ALLOW_PRIVATE: '127.0.0.1' },
      workerSettings: { healthPort: 0 },
      webhooks: {
        ...DEFAULT_WEBHOOK_CONFIG,
        allowPrivate: parseAllowance('127.0.0.1'),
        maxAttempts: 2,
        backoffBaseMs: 50,
        backoffMaxMs: 100,
        timeoutMs: 2_000,
        pollMs: 50,
      },
    });
  });
  afterAll(async () => {
    await receiver?.close();
    await stack?.close();
  });

  it('needs the admin scope, and refuses a bad URL, filter or field with one line naming it', async () => {
    expect((await call(stack, 'GET', '/v1/webhooks/subscriptions', { key: null })).status).toBe(401);
    for (const key of [READ_KEY, INGEST_KEY]) {
      const res = await call(stack, 'GET', '/v1/webhooks/deliveries', { key });
      expect(res.status).toBe(403);
      expect(res.json.error).toBe('this API key lacks the admin scope');
    }
    const refused = async (body: unknown) => {
      const res = await admin('POST', '/v1/webhooks/subscriptions', body);
      expect(res.status).toBe(400);
      return res.json.error as string;
    };
    expect(await refused({})).toBe('url: must be the https:// (or http://) URL the webhooks are POSTed to');
    expect(await refused({ url: 'ftp://hooks.example.com/x' })).toBe(
      'url: ftp: URLs are not webhooks: use https:// (or http://)',
    );
    expect(await refused({ url: 'http://169.254.169.254/latest' })).toMatch(
      /^url: .*169\.254\.169\.254.*link-local \(cloud metadata\)/,
    );
    expect(await refused({ url: 'http://127.0.0.1:9/hook', events: 'plan.finalized,plan.exploded' })).toBe(
      `events: "plan.exploded" is not a webhook type; the types: ${webhookTypes().join(', ')} (or * for all)`,
    );
    expect(await refused({ url: 'http://127.0.0.1:9/hook', secret: 'whsec_mine' })).toBe(
      'secret: is not a field of this request; its fields: url, events, enabled',
    );
    expect(await refused({ url: 'http://127.0.0.1:9/hook', enabled: 'yes' })).toBe('enabled: must be true or false');
    expect((await admin('GET', '/v1/webhooks/deliveries?limit=0')).json.error).toBe(
      'limit: "0" is not a whole number from 1 to 10000',
    );
    expect((await admin('POST', '/v1/webhooks/deliveries/replay', { status: 'pending' })).json.error).toBe(
      'status: "pending" is not one of dead, delivered',
    );
    const unknown = await admin('POST', '/v1/webhooks/subscriptions/wh-nope/disable');
    expect(unknown.status).toBe(404);
    expect(unknown.json.error).toBe(
      'webhook subscription "wh-nope" not found (GET /v1/webhooks/subscriptions shows them)',
    );
    expect((await admin('GET', '/v1/webhooks/subscriptions')).json).toEqual({ subscriptions: [] });
  });

  it('adds a subscription (secret once), delivers, counts on /metrics, dead-letters, replays, disables and removes', async () => {
    const port = await freePort();
    const added = await admin('POST', '/v1/webhooks/subscriptions', {
      url: `http://127.0.0.1:${port}/hook`,
      events: ['plan.finalized', 'plan.failed'],
    });
    expect(added.status).toBe(201);
    expect(added.headers.get('cache-control')).toBe('no-store');
    const sub = added.json;
    expect(added.headers.get('location')).toBe(`/v1/webhooks/subscriptions/${sub.id}`);
    expect(sub).toMatchObject({
      url: `http://127.0.0.1:${port}/hook`,
      events: 'plan.finalized,plan.failed',
      enabled: true,
    });
    expect(sub.secret).toMatch(/^whsec_[A-Za-z0-9+/=]{32}$/);
    receiver = await Receiver.start(sub.secret, port);

    // the secret is never shown again: not by the API's list, not by the CLI's
    const listed = await admin('GET', '/v1/webhooks/subscriptions');
    expect(listed.json.subscriptions).toEqual([{ ...sub, secret: `whsec_…${sub.secret.slice(-4)}` }]);
    expect(listed.text).not.toContain(sub.secret);
    expect(await cli('list')).toEqual(listed.json);

    // writers read the subscriptions every 2 s
    await sleep(2_500);
    const before = await metrics();
    const first = planRun({ seed: 4501, steps: 2 });
    expect((await call(stack, 'POST', '/v1/events', { body: first })).status).toBe(202);
    await waitFor('plan.finalized received', () => receiver!.idsOf('plan.finalized').size === 1, 60_000, 50);
    expect(receiver.unverified).toBe(0);
    expect(receiver.got[0].data.planId).toBe(first[0].planId);

    const delivered = await admin('GET', `/v1/webhooks/deliveries?status=delivered&subscription=${sub.id}`);
    expect(delivered.status).toBe(200);
    expect(delivered.json.deliveries).toHaveLength(1);
    expect(delivered.json.deliveries[0]).toMatchObject({
      id: receiver.got[0].id,
      subscriptionId: sub.id,
      eventType: 'plan.finalized',
      planId: first[0].planId,
      status: 'delivered',
      attempts: 0,
      lastError: null,
    });
    expect(await cli('deliveries', '--status', 'delivered', '--subscription', sub.id)).toEqual(delivered.json);
    const afterDelivery = await metrics();
    expect(sample(afterDelivery, 'plan_ledger_webhook_delivery_lag_seconds_count')).toBe(
      sample(before, 'plan_ledger_webhook_delivery_lag_seconds_count') + 1,
    );
    expect(sample(afterDelivery, 'plan_ledger_webhook_deliveries_total{outcome="delivered"}')).toBe(1);
    expect(sample(afterDelivery, 'plan_ledger_webhook_delivery_lag_seconds_sum')).toBeGreaterThan(0);

    // the receiver answers 503: two attempts, then dead; /metrics counts the failure and the dead one
    receiver.down();
    const second = planRun({ seed: 4502, steps: 2, failAt: 0 });
    expect((await call(stack, 'POST', '/v1/events', { body: second })).status).toBe(202);
    let dead: { id: string; eventType: string; lastError: string; attempts: number }[] = [];
    await waitFor(
      'two dead deliveries (plan.finalized and plan.failed)',
      async () => {
        dead = (await admin('GET', '/v1/webhooks/deliveries?status=dead')).json.deliveries;
        return dead.length === 2;
      },
      60_000,
      100,
    );
    expect(dead.map((d) => d.eventType).sort()).toEqual(['plan.failed', 'plan.finalized']);
    for (const d of dead) expect(d).toMatchObject({ attempts: 2, lastError: expect.stringContaining('503') });
    const afterDead = await metrics();
    expect(sample(afterDead, 'plan_ledger_webhook_deliveries_total{outcome="failed"}')).toBe(2);
    expect(sample(afterDead, 'plan_ledger_webhook_deliveries_total{outcome="dead"}')).toBe(2);

    // replayed: sent again with the same webhook-id
    receiver.up();
    const replayed = await admin('POST', '/v1/webhooks/deliveries/replay', { subscription: sub.id });
    expect(replayed.json).toEqual({ replayed: 2 });
    await waitFor('the replayed deliveries received', () => receiver!.got.length === 3, 60_000, 50);
    expect(new Set(receiver.got.slice(1).map((r) => r.id))).toEqual(new Set(dead.map((d) => d.id)));
    expect((await admin('GET', '/v1/webhooks/deliveries?status=dead')).json.deliveries).toEqual([]);
    // by id, a delivered one too
    expect((await admin('POST', '/v1/webhooks/deliveries/replay', { ids: [receiver.got[0].id] })).json).toEqual({
      replayed: 1,
    });
    await waitFor('the one replayed by id received', () => receiver!.got.length === 4, 60_000, 50);
    expect(receiver.got[3].id).toBe(receiver.got[0].id);
    expect(receiver.unverified).toBe(0);

    // disabled: its row says so, the API and the CLI agree
    expect((await admin('POST', `/v1/webhooks/subscriptions/${sub.id}/disable`)).json).toEqual({
      id: sub.id,
      enabled: false,
    });
    expect((await cli('list')).subscriptions[0].enabled).toBe(false);
    expect((await admin('POST', `/v1/webhooks/subscriptions/${sub.id}/enable`)).json).toEqual({
      id: sub.id,
      enabled: true,
    });

    const removed = await admin('DELETE', `/v1/webhooks/subscriptions/${sub.id}`);
    expect(removed.json).toEqual({ removed: sub.id });
    expect((await admin('DELETE', `/v1/webhooks/subscriptions/${sub.id}`)).status).toBe(404);
    expect((await admin('GET', '/v1/webhooks/subscriptions')).json).toEqual({ subscriptions: [] });
  });
});
