/// <reference lib="dom" />
/**
 * A stalled plan in the web console, in a real headless Chromium: a plan whose executor went
 * silent is marked stalled by a real worker's stall check (the tick), and its page shows the
 * `stalled` badge, since when, and its resume point (next layer and steps, checkpoint, next seq);
 * the plans list's `stalled` filter lists it. Then a late event: the badge goes.
 */
import { randomUUID } from 'node:crypto';
import type IORedis from 'ioredis';
import type { PlanEvent } from '../../src/contracts';
import { ENTITY, type PlanHeadRow } from '../../src/store/entities';
import { READ_KEY } from '../http/http-harness';
import { layeredSteps } from '../support/event-factory';
import { ev } from '../stalled/support/stall-events';
import { openRedis, publish, waitFor } from '../worker/helpers/queue-harness';
import { type ConsoleBrowser, shot, startConsoleBrowser } from './support/console-browser';

jest.setTimeout(120_000);

let ui: ConsoleBrowser;
let redis: IORedis;

beforeAll(async () => {
  ui = await startConsoleBrowser({
    workerSettings: { healthPort: null, stallAfterMs: 1_500, stallCheckMs: 300 },
    stallCheck: true,
  });
  redis = openRedis();
}, 60_000);

afterAll(async () => {
  await redis?.quit();
  await ui?.close();
});

it('shows a stalled plan: its badge, since when, its resume point; a late event clears it', async () => {
  const planId = `stalled-console-${randomUUID()}`;
  const steps = layeredSteps(3, 2);
  const events: PlanEvent[] = [];
  const emit = (type: string, payload: object) => events.push(ev(planId, events.length, type, payload));
  emit('plan.created', { query: 'a plan whose executor dies', steps });
  for (const stepId of ['t0-0', 't0-1']) {
    emit('step.started', { stepId });
    emit('step.completed', { stepId, inputTokens: 1, outputTokens: 1, outputContent: `out ${stepId}` });
  }
  emit('checkpoint.saved', { checkpointId: 'cp-layer0', layer: 0, state: { layer: 0 } });
  await publish(redis, ui.stack.prefix, [{ v: 1, events }]);

  // no event for longer than STALL_AFTER: the worker's tick marks it
  const head = () =>
    ui.stack.db.ds.getRepository<PlanHeadRow>(ENTITY.head).findOneBy({ planId }) as Promise<PlanHeadRow | null>;
  await waitFor('the plan to be marked stalled', async () => Boolean((await head())?.stalledAt), 60_000, 50);
  const since = new Date((await head())!.stalledAt!)
    .toISOString()
    .replace('T', ' ')
    .replace(/\.\d+Z$/, 'Z');

  const { page } = await ui.openPage(READ_KEY);
  await page.goto(`${ui.stack.server.url}/#/plans/${planId}`);
  const stalled = page.locator('#plan-stalled');
  await stalled.waitFor();
  expect(await stalled.locator('.badge').textContent()).toBe('stalled');
  expect(await stalled.textContent()).toBe(
    `stalled since ${since} · resume at layer 1 (t1-0, t1-1) from checkpoint cp-layer0, next seq ${events.length}`,
  );
  await shot(page, 'stalled-plan');

  // the plans list's stalled filter lists it
  await page.goto(`${ui.stack.server.url}/#/plans?status=stalled`);
  await page.locator(`tr[data-plan="${planId}"]`).waitFor();
  expect(await page.inputValue('#plan-filters select[name=status]')).toBe('stalled');

  // a late event (a step that may run 10 minutes): running again, the page follows it and the badge goes
  await page.goto(`${ui.stack.server.url}/#/plans/${planId}`);
  await stalled.waitFor();
  await publish(redis, ui.stack.prefix, [
    { v: 1, events: [ev(planId, events.length, 'step.started', { stepId: 't1-0', deadlineMs: 600_000 })] },
  ]);
  await waitFor('the late event to clear the stall', async () => (await head())?.stalledAt === null, 30_000, 50);
  await stalled.waitFor({ state: 'detached', timeout: 30_000 });
});
