/**
 * GET /v1/approvals/{id}?waitMs= against a real serve, worker, Redis and each local database: a held request
 * answers once the decision is stored (woken by the worker's Redis message: serve here never re-reads
 * unwoken), at waitMs with the approval still pending, at expiresAt with it expired, and once a
 * request that was not stored yet is stored and decided. The decision is published with the
 * request's seq through the publisher (docs/approvals.md).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { DecisionKind } from '../../src/contracts';
import { MAX_APPROVAL_WAIT_MS } from '../../src/http/approval-wait';
import { PlanEventPublisher } from '../../src/publisher';
import { approvalChannel } from '../../src/queue/approval-signals';
import { APPROVAL_DIGEST, approvalRequested } from '../support/approval-fixtures';
import { TestDb } from '../support/databases';
import { openRedis, REDIS_URL, silentLogger, waitFor } from '../worker/helpers/queue-harness';
import { ApiStack, APPROVE_KEY, APPROVER, call, INGEST_KEY, READ_KEY, startApiStack } from './http-harness';

jest.setTimeout(180_000);

/** serve's re-read of a held request unwoken: longer than this file runs, so only a message or the wait's end answers. */
const NEVER_REREAD_MS = 24 * 3_600_000;

describe.each<TestDb>(['sqlite', 'postgres', 'mariadb'])('GET /v1/approvals/{id}?waitMs= on %s', (kind) => {
  let stack: ApiStack;
  let publisher: PlanEventPublisher;
  let journal: string;
  const plan = { planId: `aw-plan-${kind}`, sessionId: 'aw-sess' };

  /** Publishes approval.requested; returns its seq. */
  function request(approvalId: string, expiresInMs?: number): number {
    const r = publisher.publish({
      ...plan,
      type: 'approval.requested',
      payload: approvalRequested(approvalId, { expiresInMs }),
    });
    if (!r.ok) throw new Error(`request refused: ${JSON.stringify(r)}`);
    return r.seq;
  }

  function decide(approvalId: string, seq: number, decision: DecisionKind = 'approve'): void {
    const r = publisher.publish({
      ...plan,
      seq,
      type: 'approval.decided',
      payload: {
        approvalId,
        decision,
        decidedBy: 'alice',
        ...(decision === 'edit' ? { editedArgsDigest: APPROVAL_DIGEST } : {}),
      },
    });
    if (!r.ok) throw new Error(`decision refused: ${JSON.stringify(r)}`);
  }

  async function stored(approvalId: string): Promise<void> {
    await waitFor(`approval ${approvalId} stored`, async () => {
      return (await call(stack, 'GET', `/v1/approvals/${approvalId}`)).status === 200;
    });
  }

  const held = (approvalId: string, waitMs: number, key?: string) =>
    call(stack, 'GET', `/v1/approvals/${approvalId}?waitMs=${waitMs}`, key === undefined ? {} : { key });

  /**
   * A request held on an approval never requested, with a wait a second shorter than the requests
   * held after it (MAX_APPROVAL_WAIT_MS): as serve never re-reads unwoken, one of those answered
   * while this one is still held did not wait for its wait's end. `release()` ends it.
   */
  function heldUntilItsWaitEnds(): { answered(): boolean; release(): Promise<void> } {
    const abort = new AbortController();
    let answered = false;
    const done = fetch(`${stack.server.url}/v1/approvals/aw_never_requested?waitMs=${MAX_APPROVAL_WAIT_MS - 1_000}`, {
      headers: { authorization: `Bearer ${READ_KEY}` },
      signal: abort.signal,
    }).then(
      () => void (answered = true),
      () => undefined,
    );
    return {
      answered: () => answered,
      release: async () => {
        abort.abort();
        await done;
      },
    };
  }

  beforeAll(async () => {
    stack = await startApiStack(kind, { approvalRereadMs: NEVER_REREAD_MS });
    // serve subscribes without being awaited: a request held before would miss its message
    const redis = openRedis();
    await waitFor('serve subscribed to the approval channel', async () => {
      const counts = (await redis.call('PUBSUB', 'NUMSUB', approvalChannel(stack.prefix))) as [string, number];
      return Number(counts[1]) > 0;
    });
    redis.disconnect();
    journal = fs.mkdtempSync(path.join(os.tmpdir(), 'pl-await-'));
    publisher = new PlanEventPublisher({
      redisUrl: REDIS_URL,
      queuePrefix: stack.prefix,
      journalDir: journal,
      logger: silentLogger(),
    });
    publisher.planCreated(plan, { query: 'q', steps: [{ stepId: 's1', index: 0, agentId: 'a', task: 't' }] });
  });
  afterAll(async () => {
    await publisher?.close();
    await stack?.close();
    fs.rmSync(journal, { recursive: true, force: true });
  });

  it('answers a held request once the decision is stored, with status decided', async () => {
    const seq = request('aw_prompt');
    await stored('aw_prompt');
    const earlier = heldUntilItsWaitEnds();
    const answer = held('aw_prompt', MAX_APPROVAL_WAIT_MS, INGEST_KEY);
    await new Promise((r) => setTimeout(r, 300));
    decide('aw_prompt', seq);
    const a = await answer;
    expect([a.status, a.json.status, a.json.decision, a.json.decidedBy]).toEqual([200, 'decided', 'approve', 'alice']);
    // woken by the worker's message, not at the end of its wait
    expect(earlier.answered()).toBe(false);
    await earlier.release();
  });

  it('answers a held request of an executor when a human decides with POST /decide (approve key)', async () => {
    request('aw_decide');
    await stored('aw_decide');
    const earlier = heldUntilItsWaitEnds();
    const answer = held('aw_decide', MAX_APPROVAL_WAIT_MS, INGEST_KEY);
    await new Promise((r) => setTimeout(r, 300));
    const decided = await call(stack, 'POST', '/v1/approvals/aw_decide/decide', {
      key: APPROVE_KEY,
      body: { decision: 'approve', feedback: 'checked' },
    });
    expect(decided.status).toBe(202);
    const a = await answer;
    expect([a.status, a.json.status, a.json.decidedBy, a.json.feedback]).toEqual([200, 'decided', APPROVER, 'checked']);
    expect(earlier.answered()).toBe(false);
    await earlier.release();
    // the approve key reads (and waits on) approvals too
    expect((await held('aw_decide', 1_000, APPROVE_KEY)).json.status).toBe('decided');
  });

  it('answers at waitMs with the approval still pending', async () => {
    request('aw_timeout');
    await stored('aw_timeout');
    const started = Date.now();
    const a = await held('aw_timeout', 1_500);
    expect([a.status, a.json.status]).toEqual([200, 'pending']);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_450);
  });

  it('answers at expiresAt with status expired', async () => {
    request('aw_expires', 2_500);
    await stored('aw_expires');
    const a = await held('aw_expires', 60_000);
    expect([a.status, a.json.status]).toEqual([200, 'expired']);
    expect(Date.parse(a.json.expiresAt)).toBeLessThanOrEqual(Date.now());
  });

  it('answers at once when waitMs is absent or the approval is not pending', async () => {
    const seq = request('aw_done');
    await stored('aw_done');
    expect((await call(stack, 'GET', '/v1/approvals/aw_done')).json.status).toBe('pending');
    decide('aw_done', seq, 'reject');
    expect((await held('aw_done', MAX_APPROVAL_WAIT_MS)).json.decision).toBe('reject');
    // answered without waiting: no message comes for an approval already decided
    const earlier = heldUntilItsWaitEnds();
    expect((await held('aw_done', MAX_APPROVAL_WAIT_MS)).json.status).toBe('decided');
    expect(earlier.answered()).toBe(false);
    await earlier.release();
  });

  it('holds a request for an approval not stored yet until it is stored and decided', async () => {
    const earlier = heldUntilItsWaitEnds();
    const answer = held('aw_later', MAX_APPROVAL_WAIT_MS);
    await new Promise((r) => setTimeout(r, 300));
    const seq = request('aw_later');
    await stored('aw_later');
    decide('aw_later', seq, 'edit');
    const a = await answer;
    expect([a.status, a.json.status]).toEqual([200, 'decided']);
    expect(earlier.answered()).toBe(false);
    await earlier.release();
  });

  it('answers 404 for an approval never requested, at once or after waitMs', async () => {
    expect((await held('aw_ghost', 0)).status).toBe(404);
    const a = await held('aw_ghost', 500);
    expect([a.status, a.json.error]).toEqual([404, 'no approval aw_ghost was requested']);
  });

  it('refuses a waitMs out of range in one line, and a request without a key', async () => {
    for (const bad of ['60001', '-1', 'soon']) {
      const a = await call(stack, 'GET', `/v1/approvals/aw_prompt?waitMs=${bad}`);
      expect([a.status, a.json.error]).toEqual([400, expect.stringContaining('waitMs')]);
      expect(a.json.error).toContain('from 0 to 60000');
    }
    expect((await call(stack, 'GET', '/v1/approvals/aw_prompt', { key: null })).status).toBe(401);
  });
});
