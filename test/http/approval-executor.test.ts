/**
 * A TypeScript executor's approval, end to end against a real serve, worker, Redis and database:
 * requestApproval through the publisher, waitForApproval (long poll with the ingest key),
 * consumeApproval, and the call run only when the consume returned. The reviewer's decision is
 * published with the request's seq by a publisher of its own (docs/approvals.md).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import {
  ApprovalRefusedError,
  ApprovalServerError,
  consumeApproval,
  PlanEventPublisher,
  requestApproval,
  waitForApproval,
  type ApprovalServer,
  type RequestedApproval,
} from '../../src/publisher';
import { argsDigest, type ApprovalDecidedPayload } from '../../src/contracts';
import { ApprovalLedger } from '../../src/store/approvals/approval-ledger';
import { TestDb } from '../support/databases';
import { REDIS_URL, silentLogger, waitFor } from '../worker/helpers/queue-harness';
import { ApiStack, call, startApiStack, INGEST_KEY } from './http-harness';

jest.setTimeout(180_000);

const ARGS = { to: 'ops@example.com', subject: 'Deploy 4.2', body: 'Going out at 14:00' };

describe.each<TestDb>(['sqlite', 'postgres'])('a TypeScript executor asks, waits and consumes on %s', (kind) => {
  let stack: ApiStack;
  let executor: PlanEventPublisher;
  let reviewer: PlanEventPublisher;
  let server: ApprovalServer;
  const dirs: string[] = [];
  const plan = { planId: `ax-plan-${kind}`, sessionId: 'ax-sess' };

  const publisher = (queuePrefix: string) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pl-approval-exec-'));
    dirs.push(dir);
    return new PlanEventPublisher({ redisUrl: REDIS_URL, queuePrefix, journalDir: dir, logger: silentLogger() });
  };

  /** The reviewer's tool: the decision carries the request's seq. */
  function decide(req: RequestedApproval, payload: Omit<ApprovalDecidedPayload, 'approvalId' | 'decidedBy'>): void {
    const r = reviewer.approvalDecided(
      plan,
      { approvalId: req.approvalId, decidedBy: 'alice', ...payload },
      { seq: req.seq },
    );
    expect(r.ok).toBe(true);
  }

  /** The gated call: counts its runs. */
  let sent = 0;
  async function sendMailIfApproved(req: RequestedApproval, args: object): Promise<string> {
    const approval = await consumeApproval(server, req.approvalId, { args, consumer: 'ax-executor' });
    sent++;
    return approval.decision!;
  }

  beforeAll(async () => {
    stack = await startApiStack(kind);
    executor = publisher(stack.prefix);
    reviewer = publisher(stack.prefix);
    server = { url: stack.server.url, key: INGEST_KEY };
    executor.planCreated(plan, { query: 'q', steps: [{ stepId: 's1', index: 0, agentId: 'mailer', task: 'mail' }] });
  });
  afterAll(async () => {
    await executor?.close();
    await reviewer?.close();
    await stack?.close();
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  });

  it('request -> wait -> consume -> run, once: a second consume is refused already_consumed', async () => {
    const req = requestApproval(executor, plan, { stepId: 's1', tool: 'send_mail', args: ARGS, assignee: 'ops' });
    expect(req.argsDigest).toBe(argsDigest(ARGS));
    const waiting = waitForApproval(server, req.approvalId, { timeoutMs: 60_000 });
    await new Promise((r) => setTimeout(r, 500));
    decide(req, { decision: 'approve', feedback: 'ship it' });
    const decided = await waiting;
    expect([decided.status, decided.decision, decided.decidedBy, decided.feedback]).toEqual([
      'decided',
      'approve',
      'alice',
      'ship it',
    ]);
    const before = sent;
    expect(await sendMailIfApproved(req, ARGS)).toBe('approve');
    expect(sent).toBe(before + 1);
    const again = sendMailIfApproved(req, ARGS);
    await expect(again).rejects.toBeInstanceOf(ApprovalRefusedError);
    await expect(again).rejects.toMatchObject({ reason: 'already_consumed', kind: 'conflict' });
    expect(sent).toBe(before + 1);
  });

  it('a rejection is refused at consume; an edit runs only with the edited arguments', async () => {
    const rejected = requestApproval(executor, plan, { stepId: 's1', tool: 'send_mail', args: ARGS });
    decide(rejected, { decision: 'reject', feedback: 'not today' });
    expect((await waitForApproval(server, rejected.approvalId, { timeoutMs: 60_000 })).decision).toBe('reject');
    const before = sent;
    await expect(sendMailIfApproved(rejected, ARGS)).rejects.toMatchObject({ reason: 'rejected' });

    const edited = { ...ARGS, body: 'Going out at 15:00' };
    const edit = requestApproval(executor, plan, { stepId: 's1', tool: 'send_mail', args: ARGS });
    decide(edit, { decision: 'edit', editedArgsDigest: argsDigest(edited) });
    const view = await waitForApproval(server, edit.approvalId, { timeoutMs: 60_000 });
    expect(view.editedArgsDigest).toBe(argsDigest(edited));
    await expect(sendMailIfApproved(edit, ARGS)).rejects.toMatchObject({ reason: 'args_mismatch' });
    expect(await sendMailIfApproved(edit, edited)).toBe('edit');
    expect(sent).toBe(before + 1);
  });

  it('answers pending at timeoutMs, expired at expiresAt, and refuses an undecided or expired consume', async () => {
    const req = requestApproval(executor, plan, { stepId: 's1', args: ARGS, expiresInMs: 4_000 });
    const pending = await waitForApproval(server, req.approvalId, { timeoutMs: 1_000 });
    expect(pending.status).toBe('pending');
    await expect(sendMailIfApproved(req, ARGS)).rejects.toMatchObject({ reason: 'undecided' });
    const expired = await waitForApproval(server, req.approvalId);
    expect(expired.status).toBe('expired');
    await expect(sendMailIfApproved(req, ARGS)).rejects.toMatchObject({ reason: 'expired' });
  });

  it('says not_found for an approval never requested, and names an unreachable server', async () => {
    const ghost = waitForApproval(server, 'ax_ghost', { timeoutMs: 500 });
    await expect(ghost).rejects.toMatchObject({ name: 'ApprovalRefusedError', reason: 'not_found', kind: 'not-found' });
    await expect(consumeApproval(server, 'ax_ghost', { args: ARGS })).rejects.toMatchObject({ reason: 'not_found' });
    const nowhere = { url: 'http://127.0.0.1:9', key: INGEST_KEY };
    const refused = consumeApproval(nowhere, 'ax_ghost', { args: ARGS });
    await expect(refused).rejects.toBeInstanceOf(ApprovalServerError);
    await expect(refused).rejects.toMatchObject({ status: 0, message: expect.stringContaining('unreachable') });
    const badKey = consumeApproval({ ...server, key: 'nope-nope-nope-nope' }, 'ax_ghost', { args: ARGS });
    await expect(badKey).rejects.toMatchObject({ name: 'ApprovalServerError', status: 401 });
    expect(() => requestApproval(executor, plan, { stepId: 's1' })).toThrow(/give args/);
    expect(() => requestApproval(executor, plan, { stepId: 's1', args: 1, approvalId: 'bad id!' })).toThrow(
      /approvalId/,
    );
  });

  it('keeps waiting across a restart of serve; a held request answers at once when serve shuts down', async () => {
    const req = requestApproval(executor, plan, { stepId: 's1', tool: 'send_mail', args: ARGS });
    await waitFor(
      'the request stored',
      async () => (await call(stack, 'GET', `/v1/approvals/${req.approvalId}`)).status === 200,
    );
    const held = fetch(`${server.url}/v1/approvals/${req.approvalId}?waitMs=60000`, {
      headers: { authorization: `Bearer ${INGEST_KEY}` },
    });
    const waiting = waitForApproval(server, req.approvalId, { timeoutMs: 120_000 });
    await new Promise((r) => setTimeout(r, 300));
    // decided as the shutdown begins: a hold that outlived the shutdown's start would be woken by the
    // decision (serve's subscriber closes after the requests in flight are answered) and answer decided
    const stopped = stack.stopServer();
    decide(req, { decision: 'approve' });
    const answer = await held;
    expect([answer.status, ((await answer.json()) as { status: string }).status]).toEqual([200, 'pending']);
    await stopped;
    const ledger = new ApprovalLedger(stack.db.ds);
    await waitFor(
      'the decision stored while serve is down',
      async () => (await ledger.get(req.approvalId))?.status === 'decided',
    );
    await stack.startServer();
    const decided = await waiting;
    expect([decided.status, decided.decision]).toEqual(['decided', 'approve']);
    expect(await sendMailIfApproved(req, ARGS)).toBe('approve');
  });
});
