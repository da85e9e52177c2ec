/// <reference lib="dom" />
/**
 * The web console in a real headless Chromium (Debian's, driven by playwright-core), against a
 * real `plan-ledger serve` and worker on a throwaway SQLite database and queue prefix. What a
 * user checks: the demo plan's DAG, timeline and decisions; a 120-task DAG; hostile event text
 * shown, never run; sign-in and scopes enforced by the server; a replay from the console stored
 * exactly once. Screenshots go to test-artifacts/console/ (git-ignored).
 */
import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { buildDeadLetter, DeadLetterWriter } from '../../src/dead-letters/dead-letter-writer';
import { demoScenario } from '../../src/demo/demo-scenario';
import type { PlanEventPublisher } from '../../src/publisher';
import { EVENTS_QUEUE } from '../../src/queue/queue-names';
import { ENTITY, type ExecutionPlanRow } from '../../src/store/entities';
import { displayMoney, moneyFromColumn } from '../../src/pricing';
import type { PlanEvent, StepSpec } from '../../src/contracts';
import { PlanEventStore } from '../../src/store/plan-event-store';
import { forkPlan } from '../../src/fork/fork-plan';
import { type ApiStack, INGEST_KEY, READ_KEY } from '../http/http-harness';
import { genAiRun, otlpJsonRequest } from '../otlp/otlp-fixtures';
import { openRedis } from '../worker/helpers/queue-harness';
import { layeredSteps } from '../support/event-factory';
import { ARTIFACTS, type ConsoleBrowser, shot, startConsoleBrowser } from './support/console-browser';

const ADMIN_KEY = 'admin-key-for-console-tests-0123';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let ui: ConsoleBrowser;
let stack: ApiStack;
let browser: Browser;
let publisher: PlanEventPublisher;

async function waitFor<T>(
  what: string,
  fn: () => Promise<T | undefined | null | false>,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

async function planStatus(planId: string): Promise<string | undefined> {
  const row = await stack.db.ds
    .getRepository<{ id: string; status: string }>(ENTITY.plan)
    .findOne({ where: { id: planId } });
  return row?.status;
}

async function stepStatus(planId: string, stepKey: string): Promise<string | undefined> {
  const row = await stack.db.ds
    .getRepository<{ status: string }>(ENTITY.step)
    .findOne({ where: { planId, stepKey } as never });
  return row?.status;
}

async function storedCount(eventId: string): Promise<number> {
  return stack.db.ds.getRepository(ENTITY.event).count({ where: { eventId } });
}

/** A new page signed in with `key` (or not signed in), counting dialogs and marked by a page-level hook. */
const openPage = (key: string | null) => ui.openPage(key);

interface AxeResults {
  violations: Array<{ id: string; impact: string | null; nodes: Array<{ target: string[] }> }>;
}

function auth(key: string): Record<string, string> {
  return { authorization: `Bearer ${key}` };
}

/** A figure measured in the browser: printed and kept beside the screenshots, never asserted on. */
function report(name: string, value: number): void {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  fs.appendFileSync(path.join(ARTIFACTS, 'measured.txt'), `${new Date().toISOString()} ${name}: ${value}\n`);
  process.stdout.write(`console: ${name}: ${value}\n`);
}

/** How much wider than the viewport the page is (0 when nothing overflows sideways). */
async function overflowX(page: Page): Promise<number> {
  return page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
}

beforeAll(async () => {
  ui = await startConsoleBrowser({ env: { HTTP_ADMIN_KEYS: ADMIN_KEY } });
  ({ stack, browser, publisher } = ui);
}, 60_000);

afterAll(async () => ui?.close());

describe('the web console in headless Chromium', () => {
  it('without a key shows only the sign-in page, and the data routes answer 401', async () => {
    const { page } = await openPage(null);
    await page.goto(stack.server.url + '/#/plans');
    await page.waitForSelector('#signin');
    expect(await page.locator('#nav a').count()).toBe(0);
    expect(await page.locator('#plans').count()).toBe(0);
    const status = await page.evaluate(async () => (await fetch('/v1/plans')).status);
    expect(status).toBe(401);
    const res = await fetch(stack.server.url + '/');
    expect(res.headers.get('content-security-policy')).toContain("script-src 'self'");
    await page.fill('#api-key', 'not-a-key-of-this-server-000000');
    await page.click('#signin button[type=submit]');
    await page.waitForSelector('.error');
    expect(await page.textContent('.error')).toBe('unknown API key');
    await page.context().close();
  });

  it('draws the demo plan: one DAG node per step with the failed one marked, one timeline bar per step, the decision trail', async () => {
    const ids = { planId: 'demo-plan-console', sessionId: 'demo-session-console' };
    for (const action of demoScenario(ids)) action.publish(publisher);
    await publisher.flush(10_000);
    await waitFor('the demo plan to be stored', async () => (await planStatus(ids.planId)) === 'failed');
    const steps = await stack.db.ds
      .getRepository<{ stepKey: string; status: string }>(ENTITY.step)
      .find({ where: { planId: ids.planId } as never });

    const { page } = await openPage(READ_KEY);
    await page.goto(`${stack.server.url}/#/plans/${ids.planId}`);
    await page.waitForSelector('#plan-rest[data-ready]');
    expect(await page.locator('#dag .dag-node').count()).toBe(steps.length);
    const failed = steps.filter((s) => s.status === 'failed').map((s) => s.stepKey);
    expect(failed).toHaveLength(1);
    expect(
      await page
        .locator('#dag .dag-node[data-status=failed]')
        .evaluateAll((els) => els.map((e) => e.getAttribute('data-step'))),
    ).toEqual(failed);
    expect(await page.locator('#timeline .gantt-bar').count()).toBe(steps.length);
    expect(await page.locator('#decisions tr[data-decision=edit]').count()).toBe(1);
    expect(await page.textContent('#decisions')).toContain('alice@example.com');
    // the demo's edit: a fact-checker step added, the style step's task and the build's dependencies
    // changed, and what the edit replaced (the old tasks) kept for the audit
    expect(await page.textContent('#decisions tr[data-decision=edit]')).toContain(
      'added quotes; changed style, build; style was "Choose a citation style and the section layout"; build was "Rebuild the thesis PDF" (6 steps after)',
    );
    expect(await page.textContent('#plan-source')).toBe('events');
    expect(await page.locator('#checkpoints tbody tr').count()).toBe(3);
    expect(await page.getAttribute('#dag .dag-checkpoint', 'data-checkpoint-layer')).toBe('2');
    // what the plan and each step cost, fixed when stored: the console shows the stored figures
    const plan = await stack.db.ds.getRepository<ExecutionPlanRow>(ENTITY.plan).findOneByOrFail({ id: ids.planId });
    const planCost = displayMoney(moneyFromColumn(plan.totalCost)!);
    expect(await page.textContent('.cards')).toContain(`$${planCost}`);
    expect(await page.textContent('#steps tr[data-step=review] .step-cost')).toMatch(/^\$0\.\d+$/);
    expect(await page.textContent('#steps tr[data-step=build] .step-cost')).toBe('–'); // skipped: nothing to price
    await shot(page, 'demo-plan');

    await page.click('button.show-output[data-step=write]');
    await page.waitForSelector('#output-text');
    expect(await page.textContent('#output-text')).toContain('## Bibliography');

    await page.goto(`${stack.server.url}/#/sessions/${ids.sessionId}`);
    await page.waitForSelector('#history');
    expect(await page.textContent('#history')).toContain(ids.planId);
    await shot(page, 'session');
    await page.goto(`${stack.server.url}/#/analytics`);
    await page.waitForSelector('#plans-per-day');
    // a cost chart by model and by agent, each bar labelled with the exact amount
    expect(await page.locator('#cost-per-model .chart-bar').count()).toBeGreaterThan(0);
    expect(await page.textContent('#cost-per-model')).toContain('gpt-4o');
    expect(await page.textContent('#cost-per-agent')).toContain('fact-checker');
    expect(await page.textContent('#cost-per-model')).toMatch(/\$0\.\d+/);
    await shot(page, 'analytics');
    await page.goto(`${stack.server.url}/#/health`);
    await page.waitForSelector('#events-per-minute');
    expect(await page.locator('#events-per-minute .chart-bar').count()).toBe(30);
    await shot(page, 'health');
    await page.goto(`${stack.server.url}/#/plans?status=failed`);
    await page.waitForSelector('#plans tbody tr');
    expect(await page.locator(`#plans tr[data-plan="${ids.planId}"]`).count()).toBe(1);
    await page.context().close();
  });

  it('shows a plan mapped from an OpenTelemetry trace like any other, with its source', async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const res = await fetch(`${stack.server.url}/v1/traces`, {
      method: 'POST',
      headers: { authorization: `Bearer ${INGEST_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify(otlpJsonRequest(genAiRun(traceId))),
    });
    expect(res.status).toBe(200);
    const planId = `otlp-${traceId}`;
    await waitFor('the traced plan to be stored', async () => (await planStatus(planId)) === 'completed');
    const { page } = await openPage(READ_KEY);
    await page.goto(`${stack.server.url}/#/plans/${planId}`);
    await page.waitForSelector('#plan-rest[data-ready]');
    expect(await page.textContent('#plan-source')).toBe(`OpenTelemetry trace ${traceId}`);
    expect(await page.locator('#dag .dag-node').count()).toBe(5);
    expect(await page.locator('#dag .dag-node[data-status=failed]').count()).toBe(1);
    expect(await page.textContent('#handoffs')).toContain('researcher');
    await shot(page, 'otlp-plan');
    await page.context().close();
  });

  it('shows cache, reasoning and a reported cost beside the priced one, on the plan page and in analytics; markup in a model stays text', async () => {
    const plan = { planId: 'plan-usage-parts', sessionId: 'session-usage-parts' };
    const hostileModel = '<img src=x onerror="__pwned=1">';
    publisher.planCreated(plan, {
      query: 'cached and reported usage',
      steps: [
        { stepId: 'u1', index: 0, agentId: 'cacher', task: 'read the cache' },
        { stepId: 'u2', index: 1, agentId: 'reporter', task: 'report a cost' },
        { stepId: 'u3', index: 2, agentId: 'odd', task: 'odd model' },
      ],
    });
    publisher.stepCompleted(plan, {
      stepId: 'u1',
      inputTokens: 1200,
      outputTokens: 300,
      cacheReadTokens: 1000,
      reasoningTokens: 120,
      model: 'gpt-4o',
      provider: 'openai',
    });
    publisher.stepCompleted(plan, {
      stepId: 'u2',
      inputTokens: 1000,
      outputTokens: 100,
      cacheWriteTokens: 600,
      model: 'claude-sonnet-4',
      provider: 'anthropic',
      reportedCost: '0.5',
    });
    publisher.stepCompleted(plan, { stepId: 'u3', inputTokens: 10, outputTokens: 1, model: hostileModel });
    await publisher.flush(10_000);
    await waitFor('the usage plan', async () => (await stepStatus(plan.planId, 'u3')) === 'completed');
    const { page } = await openPage(READ_KEY);
    await page.goto(`${stack.server.url}/#/plans/${plan.planId}`);
    await page.waitForSelector('#plan-rest[data-ready]');
    const cards = await page.locator('.cards .card').allTextContents();
    expect(cards).toEqual(
      expect.arrayContaining(['1,000cache read tokens', '600cache write tokens', '120reasoning tokens']),
    );
    const row = (step: string) => page.locator(`tr[data-step=${step}]`);
    expect(await row('u1').locator('.step-tokens').textContent()).toBe('1,200 / 300cache read 1,000 · reasoning 120');
    expect(await row('u2').locator('.step-tokens').textContent()).toBe('1,000 / 100cache write 600');
    // 400 x $3 + 600 cache writes x $3.75 + 100 x $15 per Mtok, beside the provider's own $0.50
    expect(await row('u2').locator('.step-cost').textContent()).toBe('$0.50reported; priced $0.00495');
    expect(await row('u3').locator('td').nth(4).textContent()).toBe(hostileModel);
    expect(await page.evaluate(() => (globalThis as unknown as { __pwned: number }).__pwned)).toBe(0);
    expect(await page.locator('img[src=x]').count()).toBe(0);
    await shot(page, 'usage-plan');
    await page.goto(`${stack.server.url}/#/analytics`);
    await page.waitForSelector('#token-parts-per-model');
    // model, cache read, cache write, reasoning (other tests' plans add to the models' input and output)
    const parts = async (model: string) => {
      const rows = await page
        .locator('#token-parts-per-model tbody tr')
        .evaluateAll((trs) => trs.map((tr) => Array.from(tr.children, (td) => td.textContent ?? '')));
      const cells = rows.find((r) => r[0] === model) ?? [];
      return [cells[0], cells[2], cells[3], cells[5]];
    };
    expect(await parts('gpt-4o')).toEqual(['gpt-4o', '1,000', '0', '120']);
    expect(await parts('claude-sonnet-4')).toEqual(['claude-sonnet-4', '0', '600', '0']);
    expect(await page.locator('img[src=x]').count()).toBe(0);
    await page.context().close();
  });

  it('reconcile: uploaded exports and a pasted one show the coverage, cost delta and what is not attributed, as the API answers them', async () => {
    const billing = path.join(__dirname, '..', 'fixtures', 'billing');
    const usage = path.join(billing, 'anthropic', 'usage_report_messages.json');
    const cost = path.join(billing, 'anthropic', 'cost_report.json');
    const res = await fetch(`${stack.server.url}/v1/analytics/reconcile?provider=anthropic&failOver=0.5`, {
      method: 'POST',
      headers: { ...auth(READ_KEY), 'content-type': 'application/json' },
      body: `[${fs.readFileSync(usage, 'utf8')},${fs.readFileSync(cost, 'utf8')}]`,
    });
    expect(res.status).toBe(200);
    const expected = await res.json();
    const { page } = await openPage(READ_KEY);
    await page.goto(`${stack.server.url}/#/reconcile`);
    await page.waitForSelector('#reconcile-form');
    await page.selectOption('#reconcile-form select[name=provider]', 'anthropic');
    await page.fill('#reconcile-form input[name=failOver]', '0.5');
    await page.setInputFiles('#reconcile-form input[type=file]', [usage, cost]);
    await page.click('#reconcile-form button[type=submit]');
    await page.waitForSelector('#reconcile-cards');
    const cards = await page.locator('#reconcile-cards .card .value').allTextContents();
    expect(cards.slice(0, 3)).toEqual([
      `${expected.coveragePct} %`,
      String(expected.costDelta).replace(/^(-?)/, '$1$$'),
      `${expected.costDeltaPct} %`,
    ]);
    if (expected.check.beyond) expect(await page.textContent('#reconcile-beyond')).toBe(expected.check.beyond);
    const billedOnly = expected.unattributed.billedModelsNotInLedger.map((m: { model: string }) => m.model);
    const rows = await page.locator('#reconcile-unattributed tbody tr').allTextContents();
    for (const model of billedOnly)
      expect(rows.some((r) => r.startsWith('billed, not in the ledger' + model))).toBe(true);
    expect(await page.locator('#reconcile-models tbody tr').count()).toBe(expected.byModel.length);
    await shot(page, 'reconcile');
    // a pasted CSV export, and a broken one answered with the server's one line
    await page.setInputFiles('#reconcile-form input[type=file]', []);
    await page.selectOption('#reconcile-form select[name=provider]', 'openai');
    await page.fill('#reconcile-form input[name=failOver]', '');
    await page.fill(
      '#reconcile-form textarea',
      fs.readFileSync(path.join(billing, 'openai', 'usage_completions.csv'), 'utf8'),
    );
    await page.click('#reconcile-form button[type=submit]');
    await page.waitForFunction(() =>
      document.querySelector('#reconcile-result p.muted')?.textContent?.startsWith('openai'),
    );
    await page.fill('#reconcile-form textarea', 'start_time,model,input_tokens\n1793491200,<b>gpt-4o</b>,12x\n');
    await page.click('#reconcile-form button[type=submit]');
    await page.waitForSelector('#reconcile-result .error');
    expect(await page.textContent('#reconcile-result .error')).toBe(
      'the body: row 2: input_tokens: "12x" is not a whole number of tokens',
    );
    expect(await page.locator('#reconcile-result b').count()).toBe(0);
    await page.context().close();
  });

  it('renders a 120-task, 8-layer DAG (its render time is reported, not asserted)', async () => {
    const plan = { planId: 'plan-dag-120', sessionId: 'session-dag' };
    publisher.planCreated(plan, { query: 'a wide workflow', steps: layeredSteps(8, 15) });
    await publisher.flush(10_000);
    await waitFor('the 120-task plan', async () => (await planStatus(plan.planId)) !== undefined);

    const { page } = await openPage(READ_KEY);
    await page.goto(`${stack.server.url}/#/plans/${plan.planId}`);
    await page.waitForSelector('#dag[data-render-ms]');
    expect(await page.locator('#dag .dag-node').count()).toBe(120);
    expect(await page.locator('#dag .dag-layer-label').count()).toBe(8);
    // the columns are the server's layers (the resume point's), not a layering of the page's own
    const api = (await (
      await fetch(`${stack.server.url}/v1/plans/${plan.planId}`, { headers: auth(READ_KEY) })
    ).json()) as {
      layers: string[][];
    };
    expect(api.layers).toHaveLength(8);
    const drawn = await page
      .locator('#dag .dag-node')
      .evaluateAll((els) => els.map((e) => [e.getAttribute('data-step'), Number(e.getAttribute('data-layer'))]));
    expect(new Map(drawn as Array<[string, number]>)).toEqual(
      new Map(api.layers.flatMap((ids, layer) => ids.map((id): [string, number] => [id, layer]))),
    );
    // measured in the page: from the route's first request to the DAG in the DOM
    report('dag-120 render ms', Number(await page.getAttribute('#dag', 'data-render-ms')));
    await shot(page, 'dag-120');
    await page.context().close();
  });

  it('shows hostile markup in a query, an agent id and an output as text, and runs none of it', async () => {
    const plan = { planId: 'plan-hostile', sessionId: 'session-hostile' };
    const query = '<script>window.__pwned = 1</script> <img src=x onerror="window.__pwned = 2">';
    const agentId = '<img src=x onerror=alert(1)>';
    const output = '# Title\n<script>alert(2)</script><img src=x onerror="window.__pwned=3">\n[x](javascript:alert(4))';
    publisher.planCreated(plan, {
      query,
      steps: [{ stepId: 's1', index: 0, agentId, task: '<b onmouseover=alert(5)>task</b>' }],
    });
    publisher.stepStarted(plan, { stepId: 's1' });
    publisher.stepCompleted(plan, { stepId: 's1', inputTokens: 1, outputTokens: 1, outputContent: output });
    await publisher.flush(10_000);
    await waitFor(
      'the hostile plan',
      async () =>
        (
          await stack.db.ds
            .getRepository<{ outputEventId: string | null }>(ENTITY.step)
            .findOne({ where: { planId: plan.planId } as never })
        )?.outputEventId,
    );

    const { page, dialogs } = await openPage(READ_KEY);
    await page.goto(`${stack.server.url}/#/plans/${plan.planId}`);
    await page.waitForSelector('#plan-rest[data-ready]');
    await page.click('button.show-output[data-step=s1]');
    await page.waitForSelector('#output-text');
    await page.goto(`${stack.server.url}/#/plans`);
    await page.waitForSelector('#plans tbody tr');
    await page.goto(`${stack.server.url}/#/plans/${plan.planId}`);
    await page.waitForSelector('#plan-rest[data-ready]');
    await page.click('button.show-output[data-step=s1]');
    await page.waitForSelector('#output-text');
    await sleep(300); // an image error handler would have fired by now

    expect(await page.evaluate(() => (globalThis as unknown as { __pwned: number }).__pwned)).toBe(0);
    expect(dialogs).toEqual([]);
    expect(await page.locator('main img, main script, main b').count()).toBe(0);
    expect(await page.textContent('.query')).toBe(query);
    expect(await page.textContent('#output-text')).toBe(output);
    expect(await page.textContent('#steps')).toContain(agentId);
    await shot(page, 'hostile');
    await page.context().close();
  });

  it('with the read key, replay and purge are refused by the server (403), not only hidden; a request without the CSRF token is refused', async () => {
    const [dl] = await writeDeadLetters([
      { specVersion: 1, type: 'step.started', planId: 'p', sessionId: 's', seq: 1, occurredAt: 'never', payload: {} },
    ]);
    const { page } = await openPage(READ_KEY);
    await page.goto(`${stack.server.url}/#/dead-letters/${dl.id}`);
    await page.waitForSelector('#event');
    expect(await page.locator('#replay').count()).toBe(0);
    const answers = await page.evaluate(async (id) => {
      const { csrf } = (await (await fetch('/console/session')).json()) as { csrf: string };
      const post = async (verb: string) =>
        (await fetch(`/v1/dead-letters/${id}/${verb}`, { method: 'POST', headers: { 'x-csrf-token': csrf } })).status;
      return [await post('replay'), await post('purge')];
    }, dl.id);
    expect(answers).toEqual([403, 403]);
    await page.context().close();

    const admin = await openPage(ADMIN_KEY);
    const withoutToken = await admin.page.evaluate(
      async (id) => (await fetch(`/v1/dead-letters/${id}/purge`, { method: 'POST' })).status,
      dl.id,
    );
    expect(withoutToken).toBe(403);
    await admin.page.context().close();
    const redis = openRedis();
    try {
      expect(await redis.exists(`${stack.prefix}:plan-events-dead:${dl.id}`)).toBe(1);
    } finally {
      redis.disconnect();
    }
  });

  it('replays a dead letter from the console, after a confirmation, and the event is stored exactly once', async () => {
    const plan = { planId: 'plan-replayed', sessionId: 'session-replayed' };
    const event = {
      specVersion: 1,
      eventId: '7b3d3f0e-3c1d-4b5e-9a61-0c2f7d1e2a44',
      type: 'plan.created',
      planId: plan.planId,
      sessionId: plan.sessionId,
      seq: 1,
      occurredAt: new Date().toISOString(),
      payload: { query: 'replay me', steps: [{ stepId: 'a', index: 0, agentId: 'x', task: 't' }] },
    };
    const [dl] = await writeDeadLetters([event]);
    const { page, dialogs } = await openPage(ADMIN_KEY);
    await page.goto(`${stack.server.url}/#/dead-letters`);
    await page.waitForSelector(`#dead-letters tr[data-id="${dl.id}"]`);
    await page.click(`#dead-letters tr[data-id="${dl.id}"] a`);
    await page.waitForSelector('#replay');
    await shot(page, 'dead-letter');
    await page.click('#replay');
    await page.waitForSelector('#action-result .notice');
    expect(await page.textContent('#action-result')).toBe('Replayed: 1 event(s) queued.');
    expect(dialogs).toHaveLength(1);
    await waitFor('the replayed event', async () => (await storedCount(event.eventId)) > 0);
    // the dead letter is gone: the page no longer offers to replay or purge it
    expect(await page.locator('#replay, #purge').count()).toBe(0);
    await sleep(500);
    expect(await storedCount(event.eventId)).toBe(1);
    expect(await planStatus(plan.planId)).toBe('executing');
    await page.context().close();
  });

  it('draws a running step (API status in_progress) in the running colour in the DAG, the timeline and its badge; a running plan shows its elapsed time and "now"', async () => {
    const plan = { planId: 'plan-running', sessionId: 'session-running' };
    publisher.planCreated(plan, {
      query: 'still running',
      steps: [
        { stepId: 'r1', index: 0, agentId: 'runner', task: 'run' },
        { stepId: 'r2', index: 1, agentId: 'runner', task: 'wait', dependsOn: ['r1'] },
      ],
    });
    publisher.stepStarted(plan, { stepId: 'r1' });
    await publisher.flush(10_000);
    await waitFor('r1 in progress', async () => (await stepStatus(plan.planId, 'r1')) === 'in_progress');
    const { page } = await openPage(READ_KEY);
    await page.goto(`${stack.server.url}/#/plans/${plan.planId}`);
    await page.waitForSelector('#plan-rest[data-ready]');
    const colours = await page.evaluate(() => {
      const style = (sel: string, prop: string) =>
        getComputedStyle(document.querySelector(sel) as Element).getPropertyValue(prop);
      return {
        node: style('#dag .dag-node[data-step=r1] rect', 'fill'),
        pendingNode: style('#dag .dag-node[data-step=r2] rect', 'fill'),
        bar: style('#timeline .gantt-bar[data-step=r1]', 'fill'),
        badge: style('#steps tr[data-step=r1] .badge', 'background-color'),
        legend: style('.legend .badge.running', 'background-color'),
      };
    });
    expect(colours).toEqual({
      node: 'rgb(227, 242, 253)',
      pendingNode: 'rgb(255, 255, 255)',
      bar: 'rgb(21, 101, 192)',
      badge: 'rgb(21, 101, 192)',
      legend: 'rgb(21, 101, 192)',
    });
    expect(await page.textContent('#steps tr[data-step=r1] .badge')).toBe('in_progress');
    expect(await page.textContent('.cards')).toMatch(/running for/);
    expect(await page.locator('#timeline .gantt-now').count()).toBe(1);
    expect(await page.locator('#timeline .gantt-tick').count()).toBe(5);
    await page.context().close();
  });

  it('hostile long strings and phone width: no page is wider than the screen at 1440 or 390 px; screenshots of every page at both', async () => {
    const plan = { planId: 'plan-wide', sessionId: 'session-wide' };
    const long = 'x'.repeat(3_000);
    const url = 'https://example.com/' + 'a/'.repeat(800) + '?q=' + 'b'.repeat(400);
    publisher.planCreated(plan, {
      query: 'SELECT ' + long,
      steps: [
        { stepId: 'w1', index: 0, agentId: 'agent-' + 'y'.repeat(94), task: url, title: long.slice(0, 500) },
        { stepId: 'w2', index: 1, agentId: 'writer', task: 'z'.repeat(2_000) },
      ],
    });
    publisher.stepStarted(plan, { stepId: 'w1' });
    publisher.stepFailed(plan, { stepId: 'w1', error: 'Error:' + 'Q'.repeat(3_000) });
    publisher.stepStarted(plan, { stepId: 'w2' });
    publisher.stepCompleted(plan, {
      stepId: 'w2',
      inputTokens: 3,
      outputTokens: 4,
      result: 'base64:' + 'QUJD'.repeat(800),
      outputContent: long,
    });
    await publisher.flush(10_000);
    await waitFor('the wide plan', async () => {
      const rows = await stack.db.ds
        .getRepository<{ status: string }>(ENTITY.step)
        .find({ where: { planId: plan.planId } as never });
      return rows.length === 2 && rows.every((r) => r.status === 'completed' || r.status === 'failed');
    });
    const [dl] = await writeDeadLetters([{ type: 'step.failed', planId: plan.planId, blob: long }]);

    const pages: Array<[string, string, string]> = [
      ['plans', '#/plans', '#plans'],
      ['plan', `#/plans/${plan.planId}`, '#plan-rest[data-ready]'],
      ['session', `#/sessions/${plan.sessionId}`, '#history'],
      ['dead-letters', '#/dead-letters', '#dead-letters'],
      ['dead-letter', `#/dead-letters/${dl.id}`, '#event'],
      ['health', '#/health', '#events-per-minute'],
      ['analytics', '#/analytics', '#plans-per-day'],
      ['reconcile', '#/reconcile', '#reconcile-form'],
    ];
    for (const [width, height] of [
      [1440, 900],
      [390, 844],
    ]) {
      const context = await browser.newContext({ viewport: { width, height } });
      const page = await context.newPage();
      await page.goto(stack.server.url + '/');
      await page.fill('#api-key', READ_KEY);
      await page.click('#signin button[type=submit]');
      await page.waitForSelector('#nav a');
      for (const [name, hash, ready] of pages) {
        await page.goto(`${stack.server.url}/${hash}`);
        await page.waitForSelector(ready);
        if (name === 'plan') {
          await page.click('button.show-output[data-step=w2]');
          await page.waitForSelector('#output-text');
        }
        expect([name, width, await overflowX(page)]).toEqual([name, width, 0]);
        await shot(page, `${name}-${width}x${height}`);
      }
      await context.close();
    }
  });

  it('shows bidirectional overrides and control characters escaped, in names, queries and a dead letter, and each violation once', async () => {
    const plan = { planId: 'plan-bidi', sessionId: 'session-bidi' };
    publisher.planCreated(plan, {
      query: 'open \u202Egnp.exe please',
      steps: [{ stepId: 'b1', index: 0, agentId: 'agent\u202Egnp.exe', task: 'read \u2066isolated\u2069 text' }],
    });
    await publisher.flush(10_000);
    await waitFor('the bidi plan', async () => (await planStatus(plan.planId)) !== undefined);
    const { page } = await openPage(READ_KEY);
    await page.goto(`${stack.server.url}/#/plans/${plan.planId}`);
    await page.waitForSelector('#steps');
    expect(await page.textContent('.query')).toBe('open \\u202egnp.exe please');
    expect(await page.textContent('#steps tr[data-step=b1]')).toContain('agent\\u202egnp.exe');
    const raw = await page.evaluate(() => /[\u202a-\u202e\u2066-\u2069]/.test(document.body.innerText));
    expect(raw).toBe(false);

    const [dl] = await writeDeadLetters(
      [{ type: 'step.started', planId: plan.planId, name: '\u202Egnp.exe\u001b[2J' }],
      {
        message: 'invalid plan event: payload.stepId is required; occurredAt must be an ISO-8601 instant',
        violations: [
          { path: 'payload.stepId', message: 'payload.stepId is required' },
          { path: 'occurredAt', message: 'occurredAt must be an ISO-8601 instant' },
        ],
      },
    );
    await page.goto(`${stack.server.url}/#/dead-letters/${dl.id}`);
    await page.waitForSelector('#event');
    expect(await page.textContent('#event')).toContain('"name": "\\u202egnp.exe\\u001b[2J"');
    expect(await page.textContent('#reason')).toBe(
      'payload.stepId is required\noccurredAt must be an ISO-8601 instant',
    );

    const [asString] = await writeDeadLetters(['{"type": "plan.created"']);
    await page.goto(`${stack.server.url}/#/dead-letters/${asString.id}`);
    await page.waitForSelector('#event');
    expect(await page.textContent('#event')).toBe('{"type": "plan.created"');
    expect(await page.textContent('main')).toContain('The event arrived as a JSON string, not an object');
    await page.context().close();
  });

  it('every route change names the page in the title and moves focus to its heading; DAG steps are reachable from the keyboard', async () => {
    const { page } = await openPage(READ_KEY);
    expect(await page.title()).toBe('Plans · plan-ledger console');
    for (const [hash, title] of [
      ['#/health', 'Health · plan-ledger console'],
      ['#/analytics', 'Analytics · plan-ledger console'],
      ['#/reconcile', 'Reconcile with the bill · plan-ledger console'],
      ['#/dead-letters', 'Dead letters · plan-ledger console'],
      ['#/plans/plan-dag-120', 'Plan plan-dag-120 · plan-ledger console'],
    ]) {
      await page.goto(`${stack.server.url}/${hash}`);
      await waitFor(`the title of ${hash}`, async () => (await page.title()) === title);
      expect(await page.evaluate(() => document.activeElement?.tagName)).toBe('H1');
    }
    // Tab from the heading reaches the DAG's first step; Enter opens its row in the steps table
    await page.focus('#dag .dag-node[data-step="t0-0"]');
    await page.keyboard.press('Enter');
    expect(await page.evaluate(() => document.activeElement?.getAttribute('data-step'))).toBe('t0-0');
    expect(await page.evaluate(() => document.activeElement?.tagName)).toBe('TR');
    await page.keyboard.press('Shift+Tab');
    const names = await page
      .locator('#dag .dag-node')
      .evaluateAll((els) =>
        els
          .slice(0, 3)
          .map((e) => [e.getAttribute('tabindex'), e.getAttribute('role'), e.querySelector('title')?.textContent]),
      );
    expect(names[0]).toEqual(['0', 'button', 't0-0 · agent-0 (pending)']);
    expect(await page.locator('thead th:empty').count()).toBe(0);
    expect(await page.locator('svg[role=img]:not([aria-label])').count()).toBe(0);
    await page.context().close();
  });

  it('a session with more plans than a page shows how many and pages through them; the plans list by cursor', async () => {
    const sessionId = 'session-many';
    for (let i = 0; i < 60; i++) {
      publisher.planCreated(
        { planId: `plan-many-${String(i).padStart(2, '0')}`, sessionId },
        { query: `plan ${i}`, steps: [{ stepId: 's', index: 0, agentId: 'a', task: 't' }] },
      );
    }
    await publisher.flush(10_000);
    await waitFor('60 plans', async () => (await planStatus('plan-many-59')) !== undefined);
    await waitFor('60 plans', async () => (await planStatus('plan-many-00')) !== undefined);
    const { page } = await openPage(READ_KEY);
    await page.goto(`${stack.server.url}/#/sessions/${sessionId}`);
    await page.waitForSelector('#history tbody tr');
    expect(await page.locator('#history tbody tr').count()).toBe(50);
    expect(await page.textContent('#history-pager')).toContain('1–50 of 60');
    await page.click('#history-pager a:has-text("older")');
    await page.waitForFunction(() => document.querySelector('#history-pager')?.textContent?.includes('51–60 of 60'));
    expect(await page.locator('#history tbody tr').count()).toBe(10);
    // the plans list pages by cursor: each page starts after the last plan of the page before
    await page.goto(`${stack.server.url}/#/plans?sessionId=${sessionId}`);
    await page.waitForFunction(() => document.querySelector('#plans-pager')?.textContent?.includes('1–20 of 60'));
    const first = await page
      .locator('#plans tbody tr')
      .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-plan')));
    await page.click('#plans-pager a:has-text("older")');
    await page.waitForFunction(() => document.querySelector('#plans-pager')?.textContent?.includes('21–40 of 60'));
    expect(page.url()).toContain('cursor=');
    const second = await page
      .locator('#plans tbody tr')
      .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-plan')));
    expect(first[0]).toBe('plan-many-59');
    expect(second).toEqual(Array.from({ length: 20 }, (_, i) => `plan-many-${String(39 - i).padStart(2, '0')}`));
    await page.click('#plans-pager a:has-text("newest")');
    await page.waitForFunction(() => document.querySelector('#plans-pager')?.textContent?.includes('1–20 of 60'));
    await page.context().close();
  });

  it('analytics: an agent whose steps never ran has no rate (not 0 %); rates are over the steps that ran; a date range filters', async () => {
    const plan = { planId: 'plan-skipped-agent', sessionId: 'session-skipped-agent' };
    publisher.planCreated(plan, {
      query: 'one step skipped',
      steps: [{ stepId: 'k1', index: 0, agentId: 'never-ran-agent', task: 'skip me' }],
    });
    publisher.stepSkipped(plan, { stepId: 'k1', reason: 'not needed' });
    await publisher.flush(10_000);
    await waitFor('the skipped step', async () => (await stepStatus(plan.planId, 'k1')) === 'skipped');
    const { page } = await openPage(READ_KEY);
    await page.goto(`${stack.server.url}/#/analytics`);
    await page.waitForSelector('#agent-success');
    expect(await page.textContent('#agent-success')).not.toContain('never-ran-agent');
    expect(await page.textContent('#agents-not-run')).toContain('never-ran-agent (1 not run)');
    const notes = await page.locator('#agent-success text').allTextContents();
    for (const note of notes.filter((t) => t.includes(' ran'))) {
      const m = /^([\d.]+) %\s+\((\d+)\/(\d+) ran/.exec(note);
      expect(m).not.toBeNull();
      expect(Number(m![1])).toBeCloseTo((100 * Number(m![2])) / Number(m![3]), 1);
    }
    await page.fill('#analytics-range input[name=from]', '2001-01-01');
    await page.fill('#analytics-range input[name=to]', '2001-01-02');
    await page.click('#analytics-range button');
    await page.waitForFunction(() => location.hash.includes('from=2001-01-01'));
    await page.waitForSelector('#agent-success.muted, p#agent-success');
    expect(await page.textContent('#agent-success')).toBe('Nothing yet.');
    await page.context().close();
  });

  it('a 2,000-step, 50-layer plan written through the store: DAG with fit, zoom and go-to-resume-point, a collapsed timeline, a step filter; first paint reported', async () => {
    const plan = { planId: 'plan-2000', sessionId: 'session-2000' };
    const steps = layeredSteps(50, 40);
    const events: PlanEvent[] = [];
    let at = Date.parse('2026-11-01T09:00:00Z');
    const emit = (type: string, payload: Record<string, unknown>) =>
      events.push({
        specVersion: 1,
        eventId: randomUUID(),
        type,
        ...plan,
        seq: events.length + 1,
        occurredAt: new Date((at += 500)).toISOString(),
        payload,
      } as unknown as PlanEvent);
    emit('plan.created', { query: 'a very long workflow', steps });
    for (let layer = 0; layer < 25; layer++) {
      for (const st of steps.filter((x) => x.stepId.startsWith(`t${layer}-`))) {
        emit('step.started', { stepId: st.stepId });
        emit('step.completed', {
          stepId: st.stepId,
          inputTokens: 10,
          outputTokens: 5,
          outputContent: `out ${st.stepId}`,
        });
      }
      emit('checkpoint.saved', { checkpointId: `cp${layer}`, layer, state: { layer } });
    }
    const store = new PlanEventStore(stack.db.ds);
    for (let i = 0; i < events.length; i += 500) await store.persist(events.slice(i, i + 500));
    expect(
      await stack.db.ds
        .getRepository(ENTITY.step)
        .count({ where: { planId: plan.planId, status: 'completed' } as never }),
    ).toBe(1_000);

    const { page } = await openPage(READ_KEY);
    await page.goto(`${stack.server.url}/#/plans/${plan.planId}`);
    await page.waitForSelector('#dag[data-render-ms]');
    report('dag-2000 (50 layers) render ms', Number(await page.getAttribute('#dag', 'data-render-ms')));
    await page.waitForSelector('#dag[data-paint-ms]');
    report('dag-2000 (50 layers) first paint ms', Number(await page.getAttribute('#dag', 'data-paint-ms')));
    await page.waitForSelector('#plan-rest[data-ready]');
    expect(await page.locator('#dag .dag-node').count()).toBe(2_000);
    expect(await page.locator('#dag .dag-layer-label').count()).toBe(50);
    // the page stays a page: the DAG moves inside its viewport, the timeline is a row per agent
    expect(await overflowX(page)).toBe(0);
    const viewportBox = (await page.locator('#dag-viewport').boundingBox())!;
    expect(viewportBox.height).toBeLessThanOrEqual(560);
    expect(await page.inputValue('#timeline-mode')).toBe('agent');
    expect(await page.locator('#timeline .gantt-row-label').count()).toBe(6);
    expect((await page.locator('#timeline').boundingBox())!.height).toBeLessThan(400);

    await page.click('#dag-fit');
    expect(Number(await page.getAttribute('#dag', 'data-scale'))).toBeLessThan(0.2);
    await page.click('#dag-zoom-in');
    expect(Number(await page.getAttribute('#dag', 'data-scale'))).toBeGreaterThan(0.1);
    // the resume point: layer 25's first step comes into the middle of the viewport
    await page.click('#dag-resume');
    const resumePoint = (await (
      await fetch(`${stack.server.url}/v1/workflows/${plan.planId}/resume-point`, { headers: auth(READ_KEY) })
    ).json()) as { nextLayer: number; nextSteps: Array<{ stepId: string }> };
    expect(resumePoint.nextLayer).toBe(25);
    const resumeNode = page.locator(`#dag .dag-node.resume[data-step="${resumePoint.nextSteps[0].stepId}"]`);
    expect(await resumeNode.getAttribute('data-layer')).toBe('25');
    const box = (await resumeNode.boundingBox())!;
    const vp = (await page.locator('#dag-viewport').boundingBox())!;
    expect(box.x).toBeGreaterThanOrEqual(vp.x);
    expect(box.x + box.width).toBeLessThanOrEqual(vp.x + vp.width);
    expect(box.y).toBeGreaterThanOrEqual(vp.y);
    expect(box.y + box.height).toBeLessThanOrEqual(vp.y + vp.height);

    await page.selectOption('#timeline-mode', 'layer');
    expect(await page.locator('#timeline .gantt-row-label').count()).toBe(50);
    await page.fill('#step-filter', 't49-');
    expect(await page.locator('#steps tr[data-step]:visible').count()).toBe(40);
    expect(await page.textContent('#step-filter-count')).toBe('40 of 2000 steps');
    expect(await page.locator('#dag .dag-node:not(.dimmed)').count()).toBe(40);
    await page.fill('#step-filter', '');
    await page.selectOption('#step-status-filter', 'completed');
    expect(await page.textContent('#step-filter-count')).toBe('1000 of 2000 steps');
    await page.selectOption('#step-status-filter', '');
    // an output far down the page is brought into view
    await page.click('button.show-output[data-step="t24-39"]');
    await page.waitForSelector('#output-text');
    expect(await page.textContent('#output-text')).toBe('out t24-39');
    const out = (await page.locator('#step-output').boundingBox())!;
    expect(out.y).toBeLessThan(900);
    expect(out.y + 20).toBeGreaterThan(0);
    // the whole page holds a row per step (2,000 rows): the viewport, with the DAG, is the picture
    await shot(page, 'plan-2000', { fullPage: false });
    await page.context().close();
  }, 120_000);

  it('live: a running plan updates by itself (DAG, steps, cards) without a reload; paused, it does not; health is live too', async () => {
    const plan = { planId: 'plan-live', sessionId: 'session-live' };
    publisher.planCreated(plan, {
      query: 'watch me',
      steps: [
        { stepId: 'l1', index: 0, agentId: 'live-agent', task: 'one' },
        { stepId: 'l2', index: 1, agentId: 'live-agent', task: 'two', dependsOn: ['l1'] },
      ],
    });
    await publisher.flush(10_000);
    await waitFor('the live plan', async () => (await planStatus(plan.planId)) !== undefined);

    const { page } = await openPage(READ_KEY);
    await page.goto(`${stack.server.url}/#/plans/${plan.planId}`);
    await page.waitForSelector('#plan-rest[data-ready]');
    expect(await page.isVisible('#live-toggle')).toBe(true);
    expect(await page.textContent('#live-toggle')).toBe('live');
    await page.fill('#step-filter', 'l1');
    await page.locator('#step-filter').blur();
    const navigations: string[] = [];
    page.on('framenavigated', (f) => navigations.push(f.url()));

    publisher.stepStarted(plan, { stepId: 'l1' });
    publisher.stepCompleted(plan, { stepId: 'l1', inputTokens: 7, outputTokens: 3 });
    await publisher.flush(10_000);
    await waitFor('l1 stored', async () => (await stepStatus(plan.planId, 'l1')) === 'completed');
    await page.waitForSelector('#dag .dag-node[data-step=l1][data-status=completed]', { timeout: 15_000 });
    await page.waitForFunction(
      () => document.querySelector('#steps tr[data-step=l1] .badge')?.textContent === 'completed',
    );
    expect(await page.textContent('#plan-summary .cards')).toMatch(/1completed/);
    // the page was updated in place: no navigation, the filter kept
    expect(navigations).toEqual([]);
    expect(await page.inputValue('#step-filter')).toBe('l1');
    expect(await page.locator('#steps tr[data-step]:visible').count()).toBe(1);

    // paused: a change stays off the page
    await page.fill('#step-filter', '');
    await page.locator('#step-filter').blur();
    await page.click('#live-toggle');
    expect(await page.textContent('#live-toggle')).toBe('paused');
    expect(await page.getAttribute('#live-toggle', 'aria-pressed')).toBe('false');
    publisher.stepStarted(plan, { stepId: 'l2' });
    await publisher.flush(10_000);
    await waitFor('l2 stored', async () => (await stepStatus(plan.planId, 'l2')) === 'in_progress');
    await sleep(5_000); // two polling intervals and more
    expect(await page.getAttribute('#dag .dag-node[data-step=l2]', 'data-status')).toBe('pending');
    await page.click('#live-toggle');
    await page.waitForSelector('#dag .dag-node[data-step=l2][data-status=in_progress]', { timeout: 15_000 });

    // a finished plan has nothing left to watch
    publisher.stepCompleted(plan, { stepId: 'l2', inputTokens: 1, outputTokens: 1 });
    publisher.planFinalized(plan, { status: 'completed' });
    await publisher.flush(10_000);
    await waitFor('the plan completed', async () => (await planStatus(plan.planId)) === 'completed');
    await page.waitForFunction(() => document.querySelector('#plan-status .badge')?.textContent === 'completed', null, {
      timeout: 15_000,
    });
    expect(await page.isVisible('#live-toggle')).toBe(false);

    await page.goto(`${stack.server.url}/#/health`);
    await page.waitForSelector('#events-per-minute');
    expect(await page.isVisible('#live-toggle')).toBe(true);
    await page.context().close();
  }, 90_000);

  it('dead letters: newest first with paging and a total; ticked ones replayed and all matching purged with an admin key, after a confirmation naming the count', async () => {
    const planId = 'plan-dlq-many';
    const letters = await writeDeadLetters(
      Array.from({ length: 60 }, (_, i) => ({ type: 'step.started', planId, seq: i + 1, note: `letter ${i}` })),
    );
    const newest = letters[letters.length - 1];
    const { page: reader } = await openPage(READ_KEY);
    await reader.goto(`${stack.server.url}/#/dead-letters?plan=${planId}`);
    await reader.waitForSelector('#dead-letters tbody tr');
    expect(await reader.locator('#dead-letters tbody tr').count()).toBe(50);
    expect(await reader.getAttribute('#dead-letters tbody tr >> nth=0', 'data-id')).toBe(newest.id);
    expect(await reader.textContent('#dlq-pager')).toContain('newest first: 1–50 of 60');
    expect(await reader.locator('#replay-all, #purge-all, #replay-selected, input.tick').count()).toBe(0);
    await reader.click('#dlq-pager a:has-text("next")');
    await reader.waitForFunction(() => document.querySelector('#dlq-pager')?.textContent?.includes('51–60 of 60'));
    expect(await reader.getAttribute('#dead-letters tbody tr >> nth=-1', 'data-id')).toBe(letters[0].id);
    await reader.click('#dlq-pager a:has-text("oldest first")');
    await reader.waitForFunction(() =>
      document.querySelector('#dlq-pager')?.textContent?.includes('oldest first: 1–50'),
    );
    expect(await reader.getAttribute('#dead-letters tbody tr >> nth=0', 'data-id')).toBe(letters[0].id);
    await reader.context().close();

    const { page, dialogs } = await openPage(ADMIN_KEY);
    await page.goto(`${stack.server.url}/#/dead-letters?plan=${planId}`);
    await page.waitForSelector('#dead-letters tbody tr');
    const picked = [letters[59].id, letters[58].id];
    for (const id of picked) await page.check(`input.tick[value="${id}"]`);
    await page.click('#replay-selected');
    await page.waitForSelector('#bulk-result .notice');
    expect(await page.textContent('#bulk-result')).toContain('Replayed: 2 event(s) queued.');
    expect(dialogs[0]).toBe('Put 2 dead letter(s) back on the queue? The worker stores each event at most once.');
    const redis = openRedis();
    try {
      for (const id of picked) expect(await redis.exists(`${stack.prefix}:plan-events-dead:${id}`)).toBe(0);
      expect(await redis.exists(`${stack.prefix}:plan-events-dead:${letters[57].id}`)).toBe(1);
      await page.click('#purge-all');
      await page.waitForFunction(() => document.querySelector('#bulk-result')?.textContent?.startsWith('Purged'));
      expect(dialogs[1]).toMatch(/^Remove \d+ dead letter\(s\) for good\? Their events are not stored\.$/);
      for (const dl of letters.slice(0, 58))
        expect(await redis.exists(`${stack.prefix}:plan-events-dead:${dl.id}`)).toBe(0);
    } finally {
      redis.disconnect();
    }
    await page.context().close();
  }, 90_000);

  it('forks: the lineage panel lists the tree with links, a fork shows its parent and its inherited steps muted, two plans compare side by side with the differing steps marked and hostile output escaped', async () => {
    const store = new PlanEventStore(stack.db.ds);
    let at = Date.parse('2026-10-01T09:00:00Z');
    const seqs = new Map<string, number>();
    const stored = async (planId: string, list: Array<[string, Record<string, unknown>]>) => {
      const events = list.map(([type, payload]) => {
        const seq = seqs.get(planId) ?? 0;
        seqs.set(planId, seq + 1);
        return {
          specVersion: 1,
          eventId: randomUUID(),
          type,
          planId,
          sessionId: 'session-lineage',
          seq,
          occurredAt: new Date((at += 1000)).toISOString(),
          payload,
        } as unknown as PlanEvent;
      });
      await store.persist(events);
    };
    const ran = (stepId: string, tokens: number, output: string): Array<[string, Record<string, unknown>]> => [
      ['step.started', { stepId }],
      ['step.completed', { stepId, inputTokens: tokens, outputTokens: 1, outputContent: output }],
    ];
    // a, b (layer 0) -> c, d (layer 1)
    const parent = 'lineage-parent';
    await stored(parent, [
      [
        'plan.created',
        {
          query: 'a plan with forks',
          steps: [
            { stepId: 'a', index: 0, agentId: 'agent-a', task: 'task a' },
            { stepId: 'b', index: 1, agentId: 'agent-b', task: 'task b' },
            { stepId: 'c', index: 2, agentId: 'agent-c', task: 'task c', dependsOn: ['a'] },
            { stepId: 'd', index: 3, agentId: 'agent-d', task: 'task d', dependsOn: ['b'] },
          ],
        },
      ],
      ...ran('a', 10, 'out a'),
      ...ran('b', 20, 'out b'),
      ['checkpoint.saved', { checkpointId: 'cp0', layer: 0, state: {} }],
      ...ran('c', 30, 'out c'),
      ...ran('d', 40, 'out d'),
      ['plan.finalized', { status: 'completed' }],
    ]);
    const now = () => new Date((at += 1000));
    const fork = (planId: string, kind: 'fork' | 'replay', editSteps?: StepSpec[]) =>
      forkPlan(stack.db.ds, {
        parentPlanId: parent,
        kind,
        planId,
        ...(kind === 'fork' ? { from: { layer: 1 } } : {}),
        editSteps,
        now: now(),
      });
    const hostileOutput = '<img src=x onerror="window.__pwned = 9">\u202Egnp.exe <script>alert(9)</script>';
    const hostileTask = '<b onmouseover=alert(8)>fix d</b> \u2066isolated\u2069';
    await fork('lineage-fork-a', 'fork');
    seqs.set('lineage-fork-a', 1); // the fork's plan.created was seq 0
    await stored('lineage-fork-a', [
      ...ran('c', 30, 'out c'),
      ...ran('d', 41, 'out d, again'),
      ['plan.finalized', { status: 'completed' }],
    ]);
    await fork('lineage-fork-b', 'fork', [
      { stepId: 'd', index: 3, agentId: 'agent-d', task: hostileTask, dependsOn: ['b'] },
    ]);
    seqs.set('lineage-fork-b', 1);
    await stored('lineage-fork-b', [...ran('c', 30, 'out c'), ...ran('d', 41, hostileOutput)]);
    await fork('lineage-replay-old', 'replay');
    await stack.db.ds.getRepository(ENTITY.plan).softDelete({ id: 'lineage-replay-old' });

    const { page, dialogs } = await openPage(READ_KEY);
    // the parent: the tree, each plan a link, the plan shown marked, the retired replay marked
    await page.goto(`${stack.server.url}/#/plans/${parent}`);
    await page.waitForSelector('#plan-rest[data-ready]');
    const tree = await page.locator('#lineage li[data-plan]').evaluateAll((els) =>
      els.map((li) => ({
        plan: li.getAttribute('data-plan'),
        href: li.querySelector(':scope > .lineage-node > a')?.getAttribute('href'),
        kind: li.querySelector(':scope > .lineage-node > .lineage-kind')?.textContent,
        current: li.querySelector(':scope > .lineage-node > a')?.getAttribute('aria-current') ?? null,
        retired: !!li.querySelector(':scope > .lineage-node > .lineage-retired'),
        compare: li.querySelector(':scope > .lineage-node > .lineage-compare')?.getAttribute('href') ?? null,
      })),
    );
    expect(tree).toEqual([
      { plan: parent, href: `#/plans/${parent}`, kind: 'original', current: 'page', retired: false, compare: null },
      ...['lineage-fork-a', 'lineage-fork-b'].map((plan) => ({
        plan,
        href: `#/plans/${plan}`,
        kind: 'fork from layer 1',
        current: null,
        retired: false,
        compare: `#/plans/${parent}/compare/${plan}`,
      })),
      {
        plan: 'lineage-replay-old',
        href: '#/plans/lineage-replay-old',
        kind: 'replay',
        current: null,
        retired: true,
        compare: null,
      },
    ]);
    expect(await page.textContent('#lineage li[data-plan="lineage-fork-a"] > .lineage-node')).toContain(
      'completed2/2 steps',
    );
    expect(await page.locator('#plan-fork').count()).toBe(0);
    expect(await page.locator('#steps tr.inherited, #dag .dag-node.inherited').count()).toBe(0);

    // a fork: its parent in the header, its inherited steps muted and named, its own not
    await page.click('#lineage li[data-plan="lineage-fork-a"] > .lineage-node > a');
    // the parent's page is ready too until the fork's replaces it: wait for the fork's heading first
    await page.waitForFunction(() => document.querySelector('h1')?.textContent === 'Plan lineage-fork-a');
    await page.waitForSelector('#plan-rest[data-ready]');
    expect(await page.textContent('h1')).toBe('Plan lineage-fork-a');
    expect(await page.textContent('#plan-fork')).toBe(
      'fork of lineage-parent from layer 1 · 2 of 4 steps inherited, 2 its own',
    );
    expect(await page.getAttribute('#plan-fork a', 'href')).toBe(`#/plans/${parent}`);
    const drawn = async (sel: string) =>
      page
        .locator(sel)
        .evaluateAll((els) => els.map((e) => [e.getAttribute('data-step'), e.getAttribute('data-inherited-from')]));
    expect(await drawn('#steps tr.inherited')).toEqual([
      ['a', parent],
      ['b', parent],
    ]);
    expect(await drawn('#dag .dag-node.inherited')).toEqual(
      expect.arrayContaining([
        ['a', parent],
        ['b', parent],
      ]),
    );
    expect(await page.locator('#dag .dag-node.inherited').count()).toBe(2);
    expect(await page.textContent('#steps tr[data-step=a] .inherited-note')).toBe(`inherited from ${parent}`);
    expect(await page.locator('#steps tr[data-step=c].inherited, #steps tr[data-step=c] .inherited-note').count()).toBe(
      0,
    );
    expect(await page.textContent('#dag .dag-node[data-step=a] title')).toContain(`inherited from ${parent}`);
    // the timeline is what the fork ran itself
    expect(await page.locator('#timeline .gantt-bar').count()).toBe(2);
    await page.selectOption('#step-origin-filter', 'own');
    expect(await page.textContent('#step-filter-count')).toBe('2 of 4 steps');
    expect(await page.locator('#dag .dag-node.inherited.dimmed').count()).toBe(2);
    await page.selectOption('#step-origin-filter', '');
    // an inherited step's output is its ancestor's
    await page.click('button.show-output[data-step=a]');
    await page.waitForSelector('#output-text');
    expect(await page.textContent('#output-text')).toBe('out a');
    expect(await page.locator('#lineage li.current').getAttribute('data-plan')).toBe('lineage-fork-a');
    expect(await page.textContent('#lineage li[data-plan="lineage-fork-b"] .lineage-relation')).toBe('sibling');
    expect(await page.textContent(`#lineage li[data-plan="${parent}"] .lineage-relation`)).toBe('parent');
    await shot(page, 'fork-plan');

    // compare with the sibling, from the keyboard
    await page.focus('#lineage li[data-plan="lineage-fork-b"] .lineage-compare');
    await page.keyboard.press('Enter');
    await page.waitForSelector('#compare');
    await waitFor('both outputs of d', async () =>
      page.evaluate(
        () => document.querySelector('#compare tr[data-step=d]')?.getAttribute('data-differs') !== 'pending',
      ),
    );
    expect(await page.title()).toBe('Compare lineage-fork-a with lineage-fork-b · plan-ledger console');
    const marks = await page
      .locator('#compare tbody tr')
      .evaluateAll((els) => els.map((e) => [e.getAttribute('data-step'), e.getAttribute('data-differs')]));
    expect(marks).toEqual([
      ['a', 'false'],
      ['b', 'false'],
      ['c', 'false'],
      ['d', 'true'],
    ]);
    expect(await page.textContent('#compare tr[data-step=a] .compare-mark')).toBe('= the same stored run');
    expect(await page.textContent('#compare tr[data-step=c] .compare-mark')).toBe('= the same');
    expect(await page.textContent('#compare tr[data-step=d] .diff-mark')).toBe('≠ differs: task, output');
    const outputs = await page
      .locator('#compare tr[data-step=d] pre.compare-output')
      .evaluateAll((els) => els.map((e) => e.textContent));
    expect(outputs).toEqual(['out d, again', hostileOutput.replace('\u202E', '\\u202e')]);
    expect(await page.textContent('#compare tr[data-step=d] td:nth-child(3) .compare-task')).toBe(
      'agent-d: <b onmouseover=alert(8)>fix d</b> \\u2066isolated\\u2069',
    );
    expect(await page.textContent('#compare-summary')).toBe('4 steps in either plan · 1 differ · 3 the same');
    await page.focus('#compare-only-diff');
    await page.keyboard.press('Space');
    expect(await page.locator('#compare tbody tr:visible').count()).toBe(1);
    await sleep(300); // an image error handler would have fired by now
    expect(await page.evaluate(() => (globalThis as unknown as { __pwned: number }).__pwned)).toBe(0);
    expect(dialogs).toEqual([]);
    expect(await page.locator('main img, main script, main b').count()).toBe(0);
    expect(await page.evaluate(() => /[\u202a-\u202e\u2066-\u2069]/.test(document.body.innerText))).toBe(false);
    await shot(page, 'compare-siblings');

    // the parent, picked from the tree: only d's output differs
    await page.selectOption('#compare-with', parent);
    await page.click('#compare-pick button');
    await page.waitForFunction(
      () => document.querySelector('h1')?.textContent === 'Compare lineage-fork-a with lineage-parent',
    );
    await waitFor('the outputs', async () =>
      page.evaluate(() => !document.querySelector('#compare tr[data-differs=pending]')),
    );
    expect(
      await page
        .locator('#compare tbody tr')
        .evaluateAll((els) => els.map((e) => [e.getAttribute('data-step'), e.getAttribute('data-differs')])),
    ).toEqual([
      ['a', 'false'],
      ['b', 'false'],
      ['c', 'false'],
      ['d', 'true'],
    ]);
    expect(await page.textContent('#compare tr[data-step=d] .diff-mark')).toBe('≠ differs: tokens, output');
    await page.context().close();

    // a phone's width: neither page is wider than the screen
    const context = await browser.newContext({ viewport: { width: 390, height: 844 } });
    const phone = await context.newPage();
    await phone.goto(stack.server.url + '/');
    await phone.fill('#api-key', READ_KEY);
    await phone.click('#signin button[type=submit]');
    await phone.waitForSelector('#nav a');
    for (const [name, hash, ready] of [
      ['fork-plan', '#/plans/lineage-fork-b', '#plan-rest[data-ready]'],
      ['compare', `#/plans/lineage-fork-b/compare/${parent}`, '#compare tr[data-step=d][data-differs=true]'],
    ]) {
      await phone.goto(`${stack.server.url}/${hash}`);
      await phone.waitForSelector(ready);
      expect([name, await overflowX(phone)]).toEqual([name, 0]);
      await shot(phone, `${name}-390x844`);
    }
    await context.close();
  });

  it('axe-core (offline, from npm) finds no serious or critical accessibility violation on any page, signed out or in', async () => {
    const [dl] = await writeDeadLetters([{ type: 'step.started', planId: 'demo-plan-console' }]);
    // axe is injected as a script of the test's own, so this context lets it past the page's CSP
    const context = await browser.newContext({ viewport: { width: 1440, height: 900 }, bypassCSP: true });
    const page = await context.newPage();
    const audit = async (name: string) => {
      await page.addScriptTag({ path: require.resolve('axe-core/axe.min.js') });
      const violations = await page.evaluate(async () => {
        const axe = (globalThis as unknown as { axe: { run: (ctx: Document) => Promise<AxeResults> } }).axe;
        const result = await axe.run(document);
        return result.violations
          .filter((v) => v.impact === 'serious' || v.impact === 'critical')
          .map((v) => `${v.id} (${v.impact}): ${v.nodes.length} node(s), e.g. ${v.nodes[0]?.target.join(' ')}`);
      });
      expect([name, violations]).toEqual([name, []]);
    };
    await page.goto(stack.server.url + '/');
    await page.waitForSelector('#signin');
    await audit('sign-in');
    await page.fill('#api-key', ADMIN_KEY);
    await page.click('#signin button[type=submit]');
    await page.waitForSelector('#plans tbody tr');
    await audit('plans');
    for (const [name, hash, ready] of [
      ['plan', '#/plans/demo-plan-console', '#plan-rest[data-ready]'],
      ['fork', '#/plans/lineage-fork-a', '#plan-rest[data-ready]'],
      ['compare', '#/plans/lineage-fork-a/compare/lineage-fork-b', '#compare tr[data-step=d][data-differs=true]'],
      ['session', '#/sessions/demo-session-console', '#history'],
      ['dead-letters', '#/dead-letters', '#dead-letters'],
      ['dead-letter', `#/dead-letters/${dl.id}`, '#event'],
      ['health', '#/health', '#events-per-minute'],
      ['analytics', '#/analytics', '#plans-per-day'],
      ['reconcile', '#/reconcile', '#reconcile-form'],
    ]) {
      await page.goto(`${stack.server.url}/${hash}`);
      await page.waitForSelector(ready);
      await audit(name);
    }
    await context.close();
  });
});

async function writeDeadLetters(
  events: unknown[],
  error: { message: string; violations?: Array<{ path: string; message: string }> } = {
    message: 'occurredAt: must be an ISO-8601 instant',
  },
) {
  const redis = openRedis();
  const writer = new DeadLetterWriter(redis, stack.prefix);
  try {
    const letters = events.map((event, index) =>
      buildDeadLetter('invalid', event, error, {
        queue: EVENTS_QUEUE,
        prefix: stack.prefix,
        jobId: `job-${Date.now()}-${index}`,
        index,
        attempts: 1,
        firstFailedAt: new Date(),
        lastFailedAt: new Date(),
        workerVersion: 'test',
        replayCount: 0,
      }),
    );
    await writer.write(letters);
    return letters;
  } finally {
    await writer.close();
    redis.disconnect();
  }
}
