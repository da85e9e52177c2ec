/**
 * Approvals over HTTP against a real `plan-ledger serve` and worker: events in through
 * POST /v1/events, the inbox, and consume: once 200, then 409 with its reason; racing consumes.
 */
import { argsDigest } from '../../src/contracts';
import { approvalRequested } from '../support/approval-fixtures';
import { TestDb } from '../support/databases';
import { parsedEvent } from '../support/parsed-event';
import { ApiStack, approvalWithStatus, call, startApiStack } from './http-harness';

jest.setTimeout(120_000);

const ARGS = { path: '/etc/hosts', mode: 'w' };
const DIGEST = argsDigest(ARGS);

describe.each<TestDb>(['sqlite', 'postgres', 'mariadb'])('approvals over HTTP on %s', (kind) => {
  let stack: ApiStack;
  const plan = `ha-plan-${kind}`;
  let seq = 0;
  const ev = (type: string, payload: object, at = seq) =>
    parsedEvent({ planId: plan, sessionId: 'ha-sess', seq: at, type, payload, occurredAt: new Date() });

  async function send(...events: object[]): Promise<void> {
    const answer = await call(stack, 'POST', '/v1/events', { body: events });
    expect(answer.status).toBeLessThan(300);
  }

  const request = (approvalId: string, expiresInMs = 3_600_000) =>
    ev(
      'approval.requested',
      approvalRequested(approvalId, { tool: 'write_file', argsDigest: DIGEST, expiresInMs, assignee: 'ops' }),
      ++seq,
    );
  const decide = (approvalId: string, decision: string) =>
    ev('approval.decided', { approvalId, decision, decidedBy: 'alice' }, seq);

  beforeAll(async () => {
    stack = await startApiStack(kind);
    await send(ev('plan.created', { query: 'q', steps: [{ stepId: 's1', index: 0, agentId: 'a', task: 't' }] }, 0));
  });
  afterAll(async () => stack?.close());

  it('lists a pending request in the inbox, oldest first, with its age', async () => {
    await send(request('ha_inbox_1'));
    await send(request('ha_inbox_2'));
    await approvalWithStatus(stack, 'ha_inbox_2', 'pending');
    const inbox = await call(stack, 'GET', '/v1/approvals?status=pending&assignee=ops');
    expect(inbox.status).toBe(200);
    const ids = inbox.json.approvals.map((a: { approvalId: string }) => a.approvalId);
    expect(ids.indexOf('ha_inbox_1')).toBeLessThan(ids.indexOf('ha_inbox_2'));
    expect(inbox.json.approvals[0].ageMs).toBeGreaterThanOrEqual(0);
    expect((await call(stack, 'GET', '/v1/approvals?assignee=nobody')).json.approvals).toEqual([]);
    expect((await call(stack, 'GET', '/v1/approvals?status=bogus')).status).toBe(400);
  });

  it('answers 409 undecided, then 200 once, then 409 already_consumed; 409 args_mismatch; 404 never requested', async () => {
    await send(request('ha_once'));
    await approvalWithStatus(stack, 'ha_once', 'pending');
    const consume = (digest = DIGEST) =>
      call(stack, 'POST', '/v1/approvals/ha_once/consume', { body: { argsDigest: digest } });
    expect((await consume()).json.reason).toBe('undecided');
    await send(decide('ha_once', 'approve'));
    await approvalWithStatus(stack, 'ha_once', 'decided');
    const mismatch = await consume(argsDigest({ ...ARGS, mode: 'a' }));
    expect([mismatch.status, mismatch.json.reason]).toEqual([409, 'args_mismatch']);
    const ok = await consume();
    expect([ok.status, ok.json.decision, ok.json.decidedBy]).toEqual([200, 'approve', 'alice']);
    const again = await consume();
    expect([again.status, again.json.reason]).toEqual([409, 'already_consumed']);
    expect(again.json.error).toBe('approval ha_once was consumed already: a decision is answered once');
    const ghost = await call(stack, 'POST', '/v1/approvals/ha_ghost/consume', { body: { argsDigest: DIGEST } });
    expect(ghost.status).toBe(404);
    const bad = await call(stack, 'POST', '/v1/approvals/ha_once/consume', { body: { argsDigest: 'ABC' } });
    expect([bad.status, bad.json.error]).toEqual([400, expect.stringContaining('argsDigest')]);
  });

  it('gives one of two concurrent consumes 200 and the other 409', async () => {
    await send(request('ha_race'), decide('ha_race', 'approve'));
    await approvalWithStatus(stack, 'ha_race', 'decided');
    const answers = await Promise.all(
      [1, 2].map(() => call(stack, 'POST', '/v1/approvals/ha_race/consume', { body: { argsDigest: DIGEST } })),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([200, 409]);
  });

  it('refuses a rejected and an expired approval', async () => {
    await send(request('ha_rejected'), decide('ha_rejected', 'reject'));
    await send(request('ha_expired', 300));
    await approvalWithStatus(stack, 'ha_rejected', 'decided');
    await send(decide('ha_expired', 'approve'));
    await approvalWithStatus(stack, 'ha_expired', 'decided');
    await new Promise((r) => setTimeout(r, 400));
    const consume = (id: string) =>
      call(stack, 'POST', `/v1/approvals/${id}/consume`, { body: { argsDigest: DIGEST } });
    expect((await consume('ha_rejected')).json.reason).toBe('rejected');
    expect((await consume('ha_expired')).json.reason).toBe('expired');
  });
});
