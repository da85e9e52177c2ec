/**
 * `plan-ledger approvals list|show|decide` as a process of its own, against a real serve + worker
 * stack: its answers (text and --json, the HTTP API's JSON), its exit codes, and a decision the
 * worker stores with --by as decidedBy, which consume then answers.
 */
import { argsDigest } from '../../src/contracts';
import { approvalRequested } from '../support/approval-fixtures';
import { runCli } from '../support/cli';
import { TestDb } from '../support/databases';
import { parsedEvent } from '../support/parsed-event';
import { ApiStack, approvalWithStatus, call, startApiStack } from '../http/http-harness';
import { REDIS_URL } from '../worker/helpers/queue-harness';

jest.setTimeout(300_000);

const DIGEST = argsDigest({ cmd: 'rm -rf /tmp/x' });
const EDITED = argsDigest({ cmd: 'rm -rf /tmp/x/cache' });

describe.each<TestDb>(['sqlite', 'postgres'])('plan-ledger approvals on %s', (kind) => {
  let stack: ApiStack;
  const plan = `ac-plan-${kind}`;
  let seq = 0;
  const ev = (type: string, payload: object, at: number) =>
    parsedEvent({ planId: plan, sessionId: 'ac-sess', seq: at, type, payload, occurredAt: new Date() });
  const cli = (...args: string[]) =>
    runCli(['approvals', ...args], { DATABASE_URL: stack.db.db.url, REDIS_URL, QUEUE_PREFIX: stack.prefix }, 120_000);

  async function requested(id: string, assignee: string): Promise<void> {
    const payload = approvalRequested(id, { tool: 'shell', argsDigest: DIGEST, assignee, reason: 'deletes files' });
    const sent = await call(stack, 'POST', '/v1/events', { body: [ev('approval.requested', payload, ++seq)] });
    expect(sent.json.accepted).toBe(1);
    await approvalWithStatus(stack, id, 'pending');
  }

  beforeAll(async () => {
    stack = await startApiStack(kind);
    const created = ev('plan.created', { query: 'q', steps: [{ stepId: 's1', index: 0, agentId: 'a', task: 't' }] }, 0);
    expect((await call(stack, 'POST', '/v1/events', { body: [created] })).status).toBe(202);
    await requested('ac_one', 'ops');
    await requested('ac_two', 'sec');
  });
  afterAll(async () => stack?.close());

  it('lists the inbox (text and --json, as GET /v1/approvals) and shows one; bad flags exit 2, an unknown id 1', async () => {
    const json = await cli('list', '--assignee', 'ops', '--json');
    expect([json.code, json.stderr]).toEqual([0, '']);
    const listed = JSON.parse(json.stdout).approvals;
    expect(listed.map((a: { approvalId: string }) => a.approvalId)).toEqual(['ac_one']);
    const api = await call(stack, 'GET', '/v1/approvals?assignee=ops');
    expect({ ...listed[0], ageMs: 0 }).toEqual({ ...api.json.approvals[0], ageMs: 0 });

    const table = await cli('list');
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^APPROVAL\s+STATUS\s+AGE\s+PLAN/);
    expect(table.stdout).toMatch(/ac_one\s+pending/);
    expect(table.stdout.indexOf('ac_one')).toBeLessThan(table.stdout.indexOf('ac_two'));
    expect((await cli('list', '--older-than', '1d')).stdout.trim()).toBe('no pending approvals');

    const show = await cli('show', 'ac_two');
    expect(show.code).toBe(0);
    expect(show.stdout).toContain('approval ac_two: pending');
    expect(show.stdout).toContain('reason: deletes files');
    const shown = JSON.parse((await cli('show', 'ac_two', '--json')).stdout);
    expect(shown).toMatchObject({ approvalId: 'ac_two', status: 'pending', assignee: 'sec', argsDigest: DIGEST });

    const badStatus = await cli('list', '--status', 'open');
    expect([badStatus.code, badStatus.stderr.trim()]).toEqual([
      2,
      'plan-ledger: --status: "open" is not one of pending, expired, decided, consumed',
    ]);
    const badAge = await cli('list', '--older-than', 'ten');
    expect(badAge.code).toBe(2);
    expect(badAge.stderr).toContain('--older-than');
    const ghost = await cli('show', 'ac_ghost');
    expect([ghost.code, ghost.stderr.trim()]).toEqual([
      1,
      'plan-ledger: no approval ac_ghost was requested (or its request is not stored yet)',
    ]);
  });

  it('decides with --by as decidedBy; the worker stores it and consume answers it; a second decision exits 1', async () => {
    const decided = await cli('decide', 'ac_one', 'edit', '--by', 'bob', '--edited-args-digest', EDITED, '--json');
    expect([decided.code, decided.stderr]).toEqual([0, '']);
    expect(JSON.parse(decided.stdout)).toEqual({
      approvalId: 'ac_one',
      planId: plan,
      decision: 'edit',
      decidedBy: 'bob',
      eventId: expect.any(String),
    });
    expect(await approvalWithStatus(stack, 'ac_one', 'decided')).toMatchObject({
      decidedBy: 'bob',
      editedArgsDigest: EDITED,
    });
    const consumed = await call(stack, 'POST', '/v1/approvals/ac_one/consume', { body: { argsDigest: EDITED } });
    expect([consumed.status, consumed.json.decidedBy]).toEqual([200, 'bob']);

    const again = await cli('decide', 'ac_one', 'reject', '--by', 'carol');
    expect([again.code, again.stderr.trim()]).toEqual([
      1,
      'plan-ledger: approval ac_one was decided already (edit by bob): it is decided once',
    ]);
    const text = await cli('decide', 'ac_two', 'reject', '--by', 'carol@sec', '--feedback', 'not today');
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^decided approval ac_two of plan ac-plan-\w+: reject by carol@sec \(event /);
    expect(await approvalWithStatus(stack, 'ac_two', 'decided')).toMatchObject({
      decision: 'reject',
      feedback: 'not today',
    });
  });

  it('refuses bad decisions before connecting (exit 2, naming the option) and an unknown approval (exit 1)', async () => {
    const cases: Array<[string[], string]> = [
      [['ac_two', 'maybe', '--by', 'bob'], 'plan-ledger: decision: must be one of approve, edit, reject'],
      [['ac_two', 'edit', '--by', 'bob'], 'plan-ledger: --edited-args-digest: an edit needs the SHA-256'],
      [['ac_two', 'approve', '--by', 'bob smith'], 'plan-ledger: --by: must be a name of 1-64 characters'],
      [['ac_two', 'approve', '--by', 'bob', '--edited-args-digest', EDITED], '--edited-args-digest: only an edit'],
    ];
    for (const [args, error] of cases) {
      const r = await cli('decide', ...args);
      expect([r.code, r.stderr.trim().split('\n').length]).toEqual([2, 1]);
      expect(r.stderr).toContain(error);
    }
    const missingBy = await cli('decide', 'ac_two', 'approve');
    expect(missingBy.code).toBe(2);
    expect(missingBy.stderr).toContain('--by');
    const ghost = await cli('decide', 'ac_ghost', 'approve', '--by', 'bob');
    expect([ghost.code, ghost.stderr.trim()]).toEqual([
      1,
      'plan-ledger: no approval ac_ghost was requested (or its request is not stored yet)',
    ]);
  });
});
