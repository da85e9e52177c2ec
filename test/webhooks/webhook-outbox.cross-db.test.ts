/**
 * The outbox on each local database: a delivery row is written in the transaction that stores a
 * triggering event (once, however often the event is redelivered), the delivery loop sends it
 * signed (verified with the Standard Webhooks library), retries with backoff, marks it dead after
 * its budget, and `replayDeliveries` sends it again with the same webhook-id.
 */
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import type { DataSource } from 'typeorm';
import type { PlanEvent } from '../../src/contracts';
import { createLogger } from '../../src/shared/logger';
import type { WebhookDeliveryRow } from '../../src/store/entities';
import { writeDeliveries } from '../../src/store/outbox/webhook-outbox';
import { PlanEventStore } from '../../src/store/plan-event-store';
import { claimDeliveries } from '../../src/store/sql/delivery-claims';
import { sqlDialectOf } from '../../src/store/sql/dialects';
import { DEFAULT_WEBHOOK_CONFIG, type WebhookConfig } from '../../src/webhooks/webhook-config';
import { WebhookDeliveryLoop } from '../../src/webhooks/webhook-delivery';
import {
  addSubscription,
  newSecret,
  replayDeliveries,
  setSubscriptionEnabled,
} from '../../src/webhooks/webhook-subscriptions';
import { parseAllowance } from '../../src/webhooks/webhook-target';
import { approvalRequested } from '../support/approval-fixtures';
import { parsedEvent } from '../support/parsed-event';
import { ALL_TEST_DBS, createMigratedDb } from '../support/databases';
import { planRun } from '../support/event-factory';
import { Receiver } from './receiver';

jest.setTimeout(60_000);

const logger = createLogger({ level: 'silent' });
const config = (over: Partial<WebhookConfig> = {}): WebhookConfig => ({
  ...DEFAULT_WEBHOOK_CONFIG,
  allowPrivate: parseAllowance('127.0.0.1'),
  backoffBaseMs: 1,
  backoffMaxMs: 1,
  ...over,
});

const ev = (planId: string, seq: number, type: string, payload: object): PlanEvent =>
  parsedEvent({ planId, sessionId: 'sess_hook_appr', seq, type, payload, occurredAt: new Date() });

async function deliveries(ds: DataSource): Promise<{ status: string; event_type: string; attempts: number }[]> {
  const rows: { status: string; event_type: string; attempts: unknown }[] = await ds.query(
    'SELECT status, event_type, attempts FROM webhook_deliveries ORDER BY event_type, id',
  );
  return rows.map((r) => ({ ...r, attempts: Number(r.attempts) }));
}

/** `count` pending outbox rows of `subscriptionId`, due at `due`. */
async function backlog(ds: DataSource, subscriptionId: string, count: number, due: Date): Promise<string[]> {
  const rows: WebhookDeliveryRow[] = Array.from({ length: count }, (_, i) => ({
    id: randomUUID(),
    subscriptionId,
    eventType: 'plan.finalized',
    eventId: randomUUID(),
    planId: `plan_claim_${i}`,
    payload: '{}',
    status: 'pending',
    attempts: 0,
    nextAttemptAt: due,
    leaseOwner: null,
    leaseUntil: null,
    lastError: null,
    createdAt: due,
    deliveredAt: null,
  }));
  await sqlDialectOf(ds).transaction(ds, (m) => writeDeliveries(m, rows));
  return rows.map((r) => r.id);
}

/** The ids of the deliveries leased to each lease owner. */
async function leases(ds: DataSource): Promise<Map<string, string[]>> {
  const rows: { id: string; lease_owner: string }[] = await ds.query(
    'SELECT id, lease_owner FROM webhook_deliveries WHERE lease_owner IS NOT NULL',
  );
  const out = new Map<string, string[]>();
  for (const r of rows) out.set(String(r.lease_owner), [...(out.get(String(r.lease_owner)) ?? []), String(r.id)]);
  return out;
}

const sorted = (ids: string[]) => ids.map((id) => id.toLowerCase()).sort();

describe.each(ALL_TEST_DBS)('webhook outbox on %s', (kind) => {
  let db: Awaited<ReturnType<typeof createMigratedDb>>;
  let receiver: Receiver;
  const secret = newSecret();

  beforeAll(async () => {
    db = await createMigratedDb(kind);
    receiver = await Receiver.start(secret);
  });
  afterAll(async () => {
    await receiver?.close();
    await db?.close();
  });

  it('writes one delivery per triggering event and subscription with the event, sends it signed, once', async () => {
    await db.ds.query('DELETE FROM webhook_deliveries');
    const sub = await addSubscription(db.ds, { url: receiver.url, eventTypes: '*', secret });
    await addSubscription(db.ds, { url: receiver.url, eventTypes: 'step.failed', secret });
    const store = new PlanEventStore(db.ds, undefined, { subscriptionsRefreshMs: 0 });
    const ok = planRun({ seed: 1 });
    const failed = planRun({ seed: 2, failAt: 0 });
    const first = await store.persist([...ok, ...failed]);
    // plan.finalized x2, plan.failed, step.failed for the first subscription; step.failed for the second
    expect(first.webhooks).toBe(5);
    // redelivered: stored already, so no second delivery
    expect((await store.persist([...ok, ...failed])).webhooks).toBe(0);
    expect((await deliveries(db.ds)).map((d) => d.event_type)).toEqual([
      'plan.failed',
      'plan.finalized',
      'plan.finalized',
      'step.failed',
      'step.failed',
    ]);

    const loop = new WebhookDeliveryLoop(db.ds, config(), logger);
    const round = await loop.round();
    expect(round).toEqual({ claimed: 5, delivered: 5, failed: 0, dead: 0 });
    expect(await loop.round()).toEqual({ claimed: 0, delivered: 0, failed: 0, dead: 0 });
    expect(receiver.unverified).toBe(0);
    expect(receiver.got).toHaveLength(5);
    const finalized = receiver.got.find((r) => r.type === 'plan.failed')!;
    expect(finalized.data).toMatchObject({ planId: failed[0].planId, status: 'failed' });
    expect((await deliveries(db.ds)).every((d) => d.status === 'delivered' && d.attempts === 0)).toBe(true);
    expect(sub.secret).toMatch(/^whsec_/);
  });

  it('sends approval.requested and approval.decided with the approval, stored with their events', async () => {
    await db.ds.query('DELETE FROM webhook_deliveries');
    await db.ds.query('DELETE FROM webhook_subscriptions');
    await addSubscription(db.ds, { url: receiver.url, eventTypes: 'approval.requested,approval.decided', secret });
    const store = new PlanEventStore(db.ds, undefined, { subscriptionsRefreshMs: 0 });
    const planId = `plan_hook_appr_${kind}`;
    const request = approvalRequested(`ap_${kind}`, { assignee: 'ops' });
    const events = [
      ev(planId, 0, 'plan.created', { query: 'mail', steps: [{ stepId: 's1', index: 0, agentId: 'a', task: 't' }] }),
      ev(planId, 1, 'approval.requested', request),
      ev(planId, 2, 'approval.decided', {
        approvalId: `ap_${kind}`,
        decision: 'reject',
        decidedBy: 'alice',
        feedback: 'not now',
      }),
    ];
    expect((await store.persist(events)).webhooks).toBe(2);
    const before = receiver.got.length;
    expect(await new WebhookDeliveryLoop(db.ds, config(), logger).round()).toMatchObject({ delivered: 2, dead: 0 });
    const got = receiver.got.slice(before);
    expect(receiver.unverified).toBe(0);
    expect(got.find((r) => r.type === 'approval.requested')!.data).toMatchObject({ planId, ...request });
    expect(got.find((r) => r.type === 'approval.decided')!.data).toMatchObject({
      approvalId: `ap_${kind}`,
      decision: 'reject',
      decidedBy: 'alice',
      feedback: 'not now',
    });
  });

  it('retries a failing receiver with backoff, marks the delivery dead after its budget, replays it with the same webhook-id', async () => {
    await db.ds.query('DELETE FROM webhook_deliveries');
    await db.ds.query('DELETE FROM webhook_subscriptions');
    receiver.got.length = 0;
    await addSubscription(db.ds, { url: receiver.url, eventTypes: 'plan.finalized', secret });
    const store = new PlanEventStore(db.ds, undefined, { subscriptionsRefreshMs: 0 });
    await store.persist(planRun({ seed: 3 }));
    const loop = new WebhookDeliveryLoop(db.ds, config({ maxAttempts: 3 }), logger);
    receiver.down();
    try {
      const rounds = [];
      for (let i = 0; i < 3; i++) {
        await new Promise((r) => setTimeout(r, 20)); // past the 1 ms backoff
        rounds.push(await loop.round());
      }
      expect(rounds.map((r) => [r.failed, r.dead])).toEqual([
        [1, 0],
        [1, 0],
        [0, 1],
      ]);
      expect(await deliveries(db.ds)).toEqual([{ status: 'dead', event_type: 'plan.finalized', attempts: 3 }]);
      expect((await loop.round()).claimed).toBe(0);
    } finally {
      receiver.up();
    }
    expect(await replayDeliveries(db.ds, {})).toBe(1);
    expect((await loop.round()).delivered).toBe(1);
    const [row] = await db.ds.query('SELECT id FROM webhook_deliveries');
    expect(receiver.got.map((r) => r.id)).toEqual([String(row.id).toLowerCase()]);
  });

  it('two loops claiming at once send each delivery once (the lease)', async () => {
    await db.ds.query('DELETE FROM webhook_deliveries');
    await db.ds.query('DELETE FROM webhook_subscriptions');
    receiver.got.length = 0;
    await addSubscription(db.ds, { url: receiver.url, eventTypes: 'plan.finalized', secret });
    const store = new PlanEventStore(db.ds, undefined, { subscriptionsRefreshMs: 0 });
    for (let seed = 10; seed < 50; seed++) await store.persist(planRun({ seed }));
    const a = new WebhookDeliveryLoop(db.ds, config({ batchSize: 16 }), logger);
    const b = new WebhookDeliveryLoop(db.ds, config({ batchSize: 16 }), logger);
    for (let i = 0; i < 4; i++) await Promise.all([a.round(), b.round()]);
    expect(receiver.got).toHaveLength(40);
    expect(new Set(receiver.got.map((r) => r.id)).size).toBe(40);
  });

  // the wait is the loop's own logic, the same on every database. Every bound below is one a slow
  // machine cannot break: a yield is a lower bound on when rows go, and where rows must go early the
  // yield is longer than the test's timeout, so only the end of the backlog explains them.
  (kind === 'sqlite' ? it : it.skip)(
    'the loop waits while its worker has an ingest backlog, at most backlogYieldMs, and sends at once when it ends',
    async () => {
      await db.ds.query('DELETE FROM webhook_deliveries');
      await db.ds.query('DELETE FROM webhook_subscriptions');
      const sub = await addSubscription(db.ds, { url: receiver.url, eventTypes: '*', secret });
      const delivered = async () =>
        Number((await db.ds.query(`SELECT COUNT(*) AS n FROM webhook_deliveries WHERE status = 'delivered'`))[0].n);
      const until = async (n: number) => {
        while ((await delivered()) < n) await new Promise((r) => setTimeout(r, 20));
      };
      const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
      const loopWith = (backlogYieldMs: number, ingest: { backlogged(): Promise<boolean> }) =>
        new WebhookDeliveryLoop(db.ds, config({ pollMs: 20, backlogYieldMs }), logger, undefined, ingest);
      let backlogged = true;
      let firstAsked: number | undefined;
      const ingest = {
        backlogged: async () => {
          firstAsked ??= Date.now();
          return backlogged;
        },
      };

      // a standing backlog: nothing goes before backlogYieldMs has passed, then everything due goes
      const yieldMs = 1_500;
      await backlog(db.ds, sub.id, 10, new Date());
      const waiting = loopWith(yieldMs, ingest);
      waiting.start();
      try {
        await pause(300);
        expect(await delivered()).toBe(0);
        await until(10);
        const [{ first: firstSent }]: { first: string | Date }[] = await db.ds.query(
          `SELECT MIN(delivered_at) AS first FROM webhook_deliveries WHERE status = 'delivered'`,
        );
        const first = new Date(firstSent).getTime();
        // the clock of the rows and of the probe may differ by a millisecond's rounding
        expect(first - (firstAsked ?? Infinity)).toBeGreaterThanOrEqual(yieldMs - 50);
        // all sent, the backlog still there: the next due rows wait again
        await backlog(db.ds, sub.id, 5, new Date());
        await pause(300);
        expect(await delivered()).toBe(10);
      } finally {
        await waiting.close();
      }

      // a yield longer than the test may run: the rows go because the backlog ends, at once
      const patient = loopWith(600_000, ingest);
      patient.start();
      try {
        await pause(300);
        expect(await delivered()).toBe(10);
        backlogged = false;
        await until(15);
      } finally {
        await patient.close();
      }

      // a worker whose backlog check fails sends as if there were none (the yield again outlasts the test)
      await backlog(db.ds, sub.id, 3, new Date());
      const loop = loopWith(600_000, { backlogged: () => Promise.reject(new Error('redis down')) });
      loop.start();
      try {
        await until(18);
      } finally {
        await loop.close();
      }
    },
  );

  it('a claim returns exactly the rows it leased: concurrent claims never share one, a held lease is skipped, an expired one is taken again (25 runs)', async () => {
    await db.ds.query('DELETE FROM webhook_deliveries');
    await db.ds.query('DELETE FROM webhook_subscriptions');
    const sub = await addSubscription(db.ds, { url: receiver.url, eventTypes: '*', secret });
    const dialect = sqlDialectOf(db.ds);
    const due = new Date('2026-03-01T12:00:00.000Z');
    const at = new Date(due.getTime() + 1_000);
    const leaseMs = 60_000;
    const claim = (limit: number, when = at) =>
      claimDeliveries(db.ds, dialect, {
        token: randomUUID(),
        at: when,
        until: new Date(when.getTime() + leaseMs),
        limit,
      });
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 30 }),
        fc.array(fc.integer({ min: 1, max: 12 }), { minLength: 1, maxLength: 4 }),
        async (count, limits) => {
          await db.ds.query('DELETE FROM webhook_deliveries');
          const ids = await backlog(db.ds, sub.id, count, due);
          // not yet due: nothing
          expect(await claim(count + 1, new Date(due.getTime() - 1))).toEqual([]);
          const claims = await Promise.all(limits.map((limit) => claim(limit)));
          const claimed = claims.flatMap((c) => c.map((r) => r.id));
          expect(new Set(claimed).size).toBe(claimed.length);
          claims.forEach((c, i) => expect(c.length).toBeLessThanOrEqual(limits[i]));
          // what each claim returned is what the table says it leased
          const leased = await leases(db.ds);
          expect([...leased.values()].map(sorted).sort()).toEqual(
            claims
              .filter((c) => c.length > 0)
              .map((c) => sorted(c.map((r) => r.id)))
              .sort(),
          );
          // the rows no claim took are free; the leased ones stay taken until their lease passes
          const rest = await claim(count + 1);
          expect(sorted([...claimed, ...rest.map((r) => r.id)])).toEqual(sorted(ids));
          expect(await claim(count + 1)).toEqual([]);
          const again = await claim(count + 1, new Date(at.getTime() + leaseMs + 1));
          expect(sorted(again.map((r) => r.id))).toEqual(sorted(ids));
          for (const r of again)
            expect(r).toMatchObject({
              subscriptionId: sub.id,
              eventType: 'plan.finalized',
              attempts: 0,
              createdAtMs: due.getTime(),
            });
        },
      ),
      { numRuns: 25 },
    );
  });

  it('a disabled subscription gets nothing sent once the loop has read it again; enabled, its deliveries go', async () => {
    await db.ds.query('DELETE FROM webhook_deliveries');
    await db.ds.query('DELETE FROM webhook_subscriptions');
    receiver.got.length = 0;
    const sub = await addSubscription(db.ds, { url: receiver.url, eventTypes: 'plan.finalized', secret });
    const store = new PlanEventStore(db.ds, undefined, { subscriptionsRefreshMs: 0 });
    const refreshMs = 100;
    const loop = new WebhookDeliveryLoop(db.ds, config({ subscriptionsRefreshMs: refreshMs }), logger);
    await store.persist(planRun({ seed: 60 }));
    expect(await loop.round()).toMatchObject({ delivered: 1 });
    await setSubscriptionEnabled(db.ds, sub.id, false);
    // written while it was enabled in the store's eyes: pending for the disabled subscription
    await backlog(db.ds, sub.id, 1, new Date());
    await new Promise((r) => setTimeout(r, refreshMs + 20));
    expect(await loop.round()).toMatchObject({ claimed: 1, delivered: 0, failed: 1 });
    expect(receiver.got).toHaveLength(1);
    const [failed] = await db.ds.query("SELECT last_error FROM webhook_deliveries WHERE status = 'pending'");
    expect(failed.last_error).toBe('its subscription is disabled');
    await setSubscriptionEnabled(db.ds, sub.id, true);
    await new Promise((r) => setTimeout(r, refreshMs + 20));
    expect(await loop.round()).toMatchObject({ claimed: 1, delivered: 1 });
    expect(receiver.got).toHaveLength(2);
  });
});
