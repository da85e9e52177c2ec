/**
 * The web console in a real headless Chromium (Debian's, driven by playwright-core), against a
 * real `plan-ledger serve` and worker on a throwaway SQLite database and queue prefix. What a
 * user checks: the demo plan's DAG, timeline and decisions; a 120-task DAG; hostile event text
 * shown, never run; sign-in and scopes enforced by the server; a replay from the console stored
 * exactly once. Screenshots go to test-artifacts/console/ (git-ignored).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { chromium, Browser, Page } from 'playwright-core';
import { buildDeadLetter, DeadLetterWriter } from '../../src/dead-letters/dead-letter-writer';
import { demoScenario } from '../../src/demo/demo-scenario';
import { PlanEventPublisher } from '../../src/publisher';
import { EVENTS_QUEUE } from '../../src/queue/queue-names';
import { ENTITY } from '../../src/store/entities';
import { displayMoney, moneyFromColumn } from '../../src/pricing';
import type { StepSpec } from '../../src/contracts';
import { ApiStack, READ_KEY, startApiStack } from '../http/http-harness';
import { openRedis, REDIS_URL, silentLogger } from '../worker/helpers/queue-harness';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ADMIN_KEY = 'admin-key-for-console-tests-0123';
const ARTIFACTS = path.join(__dirname, '..', '..', 'test-artifacts', 'console');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let stack: ApiStack;
let browser: Browser;
let publisher: PlanEventPublisher;
let journalDir: string;

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

async function storedCount(eventId: string): Promise<number> {
  return stack.db.ds.getRepository(ENTITY.event).count({ where: { eventId } });
}

/** A new page signed in with `key` (or not signed in), counting dialogs and marked by a page-level hook. */
async function openPage(key: string | null): Promise<{ page: Page; dialogs: string[] }> {
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  const page = await context.newPage();
  const dialogs: string[] = [];
  page.on('dialog', (d) => {
    dialogs.push(d.message());
    void d.accept();
  });
  // set before any script of the page runs: markup that executed would change it
  await page.addInitScript(() => Object.defineProperty(globalThis, '__pwned', { value: 0, writable: true }));
  await page.goto(stack.server.url + '/');
  await page.waitForSelector('#signin');
  if (key !== null) {
    await page.fill('#api-key', key);
    await page.click('#signin button[type=submit]');
    await page.waitForSelector('#nav a');
  }
  return { page, dialogs };
}

async function shot(page: Page, name: string): Promise<void> {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true });
}

function layeredSteps(layers: number, perLayer: number): StepSpec[] {
  const steps: StepSpec[] = [];
  for (let l = 0; l < layers; l++) {
    for (let i = 0; i < perLayer; i++) {
      const deps = l === 0 ? [] : [`t${l - 1}-${i}`, `t${l - 1}-${(i + 1) % perLayer}`];
      steps.push({
        stepId: `t${l}-${i}`,
        index: steps.length,
        agentId: `agent-${i % 6}`,
        task: `task ${l}.${i}`,
        ...(deps.length ? { dependsOn: deps } : {}),
      });
    }
  }
  return steps;
}

beforeAll(async () => {
  if (!fs.existsSync(CHROMIUM))
    throw new Error(`no Chromium at ${CHROMIUM}: apt-get install chromium (bash .ci/run does), or set CHROMIUM_PATH`);
  stack = await startApiStack('sqlite', { env: { HTTP_ADMIN_KEYS: ADMIN_KEY } });
  journalDir = fs.mkdtempSync(path.join(os.tmpdir(), 'plan-ledger-console-'));
  publisher = new PlanEventPublisher({
    redisUrl: REDIS_URL,
    queuePrefix: stack.prefix,
    logger: silentLogger(),
    journalDir,
  });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await publisher?.close(5_000);
  await stack?.close();
  if (journalDir) fs.rmSync(journalDir, { recursive: true, force: true });
});

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
    await page.waitForSelector('#dag .dag-node');
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
    expect(await page.locator('#checkpoints tbody tr').count()).toBe(3);
    expect(await page.getAttribute('#dag .dag-checkpoint', 'data-checkpoint-layer')).toBe('2');
    // what the plan and each step cost, fixed when stored: the console shows the stored figures
    const [plan] = await stack.db.ds.query(`SELECT total_cost FROM execution_plans WHERE id = '${ids.planId}'`);
    const planCost = displayMoney(moneyFromColumn(plan.total_cost)!);
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

  it('renders a 120-task, 8-layer DAG in at most 2 s', async () => {
    const plan = { planId: 'plan-dag-120', sessionId: 'session-dag' };
    publisher.planCreated(plan, { query: 'a wide workflow', steps: layeredSteps(8, 15) });
    await publisher.flush(10_000);
    await waitFor('the 120-task plan', async () => (await planStatus(plan.planId)) !== undefined);

    const { page } = await openPage(READ_KEY);
    await page.goto(`${stack.server.url}/#/plans/${plan.planId}`);
    await page.waitForSelector('#dag[data-render-ms]');
    expect(await page.locator('#dag .dag-node').count()).toBe(120);
    expect(await page.locator('#dag .dag-layer-label').count()).toBe(8);
    // measured in the page: from the route's first request to the DAG in the DOM
    const ms = Number(await page.getAttribute('#dag', 'data-render-ms'));
    expect(ms).toBeLessThanOrEqual(2_000);
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
            .getRepository<{ outputContent: string | null }>(ENTITY.step)
            .findOne({ where: { planId: plan.planId } as never })
        )?.outputContent,
    );

    const { page, dialogs } = await openPage(READ_KEY);
    await page.goto(`${stack.server.url}/#/plans/${plan.planId}`);
    await page.waitForSelector('#dag .dag-node');
    await page.click('button.show-output[data-step=s1]');
    await page.waitForSelector('#output-text');
    await page.goto(`${stack.server.url}/#/plans`);
    await page.waitForSelector('#plans tbody tr');
    await page.goto(`${stack.server.url}/#/plans/${plan.planId}`);
    await page.waitForSelector('#dag .dag-node');
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
    // a second click finds no dead letter to replay
    await page.click('#replay');
    await page.waitForSelector('#action-result .error');
    expect(await page.textContent('#action-result')).toContain(`dead letter ${dl.id} not found`);
    await sleep(500);
    expect(await storedCount(event.eventId)).toBe(1);
    expect(await planStatus(plan.planId)).toBe('executing');
    await page.context().close();
  });
});

async function writeDeadLetters(events: unknown[]) {
  const redis = openRedis();
  const writer = new DeadLetterWriter(redis, stack.prefix);
  try {
    const letters = events.map((event, index) =>
      buildDeadLetter(
        'invalid',
        event,
        { message: 'occurredAt: must be an ISO-8601 instant' },
        {
          queue: EVENTS_QUEUE,
          prefix: stack.prefix,
          jobId: `job-${Date.now()}-${index}`,
          index,
          attempts: 1,
          firstFailedAt: new Date(),
          lastFailedAt: new Date(),
          workerVersion: 'test',
          replayCount: 0,
        },
      ),
    );
    await writer.write(letters);
    return letters;
  } finally {
    await writer.close();
    redis.disconnect();
  }
}
