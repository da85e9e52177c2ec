/**
 * The console's approvals summary (its header's count and its pages' change check) against a real
 * `plan-ledger serve` and worker on each test database (SQL Server too, with TEST_MSSQL_URL):
 * counts by status and assignee, an ETag that stays until an approval is requested, decided or
 * consumed; an approve key's console session.
 */
import { argsDigest } from '../../src/contracts';
import { approvalRequested } from '../support/approval-fixtures';
import { ALL_TEST_DBS } from '../support/databases';
import { parsedEvent } from '../support/parsed-event';
import { ApiStack, APPROVE_KEY, APPROVER, call, INGEST_KEY, READ_KEY, startApiStack } from '../http/http-harness';

jest.setTimeout(120_000);

const DIGEST = argsDigest({ to: 'ops@example.com' });

describe.each(ALL_TEST_DBS)('console approvals summary on %s', (kind) => {
  let stack: ApiStack;
  const plan = `ca-plan-${kind}`;
  let seq = 0;
  const ev = (type: string, payload: object, at: number) =>
    parsedEvent({ planId: plan, sessionId: 'ca-sess', seq: at, type, payload, occurredAt: new Date() });
  const send = async (...events: object[]) =>
    expect((await call(stack, 'POST', '/v1/events', { body: events })).status).toBeLessThan(300);
  const request = (approvalId: string, assignee: string, expiresInMs = 3_600_000) =>
    ev('approval.requested', approvalRequested(approvalId, { argsDigest: DIGEST, expiresInMs, assignee }), ++seq);
  const summary = (query = '', headers: Record<string, string> = {}) =>
    call(stack, 'GET', `/console/approvals/summary${query}`, { headers });
  async function until(query: string, check: (s: { pending: number; matching: number }) => boolean): Promise<void> {
    for (let i = 0; i < 300; i++) {
      const s = await summary(query);
      if (s.status === 200 && check(s.json)) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`the summary ${query} never matched`);
  }

  beforeAll(async () => {
    stack = await startApiStack(kind);
    await send(ev('plan.created', { query: 'q', steps: [{ stepId: 's1', index: 0, agentId: 'a', task: 't' }] }, 0));
  });
  afterAll(async () => stack?.close());

  it('counts pending approvals and those a filter matches; its ETag changes only when an approval does', async () => {
    const empty = await summary();
    expect([empty.status, empty.json.pending, empty.json.matching]).toEqual([200, 0, 0]);
    await send(request('ca_1', 'ops'), request('ca_2', 'legal'), request('ca_3', 'ops', 200));
    await until('?status=all', (s) => s.matching === 3);
    await new Promise((r) => setTimeout(r, 300)); // ca_3 expires
    await until('', (s) => s.pending === 2);
    expect((await summary('?status=pending&assignee=ops')).json.matching).toBe(1);
    expect((await summary('?status=expired')).json.matching).toBe(1);

    const first = await summary();
    const etag = first.headers.get('etag')!;
    expect(etag).toBeTruthy();
    expect((await summary('', { 'if-none-match': etag })).status).toBe(304);
    await send(ev('approval.decided', { approvalId: 'ca_1', decision: 'approve', decidedBy: 'alice' }, seq));
    await until('', (s) => s.pending === 1);
    expect((await summary('', { 'if-none-match': etag })).status).toBe(200);
    expect((await summary('?status=decided')).json.matching).toBe(1);

    // a consume changes no count of pending, but the page of decided approvals must redraw
    const before = await summary('?status=decided');
    const consumed = await call(stack, 'POST', '/v1/approvals/ca_1/consume', { body: { argsDigest: DIGEST } });
    expect(consumed.status).toBe(200);
    const after = await summary('?status=decided');
    expect(after.json.matching).toBe(0);
    expect(after.headers.get('etag')).not.toBe(before.headers.get('etag'));
  });

  it('an approve key signs in to the console under its name; it reads approvals and the summary, not plans', async () => {
    const signedIn = await fetch(`${stack.server.url}/console/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ key: APPROVE_KEY }),
    });
    expect(signedIn.status).toBe(200);
    const body = (await signedIn.json()) as { scopes: string[]; name: string };
    expect([body.scopes, body.name]).toEqual([['approve'], APPROVER]);
    const cookie = signedIn.headers.get('set-cookie')!.split(';')[0];
    const read = (route: string) => fetch(`${stack.server.url}${route}`, { headers: { cookie } });
    expect((await (await read('/console/session')).json()).name).toBe(APPROVER);
    expect((await read('/console/approvals/summary')).status).toBe(200);
    expect((await read('/v1/approvals?status=pending')).status).toBe(200);
    expect((await read('/v1/plans')).status).toBe(403);
    const ingest = await fetch(`${stack.server.url}/console/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ key: INGEST_KEY }),
    });
    expect([ingest.status, ((await ingest.json()) as { error: string }).error]).toEqual([
      403,
      'this API key lacks the read and approve scopes (an ingest-only key cannot open the console)',
    ]);
  });

  it('refuses a bad status in one line, and a key without the read or approve scope', async () => {
    const bad = await summary('?status=bogus');
    expect([bad.status, bad.json.error]).toEqual([
      400,
      'status: must be one of pending, expired, decided, consumed, all',
    ]);
    expect((await call(stack, 'GET', '/console/approvals/summary', { key: null })).status).toBe(401);
    expect((await call(stack, 'GET', '/console/approvals/summary', { key: READ_KEY })).status).toBe(200);
    expect((await call(stack, 'GET', '/console/approvals/summary', { key: APPROVE_KEY })).status).toBe(200);
    expect((await call(stack, 'GET', '/console/approvals/summary', { key: INGEST_KEY })).status).toBe(403);
  });
});
