/// <reference lib="dom" />
/**
 * The console's Approvals page in a real headless Chromium (Debian's, driven by playwright-core),
 * against a real `plan-ledger serve` and worker on a throwaway SQLite database and queue prefix:
 * the inbox and the header's live count, deciding from the page as the approve key's name, a read
 * key that may not decide, and executors in Python and TypeScript that request, wait and consume an
 * approval a human decides in the console.
 */
import * as path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { argsDigest } from '../../src/contracts';
import { ApprovalLedger, type ApprovalView } from '../../src/store/approvals/approval-ledger';
import { ENTITY } from '../../src/store/entities';
import { approvalRequested } from '../support/approval-fixtures';
import { parsedEvent } from '../support/parsed-event';
import { type ApiStack, APPROVE_KEY, APPROVER, call, INGEST_KEY, READ_KEY } from '../http/http-harness';
import { lineWhere, python, type PyRun } from '../http/python/py-run';
import { waitFor } from '../worker/helpers/queue-harness';
import {
  ApprovalRefusedError,
  consumeApproval,
  type PlanEventPublisher,
  requestApproval,
  waitForApproval,
} from '../../src/publisher';
import { type ConsoleBrowser, shot, startConsoleBrowser } from './support/console-browser';

jest.setTimeout(180_000);

const EXECUTOR = path.join(__dirname, 'python', 'approval_executor.py');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let ui: ConsoleBrowser;
let stack: ApiStack;
let browser: Browser;
let ledger: ApprovalLedger;
let publisher: PlanEventPublisher;

async function approval(id: string): Promise<ApprovalView | undefined> {
  return ledger.get(id);
}

/** A new page signed in with `key`. */
async function openPage(key: string): Promise<Page> {
  return (await ui.openPage(key)).page;
}

/** POST /v1/approvals/{id}/decide from the page, with its session cookie and CSRF token: [status, reason]. */
async function decideWithCookie(page: Page, approvalId: string, body: object): Promise<[number, unknown]> {
  return page.evaluate(
    async ([id, b]) => {
      const session = await (await fetch('/console/session')).json();
      const res = await fetch(`/v1/approvals/${id}/decide`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-csrf-token': session.csrf },
        body: JSON.stringify(b),
      });
      return [res.status, (await res.json()).reason] as [number, unknown];
    },
    [approvalId, body] as const,
  );
}

/** The header's pending count as the page shows it. */
async function headerCount(page: Page, count: number): Promise<void> {
  await page.waitForSelector(`#pending-count[data-pending="${count}"]`, { timeout: 15_000 });
}

/** A plan with one step, and a request to approve its tool call, through POST /v1/events. */
async function requestOverHttp(
  planId: string,
  approvalId: string,
  args: object,
  extra: { assignee?: string; reason?: string } = {},
): Promise<string> {
  const ev = (type: string, seq: number, payload: object) =>
    parsedEvent({ planId, sessionId: `${planId}-s`, seq, type, payload, occurredAt: new Date() });
  const digest = argsDigest(args);
  const answer = await call(stack, 'POST', '/v1/events', {
    body: [
      ev('plan.created', 0, { query: 'q', steps: [{ stepId: 'send', index: 0, agentId: 'ts-executor', task: 't' }] }),
      ev('approval.requested', 1, approvalRequested(approvalId, { stepId: 'send', argsDigest: digest, ...extra })),
    ],
  });
  expect(answer.status).toBeLessThan(300);
  await waitFor(`approval ${approvalId} stored`, async () => (await approval(approvalId))?.status === 'pending');
  return digest;
}

/** Decides the approval shown at `#/approvals/<id>` from the page, as the signed-in approver. */
async function decideInPage(
  page: Page,
  approvalId: string,
  decision: 'approve' | 'edit' | 'reject',
  o: { editedArgsDigest?: string; feedback?: string } = {},
): Promise<void> {
  await page.goto(`${stack.server.url}/#/approvals/${encodeURIComponent(approvalId)}`);
  await page.waitForSelector('#decide-form');
  await page.check(`#decision-${decision}`);
  if (o.editedArgsDigest) await page.fill('#edited-args-digest', o.editedArgsDigest);
  if (o.feedback) await page.fill('#feedback', o.feedback);
  await page.click('#decide-submit');
  await page.waitForSelector('#decide-result');
}

beforeAll(async () => {
  ui = await startConsoleBrowser();
  ({ stack, browser, publisher } = ui);
  ledger = new ApprovalLedger(stack.db.ds);
}, 60_000);

afterAll(async () => ui?.close());

describe('the Approvals page in headless Chromium', () => {
  it('lists a pending approval with the live count in the header; a read key sees no decide buttons and gets 403', async () => {
    const hostile = '<img src=x onerror="globalThis.__pwned=1">\u202Egnp.exe';
    const digest = await requestOverHttp(
      'ap-list',
      'ap_list_1',
      { to: 'a@example.com' },
      {
        assignee: 'ops',
        reason: hostile,
      },
    );
    const page = await openPage(READ_KEY);
    await headerCount(page, 1);
    await page.click('#nav a[href="#/approvals"]');
    await page.waitForSelector('#approvals tbody tr[data-approval=ap_list_1]');
    const row = page.locator('#approvals tr[data-approval=ap_list_1]');
    expect(await row.getAttribute('data-status')).toBe('pending');
    const cells = await row.locator('td').allTextContents();
    expect(cells.slice(1, 5)).toEqual(['ap_list_1', 'ap-list', 'send', 'send_mail']);
    expect(await row.locator('td.digest').getAttribute('title')).toBe(digest);
    expect(cells[6]).toBe('ops');
    // markup shown as text, the right-to-left override escaped
    expect(cells[7]).toBe('<img src=x onerror="globalThis.__pwned=1">\\u202egnp.exe');
    expect(await page.evaluate(() => (globalThis as unknown as { __pwned: number }).__pwned)).toBe(0);
    // a read key: no decide link nor form, and the server refuses a decision (403), not only the page
    expect(await page.locator('.decide-link').count()).toBe(0);
    await page.goto(`${stack.server.url}/#/approvals/ap_list_1`);
    await page.waitForSelector('#approval-facts');
    expect(await page.locator('#decide-form').count()).toBe(0);
    expect(await decideWithCookie(page, 'ap_list_1', { decision: 'approve' })).toEqual([403, undefined]);

    // the header's count follows new requests by itself, on any page
    await page.goto(`${stack.server.url}/#/plans`);
    await requestOverHttp('ap-list-2', 'ap_list_2', { to: 'b@example.com' });
    await headerCount(page, 2);
    await page.goto(`${stack.server.url}/#/approvals?status=pending&assignee=ops`);
    await page.waitForSelector('#approvals tbody tr');
    expect(await page.locator('#approvals tbody tr').count()).toBe(1);
    await shot(page, 'approvals-1440');
    await page.context().close();
  });

  it('deciding from the page stores approval.decided with decidedBy = the key name', async () => {
    const args = { to: 'board@example.com', body: 'draft' };
    await requestOverHttp('ap-decide', 'ap_decide_1', args, { assignee: 'ops', reason: 'mail leaves the company' });
    const page = await openPage(APPROVE_KEY);
    // an approve-only key reads approvals and nothing else: the console opens on them
    expect(await page.locator('#nav a').allTextContents()).toEqual([expect.stringMatching(/^Approvals \d+$/)]);
    await page.waitForSelector('#approvals tbody tr[data-approval=ap_decide_1] .decide-link');
    await page.click('#approvals tr[data-approval=ap_decide_1] .decide-link');
    await page.waitForSelector('#decide-form');
    // an edit without the edited digest is stopped in the page, one line naming the field
    await page.check('#decision-edit');
    await page.click('#decide-submit');
    expect(await page.textContent('#decide-out .error')).toMatch(/^Edited args digest: /);
    const edited = argsDigest({ ...args, body: 'final' });
    await page.fill('#edited-args-digest', edited);
    await page.fill('#feedback', 'send the final text, not the draft');
    // another approval requested meanwhile: the header counts it, the form being filled in stays
    await page.locator('#feedback').blur();
    const pending = await pendingNow();
    await requestOverHttp('ap-decide-other', 'ap_decide_other', { to: 'other@example.com' });
    await headerCount(page, pending + 1);
    await sleep(2 * 2_000 + 500); // two of the page's polls
    expect(await page.inputValue('#feedback')).toBe('send the final text, not the draft');
    expect(await page.inputValue('#edited-args-digest')).toBe(edited);
    await page.click('#decide-submit');
    await page.waitForSelector('#decide-result');
    expect(await page.textContent('#decide-result')).toMatch(new RegExp(`^Decided: edit by ${APPROVER} \\(event `));
    await waitFor('the decision stored', async () => (await approval('ap_decide_1'))?.status === 'decided');
    const decided = (await approval('ap_decide_1'))!;
    expect([decided.decision, decided.decidedBy, decided.editedArgsDigest, decided.feedback]).toEqual([
      'edit',
      APPROVER,
      edited,
      'send the final text, not the draft',
    ]);
    const events = await stack.db.ds
      .getRepository<{ type: string }>(ENTITY.event)
      .count({ where: { planId: 'ap-decide', type: 'approval.decided' } as never });
    expect(events).toBe(1);
    // the page redraws with the stored decision, and a second decision is refused by the server
    await page.waitForFunction(() => document.querySelector('#approval-facts')?.textContent?.includes('edit by'));
    expect(await page.locator('#decide-form').count()).toBe(0);
    const again = await decideWithCookie(page, 'ap_decide_1', { decision: 'reject' });
    expect(again).toEqual([409, 'already_decided']);
    await page.context().close();
  });

  it('the approvals pages: titled, focused, no serious axe-core violation, nothing wider than a 390 px phone', async () => {
    await requestOverHttp(
      'ap-a11y',
      'ap_a11y_1',
      { to: 'x@example.com' },
      { assignee: 'ops', reason: 'x'.repeat(300) },
    );
    const context = await browser.newContext({ viewport: { width: 390, height: 844 }, bypassCSP: true });
    const page = await context.newPage();
    await page.goto(stack.server.url + '/');
    await page.fill('#api-key', APPROVE_KEY);
    await page.click('#signin button[type=submit]');
    await page.waitForSelector('#approvals tbody tr');
    expect(await page.title()).toBe('Approvals · plan-ledger console');
    expect(await page.evaluate(() => document.activeElement?.tagName)).toBe('H1');
    expect(await page.textContent('#signed-in-as')).toBe(APPROVER);
    for (const [name, hash, ready] of [
      ['approvals', '#/approvals?status=all', '#approvals tbody tr[data-approval=ap_a11y_1]'],
      ['approval', '#/approvals/ap_a11y_1', '#decide-form'],
    ]) {
      await page.goto(`${stack.server.url}/${hash}`);
      await page.waitForSelector(ready);
      await page.addScriptTag({ path: require.resolve('axe-core/axe.min.js') });
      const violations = await page.evaluate(async () => {
        type Axe = { run: (ctx: Document) => Promise<{ violations: Array<{ id: string; impact: string | null }> }> };
        const result = await (globalThis as unknown as { axe: Axe }).axe.run(document);
        return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => v.id);
      });
      expect([name, violations]).toEqual([name, []]);
      expect([name, await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)]).toEqual([
        name,
        0,
      ]);
      await shot(page, `${name}-390`);
    }
    await context.close();
  });

  it('a Python and a TypeScript executor each request, wait for and consume an approval decided from the console', async () => {
    const run = Date.now().toString(36);
    const pyArgs = { to: 'py@example.com', subject: 'report' };
    const py: PyRun = python([
      EXECUTOR,
      stack.server.url,
      `ap-py-${run}`,
      `ap-py-${run}-s`,
      `ap_py_${run}`,
      JSON.stringify(pyArgs),
    ]);
    const tsArgs = { to: 'ts@example.com', subject: 'report' };
    const ts = tsExecutor(`ap-ts-${run}`, `ap_ts_${run}`, tsArgs);

    await lineWhere(py, (l) => l.stage === 'requested');
    await ts.requested;
    const page = await openPage(APPROVE_KEY);
    await headerCount(page, await pendingNow());
    await decideInPage(page, `ap_py_${run}`, 'approve', { feedback: 'fine' });
    await decideInPage(page, `ap_ts_${run}`, 'reject', { feedback: 'not to this address' });

    const consumed = await lineWhere(py, (l) => l.stage === 'consumed', 60_000);
    expect(consumed).toEqual({ stage: 'consumed', status: 200, decision: 'approve', decidedBy: APPROVER });
    expect(await lineWhere(py, (l) => l.stage === 'again')).toEqual({
      stage: 'again',
      status: 409,
      reason: 'already_consumed',
    });
    expect((await py.exited).code).toBe(0);
    expect(await ts.done).toEqual({
      decision: 'reject',
      decidedBy: APPROVER,
      consume: [409, 'rejected'],
    });
    const pyStored = await approval(`ap_py_${run}`);
    expect([pyStored?.status, pyStored?.decidedBy, pyStored?.consumedBy]).toEqual([
      'consumed',
      APPROVER,
      'py-executor',
    ]);
    await page.context().close();
  });
});

async function pendingNow(): Promise<number> {
  return (await ledger.list({ status: 'pending', limit: 1000 })).length;
}

/**
 * The TypeScript executor, with the publisher's approval helpers: requestApproval (through the
 * publisher, like every event), waitForApproval (a long poll of serve, woken by the decision) and
 * consumeApproval, with its ingest key.
 */
function tsExecutor(planId: string, approvalId: string, args: object) {
  let requested!: () => void;
  const requestedP = new Promise<void>((r) => (requested = r));
  const done = (async () => {
    const plan = { planId, sessionId: `${planId}-s` };
    publisher.planCreated(plan, {
      query: 'mail the report',
      steps: [{ stepId: 'send', index: 0, agentId: 'ts-executor', task: 'send the mail' }],
    });
    requestApproval(publisher, plan, { approvalId, stepId: 'send', tool: 'send_mail', args, expiresInMs: 600_000 });
    await publisher.flush(10_000);
    await waitFor(`approval ${approvalId} stored`, async () => (await approval(approvalId))?.status === 'pending');
    requested();
    const server = { url: stack.server.url, key: INGEST_KEY };
    const view = await waitForApproval(server, approvalId, { timeoutMs: 120_000 });
    const consume = await consumeApproval(server, approvalId, { args, consumer: 'ts-executor' }).then(
      (a) => [200, a.decision],
      (err: unknown) => [409, err instanceof ApprovalRefusedError ? err.reason : String(err)],
    );
    return { decision: view.decision, decidedBy: view.decidedBy, consume };
  })();
  return { requested: requestedP, done };
}
