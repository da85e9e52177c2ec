/**
 * Deciding approvals over HTTP against a real `plan-ledger serve` and worker:
 * POST /v1/approvals/{id}/decide with an approve key (202, the worker stores approval.decided with
 * decidedBy = the key's name, then consume 200), the scopes, 404 / 409 / 400.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { argsDigest } from '../../src/contracts';
import { ENTITY, type ApprovalRow } from '../../src/store/entities';
import { freePort } from '../publisher/support/redis-process';
import { approvalRequested, approvalRow } from '../support/approval-fixtures';
import { TestDb } from '../support/databases';
import { parsedEvent } from '../support/parsed-event';
import {
  ADMIN_KEY,
  APPROVE_KEY,
  APPROVER,
  ApiStack,
  approvalWithStatus,
  call,
  INGEST_KEY,
  READ_KEY,
  startApiStack,
} from './http-harness';

jest.setTimeout(180_000);

const ARGS = { to: 'ops@example.com', body: 'hello' };
const DIGEST = argsDigest(ARGS);
const EDITED = argsDigest({ ...ARGS, body: 'hello, edited' });

describe.each<TestDb>(['sqlite', 'postgres', 'mariadb'])('deciding approvals over HTTP on %s', (kind) => {
  let stack: ApiStack;
  const plan = `hd-plan-${kind}`;
  let seq = 0;
  const ev = (type: string, payload: object, at: number) =>
    parsedEvent({ planId: plan, sessionId: 'hd-sess', seq: at, type, payload, occurredAt: new Date() });

  async function send(...events: object[]): Promise<void> {
    const answer = await call(stack, 'POST', '/v1/events', { body: events });
    expect(answer.status).toBe(202);
    expect(answer.json.accepted).toBe(events.length);
  }

  /** Requests approval `id` and waits until the worker stored it. */
  async function requested(id: string, expiresInMs = 3_600_000): Promise<void> {
    await send(ev('approval.requested', approvalRequested(id, { argsDigest: DIGEST, expiresInMs }), ++seq));
    await approvalWithStatus(stack, id, expiresInMs > 5_000 ? 'pending' : 'expired');
  }

  const decide = (id: string, body: unknown, key: string | null = APPROVE_KEY) =>
    call(stack, 'POST', `/v1/approvals/${id}/decide`, { key, body });
  const consume = (id: string, digest = DIGEST) =>
    call(stack, 'POST', `/v1/approvals/${id}/consume`, { body: { argsDigest: digest } });

  beforeAll(async () => {
    stack = await startApiStack(kind, {
      env: { HTTP_ADMIN_KEYS: ADMIN_KEY },
      workerSettings: { healthPort: 0, healthHost: '127.0.0.1' },
    });
    await send(ev('plan.created', { query: 'q', steps: [{ stepId: 's1', index: 0, agentId: 'a', task: 't' }] }, 0));
  });
  afterAll(async () => stack?.close());

  it('answers 202 to an approve key; the worker stores the decision by its name; consume then answers 200 once', async () => {
    await requested('hd_ok');
    const answer = await decide('hd_ok', { decision: 'approve', feedback: 'fine, send it' });
    expect(answer.status).toBe(202);
    expect(answer.json).toEqual({
      approvalId: 'hd_ok',
      planId: plan,
      decision: 'approve',
      decidedBy: APPROVER,
      eventId: expect.stringMatching(/^[0-9a-f-]{36}$/),
    });
    const view = await approvalWithStatus(stack, 'hd_ok', 'decided');
    expect(view).toMatchObject({ decision: 'approve', decidedBy: APPROVER, feedback: 'fine, send it' });
    const status = await call(stack, 'POST', '/v1/events/status', { body: { eventIds: [answer.json.eventId] } });
    expect(status.json.applied).toEqual([answer.json.eventId]);
    const ok = await consume('hd_ok');
    expect([ok.status, ok.json.decision, ok.json.decidedBy]).toEqual([200, 'approve', APPROVER]);
    expect((await consume('hd_ok')).json.reason).toBe('already_consumed');
    const after = await decide('hd_ok', { decision: 'reject' });
    expect([after.status, after.json.reason]).toEqual([409, 'already_decided']);
  });

  it('stores an edit with its digest: consume takes the edited arguments only', async () => {
    await requested('hd_edit');
    const answer = await decide('hd_edit', { decision: 'edit', editedArgsDigest: EDITED });
    expect([answer.status, answer.json.decision]).toEqual([202, 'edit']);
    await approvalWithStatus(stack, 'hd_edit', 'decided');
    expect((await consume('hd_edit')).json.reason).toBe('args_mismatch');
    expect((await consume('hd_edit', EDITED)).status).toBe(200);
  });

  it('refuses the read, ingest and admin scopes (403), no key (401); an approve key reads approvals only', async () => {
    await requested('hd_scope');
    for (const key of [READ_KEY, INGEST_KEY, ADMIN_KEY]) {
      const refused = await decide('hd_scope', { decision: 'approve' }, key);
      expect([refused.status, refused.json.error]).toEqual([403, 'this API key lacks the approve scope']);
    }
    expect((await decide('hd_scope', { decision: 'approve' }, null)).status).toBe(401);
    expect((await decide('hd_scope', { decision: 'approve' }, 'not-a-key-of-this-server-000')).status).toBe(401);
    const inbox = await call(stack, 'GET', '/v1/approvals?status=pending', { key: APPROVE_KEY });
    expect(inbox.status).toBe(200);
    expect(inbox.json.approvals.map((a: { approvalId: string }) => a.approvalId)).toContain('hd_scope');
    expect((await call(stack, 'GET', '/v1/approvals/hd_scope', { key: APPROVE_KEY })).json.status).toBe('pending');
    expect((await call(stack, 'GET', `/v1/plans/${plan}`, { key: APPROVE_KEY })).status).toBe(403);
    expect((await call(stack, 'POST', '/v1/events', { key: APPROVE_KEY, body: [] })).status).toBe(403);
  });

  it('answers 409 already_decided to a second decision, 409 expired past expiresAt, 404 never requested', async () => {
    await requested('hd_twice');
    expect((await decide('hd_twice', { decision: 'reject', feedback: 'no' })).status).toBe(202);
    await approvalWithStatus(stack, 'hd_twice', 'decided');
    const second = await decide('hd_twice', { decision: 'approve' });
    expect(second.status).toBe(409);
    expect(second.json).toMatchObject({
      reason: 'already_decided',
      error: `approval hd_twice was decided already (reject by ${APPROVER}): it is decided once`,
      approval: { decision: 'reject', decidedBy: APPROVER },
    });
    await requested('hd_expired', 300);
    const late = await decide('hd_expired', { decision: 'approve' });
    expect([late.status, late.json.reason]).toEqual([409, 'expired']);
    expect(late.json.error).toMatch(/^approval hd_expired expired at .* before it was decided/);
    const ghost = await decide('hd_ghost', { decision: 'approve' });
    expect(ghost.status).toBe(404);
    expect(ghost.json).toEqual({
      error: 'no approval hd_ghost was requested (or its request is not stored yet)',
      reason: 'not_found',
    });
  });

  it('answers 400 naming the field of a bad body, and stores nothing', async () => {
    await requested('hd_bad');
    const cases: Array<[unknown, string]> = [
      [{}, 'decision: must be one of approve, edit, reject'],
      [{ decision: 'maybe' }, 'decision: must be one of approve, edit, reject'],
      [{ decision: 'edit' }, 'editedArgsDigest: an edit needs the SHA-256 of the edited arguments'],
      [{ decision: 'edit', editedArgsDigest: DIGEST.toUpperCase() }, 'editedArgsDigest: an edit needs'],
      [{ decision: 'approve', editedArgsDigest: EDITED }, 'editedArgsDigest: only an edit carries it'],
      [{ decision: 'approve', feedback: 'x'.repeat(4001) }, 'feedback: must be a text of at most 4000 characters'],
      [{ decision: 'approve', feedback: 7 }, 'feedback: must be a text'],
      [{ decision: 'approve', decidedBy: 'mallory' }, "decidedBy: is the approve key's name: it is not sent"],
      [{ decision: 'approve', extra: 1 }, 'extra: is not a field of a decision'],
      [[{ decision: 'approve' }], 'body: must be a JSON object'],
    ];
    for (const [body, error] of cases) {
      const answer = await decide('hd_bad', body);
      expect([answer.status, answer.json.error]).toEqual([400, expect.stringContaining(error)]);
    }
    const raw = await call(stack, 'POST', '/v1/approvals/hd_bad/decide', { key: APPROVE_KEY, rawBody: '{"decision":' });
    expect(raw.status).toBe(400);
    expect((await call(stack, 'GET', '/v1/approvals/hd_bad')).json.status).toBe('pending');
  });

  it("reports the pending ones by age on the worker's /metrics (plan_ledger_approvals_pending)", async () => {
    await requested('hd_gauge');
    const pending = (await call(stack, 'GET', '/v1/approvals?status=pending')).json.approvals.length;
    expect(pending).toBeGreaterThan(0);
    const text = await (await fetch(`http://127.0.0.1:${stack.worker!.healthPort}/metrics`)).text();
    const sample = (age: string) => {
      const line = text.split('\n').find((l) => l.startsWith(`plan_ledger_approvals_pending{age="${age}"} `));
      return line === undefined ? undefined : Number(line.split(' ')[1]);
    };
    expect(text).toContain('# TYPE plan_ledger_approvals_pending gauge');
    const byAge = ['<1m', '1m-10m', '10m-1h', '1h-1d', '>1d'].map(sample);
    // every bucket sampled; those of this file are minutes old at most
    expect(byAge.slice(2)).toEqual([0, 0, 0]);
    expect(byAge[0]).toBeGreaterThanOrEqual(1);
    expect(byAge[0]! + byAge[1]!).toBe(pending);
  });
});

describe('deciding while Redis is unreachable', () => {
  it('answers 202 once the decision is fsynced in the server journal (the path of POST /v1/events)', async () => {
    const stack = await startApiStack('sqlite', {
      worker: false,
      redisUrl: `redis://127.0.0.1:${await freePort()}`,
    });
    try {
      const row = approvalRow('hd_offline', {
        planId: 'hd-offline-plan',
        sessionId: 'hd-offline-sess',
        tool: null,
        argsDigest: DIGEST,
        requestSeq: 4,
        requestEventId: '0193a3c0-0000-7000-8000-000000000004',
      });
      await stack.db.ds.getRepository<ApprovalRow>(ENTITY.approval).insert(row);
      const answer = await call(stack, 'POST', '/v1/approvals/hd_offline/decide', {
        key: APPROVE_KEY,
        body: { decision: 'approve' },
      });
      expect([answer.status, answer.json.decidedBy]).toEqual([202, APPROVER]);
      const journal = fs
        .readdirSync(stack.journalDir, { recursive: true, encoding: 'utf8' })
        .map((f) => path.join(stack.journalDir, f))
        .filter((f) => fs.statSync(f).isFile())
        .map((f) => fs.readFileSync(f, 'utf8'))
        .join('\n');
      expect(journal).toContain(answer.json.eventId);
      expect(journal).toContain('"seq":4');
    } finally {
      await stack.close();
    }
  });
});
