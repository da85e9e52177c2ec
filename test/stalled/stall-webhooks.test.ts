/**
 * The stall check's webhooks, with a real worker (stall check and delivery loop on), Redis and a
 * local receiver verifying every signature with the Standard Webhooks library: `plan.stalled` once
 * per stall, `approval.expired` once per approval, and a plan running before the StalledPlans
 * migration (no stall due time) watched from its last event.
 */
import { randomUUID } from 'node:crypto';
import { expireApprovals } from '../../src/stalled/approval-expiry';
import { markStalledPlans } from '../../src/stalled/stall-check';
import { ENTITY, type ApprovalRow, type PlanHeadRow, type WebhookDeliveryRow } from '../../src/store/entities';
import { PlanEventStore } from '../../src/store/plan-event-store';
import { DEFAULT_WEBHOOK_CONFIG } from '../../src/webhooks/webhook-config';
import { addSubscription, newSecret } from '../../src/webhooks/webhook-subscriptions';
import { parseAllowance } from '../../src/webhooks/webhook-target';
import { Receiver } from '../webhooks/receiver';
import { approvalRequested } from '../support/approval-fixtures';
import { ALL_TEST_DBS } from '../support/databases';
import { ev } from './support/stall-events';
import { startStallWorker, type StallWorker, untilTicked } from './support/stall-worker';

jest.setTimeout(120_000);

const STALL_AFTER_MS = 1_500;
const TICK_MS = 300;
const steps = [{ stepId: 'a', index: 0, agentId: 'coder', task: 'a' }];

describe.each(ALL_TEST_DBS)('the stall check’s webhooks with a real worker on %s', (kind) => {
  let stall: StallWorker;
  let receiver: Receiver;
  const secret = newSecret();
  const legacy = `legacy-${randomUUID()}`;
  let legacyUpdatedAt: number;

  beforeAll(async () => {
    receiver = await Receiver.start(secret);
    stall = await startStallWorker(kind, {
      stallAfterMs: STALL_AFTER_MS,
      tickMs: TICK_MS,
      webhooks: {
        ...DEFAULT_WEBHOOK_CONFIG,
        allowPrivate: parseAllowance('127.0.0.1'),
        backoffBaseMs: 50,
        backoffMaxMs: 200,
        pollMs: 50,
      },
      async prepare(db) {
        await addSubscription(db.ds, { url: receiver.url, eventTypes: 'plan.stalled,approval.expired', secret });
        // a plan running when the StalledPlans migration ran: executing, its head without a due time
        await new PlanEventStore(db.ds).persist([ev(legacy, 0, 'plan.created', { query: 'q', steps })]);
        legacyUpdatedAt = Date.now() - 60_000;
        await db.ds
          .getRepository<PlanHeadRow>(ENTITY.head)
          .update({ planId: legacy }, { stallDueAt: null, updatedAt: new Date(legacyUpdatedAt) });
      },
    });
  });
  afterAll(async () => {
    await stall?.close();
    await receiver?.close();
  });

  const head = (planId: string) => stall.head(planId);
  const received = (type: string, key: string, value: string) =>
    receiver.got.filter((r) => r.type === type && r.data[key] === value);
  const deliveryRows = async (type: string, planId: string) =>
    await stall.db.ds.getRepository<WebhookDeliveryRow>(ENTITY.webhookDelivery).countBy({ eventType: type, planId });
  /** A few more ticks: time for a second send, if the check were to write one. */
  const moreTicks = () => new Promise((r) => setTimeout(r, 5 * TICK_MS));

  it('sends plan.stalled once per stall, signed, and again after the plan ran and stalled anew', async () => {
    const planId = `stalls-${randomUUID()}`;
    await stall.send(ev(planId, 0, 'plan.created', { query: 'q', steps }));
    await untilTicked('the first plan.stalled', async () => received('plan.stalled', 'planId', planId).length > 0);
    const h = await head(planId);
    const [first] = received('plan.stalled', 'planId', planId);
    expect(first.data).toMatchObject({
      planId,
      sessionId: `s_${planId}`,
      seq: 0,
      lastSeq: 0,
      stalledSince: new Date(h.stalledAt!).toISOString(),
      stallDueAt: new Date(h.stallDueAt!).toISOString(),
    });
    // the check runs again (the worker's ticks, and once more here): nothing new is written or sent
    await moreTicks();
    expect((await markStalledPlans(stall.db.ds, { now: new Date(Date.now() + 3_600_000) })).planIds).not.toContain(
      planId,
    );
    await moreTicks();
    expect(received('plan.stalled', 'planId', planId)).toHaveLength(1);
    expect(await deliveryRows('plan.stalled', planId)).toBe(1);

    // a late event: running again; silent past its deadline: a second stall, a second webhook
    await stall.send(ev(planId, 1, 'step.started', { stepId: 'a' }));
    await untilTicked('the late event to clear the stall', async () => (await head(planId)).stalledAt === null);
    await untilTicked('the second plan.stalled', async () => received('plan.stalled', 'planId', planId).length > 1);
    await moreTicks();
    const both = received('plan.stalled', 'planId', planId);
    expect(both).toHaveLength(2);
    expect(new Set(both.map((r) => r.id)).size).toBe(2);
    expect(both[1].data).toMatchObject({ seq: 1, lastSeq: 1 });
    expect(receiver.unverified).toBe(0);
  });

  it('sends approval.expired once for an approval past its expiry undecided, none for a decided one', async () => {
    const planId = `expiry-${randomUUID()}`;
    const soon = new Date(Date.now() + 1_000).toISOString();
    const undecided = `ap-undecided-${randomUUID()}`;
    const decided = `ap-decided-${randomUUID()}`;
    const request = approvalRequested(undecided, { stepId: 'a', expiresAt: soon, assignee: 'ops' });
    await stall.send(
      ev(planId, 0, 'plan.created', { query: 'q', steps, deadlineMs: 3_600_000 }),
      ev(planId, 1, 'approval.requested', request),
      ev(planId, 2, 'approval.requested', approvalRequested(decided, { stepId: 'a', expiresAt: soon })),
      ev(planId, 3, 'approval.decided', { approvalId: decided, decision: 'approve', decidedBy: 'alice' }),
    );
    await untilTicked('approval.expired', async () => received('approval.expired', 'approvalId', undecided).length > 0);
    const [got] = received('approval.expired', 'approvalId', undecided);
    expect(got.data).toMatchObject({ planId, sessionId: `s_${planId}`, seq: 1, ...request });
    const row = (await stall.db.ds
      .getRepository<ApprovalRow>(ENTITY.approval)
      .findOneByOrFail({ approvalId: undecided })) as ApprovalRow;
    expect(row.expiredAt).not.toBeNull();
    // run again (the ticks, and here): found expired once
    await moreTicks();
    expect((await expireApprovals(stall.db.ds, { now: new Date(Date.now() + 3_600_000) })).approvalIds).not.toContain(
      undecided,
    );
    await moreTicks();
    expect(received('approval.expired', 'approvalId', undecided)).toHaveLength(1);
    expect(received('approval.expired', 'approvalId', decided)).toHaveLength(0);
    expect(await deliveryRows('approval.expired', planId)).toBe(1);
    expect(receiver.unverified).toBe(0);
  });

  it('watches a plan that was running before the StalledPlans migration from its last event', async () => {
    await untilTicked('the legacy plan to be stalled', async () => (await head(legacy)).stalledAt !== null);
    const h = await head(legacy);
    expect(new Date(h.stallDueAt!).getTime()).toBe(legacyUpdatedAt + STALL_AFTER_MS);
    await untilTicked('its plan.stalled', async () => received('plan.stalled', 'planId', legacy).length > 0);
    expect(received('plan.stalled', 'planId', legacy)).toHaveLength(1);
  });
});
