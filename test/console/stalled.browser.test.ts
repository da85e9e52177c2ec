/// <reference lib="dom" />
/**
 * A stalled plan in the web console, in a real headless Chromium: a plan whose executor went
 * silent is marked stalled by a real worker's stall check (the tick), and its page shows the
 * `stalled` badge, since when, and its resume point (next layer and steps, checkpoint, next seq);
 * the plans list's `stalled` filter lists it. Then a late event: the badge goes.
 */
import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import type IORedis from 'ioredis';
import { loadConfig } from '../../src/config/config';
import type { PlanEvent } from '../../src/contracts';
import { ENTITY, type PlanHeadRow } from '../../src/store/entities';
import { startWorker, type WorkerHandle } from '../../src/worker';
import { type ApiStack, READ_KEY, startApiStack } from '../http/http-harness';
import { layeredSteps } from '../support/event-factory';
import { openRedis, publish, REDIS_URL, silentLogger, waitFor } from '../worker/helpers/queue-harness';

jest.setTimeout(120_000);

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ARTIFACTS = path.join(__dirname, '..', '..', 'test-artifacts', 'console');

let stack: ApiStack;
let worker: WorkerHandle;
let browser: Browser;
let redis: IORedis;

beforeAll(async () => {
  if (!fs.existsSync(CHROMIUM))
    throw new Error(`no Chromium at ${CHROMIUM}: apt-get install chromium (bash .ci/run does), or set CHROMIUM_PATH`);
  stack = await startApiStack('sqlite', { worker: false });
  worker = await startWorker({
    config: loadConfig({ REDIS_URL, QUEUE_PREFIX: stack.prefix, DATABASE_URL: stack.db.db.url }),
    dataSource: stack.db.ds,
    logger: silentLogger(),
    settings: { healthPort: null, stallAfterMs: 1_500, stallCheckMs: 300 },
    stallCheck: true,
  });
  redis = openRedis();
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu'] });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await worker?.close();
  await redis?.quit();
  await stack?.close();
});

async function signedIn(key: string): Promise<Page> {
  const page = await (await browser.newContext({ viewport: { width: 1400, height: 900 } })).newPage();
  await page.goto(stack.server.url + '/');
  await page.fill('#api-key', key);
  await page.click('#signin button[type=submit]');
  await page.waitForSelector('#nav a');
  return page;
}

it('shows a stalled plan: its badge, since when, its resume point; a late event clears it', async () => {
  const planId = `stalled-console-${randomUUID()}`;
  const sessionId = `s_${planId}`;
  const steps = layeredSteps(3, 2);
  const events: PlanEvent[] = [];
  const emit = (type: string, payload: Record<string, unknown>) =>
    events.push({
      specVersion: 1,
      eventId: randomUUID(),
      type,
      planId,
      sessionId,
      seq: events.length,
      occurredAt: new Date().toISOString(),
      payload,
    } as unknown as PlanEvent);
  emit('plan.created', { query: 'a plan whose executor dies', steps });
  for (const stepId of ['t0-0', 't0-1']) {
    emit('step.started', { stepId });
    emit('step.completed', { stepId, inputTokens: 1, outputTokens: 1, outputContent: `out ${stepId}` });
  }
  emit('checkpoint.saved', { checkpointId: 'cp-layer0', layer: 0, state: { layer: 0 } });
  await publish(redis, stack.prefix, [{ v: 1, events }]);

  // no event for longer than STALL_AFTER: the worker's tick marks it
  const head = () =>
    stack.db.ds.getRepository<PlanHeadRow>(ENTITY.head).findOneBy({ planId }) as Promise<PlanHeadRow | null>;
  await waitFor('the plan to be marked stalled', async () => Boolean((await head())?.stalledAt), 60_000, 50);
  const since = new Date((await head())!.stalledAt!)
    .toISOString()
    .replace('T', ' ')
    .replace(/\.\d+Z$/, 'Z');

  const page = await signedIn(READ_KEY);
  await page.goto(`${stack.server.url}/#/plans/${planId}`);
  const stalled = page.locator('#plan-stalled');
  await stalled.waitFor();
  expect(await stalled.locator('.badge').textContent()).toBe('stalled');
  expect(await stalled.textContent()).toBe(
    `stalled since ${since} · resume at layer 1 (t1-0, t1-1) from checkpoint cp-layer0, next seq ${events.length}`,
  );
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: path.join(ARTIFACTS, 'stalled-plan.png'), fullPage: true });

  // the plans list's stalled filter lists it
  await page.goto(`${stack.server.url}/#/plans?status=stalled`);
  await page.locator(`tr[data-plan="${planId}"]`).waitFor();
  expect(await page.inputValue('#plan-filters select[name=status]')).toBe('stalled');

  // a late event (a step that may run 10 minutes): running again, the page follows it and the badge goes
  await page.goto(`${stack.server.url}/#/plans/${planId}`);
  await stalled.waitFor();
  await publish(redis, stack.prefix, [
    {
      v: 1,
      events: [
        {
          specVersion: 1,
          eventId: randomUUID(),
          type: 'step.started',
          planId,
          sessionId,
          seq: events.length,
          occurredAt: new Date().toISOString(),
          payload: { stepId: 't1-0', deadlineMs: 600_000 },
        } as unknown as PlanEvent,
      ],
    },
  ]);
  await waitFor('the late event to clear the stall', async () => (await head())?.stalledAt === null, 30_000, 50);
  await stalled.waitFor({ state: 'detached', timeout: 30_000 });
});
