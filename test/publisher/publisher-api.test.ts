/**
 * The publisher as an executor uses it: typed helpers and stamps, rejection of malformed events,
 * the job shape workers receive, and options errors. Real Redis (a redis-server of our own).
 */
import IORedis from 'ioredis';
import pino from 'pino';
import * as root from '../../src';
import { parsePlanEvent, PlanEvent } from '../../src/contracts';
import { PlanEventPublisher, PublisherConfigError } from '../../src/publisher';
import { EVENT_BATCH_JOB, EVENTS_QUEUE } from '../../src/queue/queue-names';
import { exactlyEvents, invalidEvent, planRun } from '../support/event-factory';
import {
  countByEventId,
  newPublisher,
  notExactlyOnce,
  queuedEvents,
  removeTempJournalDirs,
} from './support/publisher-harness';
import { RedisProcess } from './support/redis-process';
import { Queue } from 'bullmq';

/** The version 7 UUIDs the publisher stamps (src/publisher/event-id.ts). */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('PlanEventPublisher API', () => {
  let redis: RedisProcess;
  beforeAll(async () => {
    redis = await RedisProcess.create();
    await redis.start();
  });
  afterAll(async () => {
    await redis.destroy();
    removeTempJournalDirs();
  });

  it('is exported from the package root', () => {
    expect(root.PlanEventPublisher).toBe(PlanEventPublisher);
    expect(typeof root.parsePlanEvent).toBe('function');
  });

  it('a malformed event is rejected with its violations; the events around it are delivered', async () => {
    const rejected: unknown[] = [];
    const { publisher, prefix } = newPublisher(redis.url, {
      onRejected: (violations, input) => rejected.push({ violations, input }),
    });
    const [before, after] = planRun({ seed: 5 });
    const malformed = invalidEvent(5);
    try {
      expect(publisher.publish(before)).toMatchObject({ ok: true });
      const result = publisher.publish(malformed as never);
      expect(result).toEqual({
        ok: false,
        reason: 'invalid',
        violations: [
          { path: 'planId', message: 'planId is required' },
          { path: 'payload.inputTokens', message: 'payload.inputTokens must be at least 0' },
        ],
      });
      expect(rejected).toEqual([{ violations: (result as { violations: unknown }).violations, input: malformed }]);
      expect(publisher.publish(after)).toMatchObject({ ok: true });
      await expect(publisher.flush(10_000)).resolves.toBe(true);
      expect(publisher.stats()).toMatchObject({ published: 2, rejected: 1, dropped: 0 });
    } finally {
      await publisher.close(5_000);
    }
    const { events } = await queuedEvents(redis.url, prefix);
    expect(events.map((e) => e.eventId)).toEqual([before.eventId, after.eventId]);
  });

  it('typed helpers stamp eventId, the per-plan seq and occurredAt; the worker accepts what they send', async () => {
    const { publisher, prefix } = newPublisher(redis.url);
    const plan = { planId: 'plan_helpers', sessionId: 'session_1' };
    const other = { planId: 'plan_other', sessionId: 'session_1' };
    const steps = [{ stepId: 's1', index: 0, agentId: 'coder', task: 'Write it' }];
    const results = [
      publisher.planCreated(plan, { query: 'Build it', steps, requiresApproval: true }),
      publisher.planDecision(plan, { decision: 'approve', decidedBy: 'alice' }),
      publisher.stepStarted(other, { stepId: 'x1' }),
      publisher.stepStarted(plan, { stepId: 's1', agentId: 'coder' }),
      publisher.handoffRecorded(plan, {
        handoffId: 'h1',
        fromAgentId: 'planner',
        toAgentId: 'coder',
        reason: 'next step',
      }),
      publisher.stepCompleted(plan, {
        stepId: 's1',
        result: 'done ✅ déjà vu 漢字 "quoted"',
        inputTokens: 10,
        outputTokens: 20,
        model: 'gpt-4o',
      }),
      publisher.stepFailed(other, { stepId: 'x1', error: 'timeout' }),
      publisher.stepSkipped(other, { stepId: 'x2', reason: 'x1 failed' }),
      publisher.checkpointSaved(plan, { checkpointId: 'cp0', layer: 0, state: { done: ['s1'] } }),
      publisher.planFinalized(plan, { status: 'completed', summary: 'ok' }),
      publisher.stepStarted(
        plan,
        { stepId: 's1' },
        { seq: 41, eventId: '11111111-2222-4333-8444-555555555555', occurredAt: '2024-05-01T12:00:00.000Z' },
      ),
    ];
    try {
      expect(results.every((r) => r.ok)).toBe(true);
      expect(results.map((r) => (r as { seq: number }).seq)).toEqual([0, 1, 0, 2, 3, 4, 1, 2, 5, 6, 41]);
      await expect(publisher.flush(10_000)).resolves.toBe(true);
    } finally {
      await publisher.close(5_000);
    }
    const { events } = await queuedEvents(redis.url, prefix);
    expect(events.map((e) => e.type)).toEqual([
      'plan.created',
      'plan.decision',
      'step.started',
      'step.started',
      'handoff.recorded',
      'step.completed',
      'step.failed',
      'step.skipped',
      'checkpoint.saved',
      'plan.finalized',
      'step.started',
    ]);
    for (const event of events.slice(0, -1)) {
      expect(parsePlanEvent(event)).toMatchObject({ ok: true });
      expect(event).toMatchObject({
        specVersion: 1,
        eventId: expect.stringMatching(UUID),
        occurredAt: expect.stringMatching(/Z$/),
      });
    }
    // time-ordered: the stamped ids sort in publish order
    const stampedIds = events.slice(0, -1).map((e) => e.eventId as string);
    expect([...stampedIds].sort()).toEqual(stampedIds);
    expect(events[5].payload).toMatchObject({ result: 'done ✅ déjà vu 漢字 "quoted"' });
    expect(events.at(-1)).toMatchObject({
      seq: 41,
      eventId: '11111111-2222-4333-8444-555555555555',
      occurredAt: '2024-05-01T12:00:00.000Z',
    });
  });

  it('sends events in batches: several per job, each job its own id, the jobs options as configured', async () => {
    const { publisher, prefix } = newPublisher(redis.url, { eventsPerJob: 100, jobOptions: { attempts: 7 } });
    const events = exactlyEvents(1_050, { seed: 6 });
    for (const event of events) publisher.publish(event);
    await expect(publisher.flush(10_000)).resolves.toBe(true);
    await publisher.close(5_000);
    const queue = new Queue(EVENTS_QUEUE, { connection: { url: redis.url }, prefix });
    try {
      const jobs = await queue.getJobs(['waiting']);
      expect(jobs.length).toBe(11);
      for (const job of jobs) {
        expect(job.name).toBe(EVENT_BATCH_JOB);
        expect(job.id).toMatch(/^b-[0-9a-f-]{36}$/);
        expect(job.data.v).toBe(1);
        expect(job.data.events.length).toBeLessThanOrEqual(100);
        expect(job.opts).toMatchObject({
          attempts: 7,
          removeOnFail: false,
          removeOnComplete: true,
          backoff: { type: 'exponential' },
        }); // no payload kept once stored
      }
    } finally {
      await queue.obliterate({ force: true });
      await queue.close();
    }
  });

  it('a batch Redis stored but whose reply was lost (command timeout) is not queued twice', async () => {
    const { publisher, prefix } = newPublisher(redis.url, { redisCommandTimeoutMs: 100 });
    const admin = new IORedis(redis.url);
    try {
      await new Promise((r) => setTimeout(r, 200)); // let the publisher connect
      const events = exactlyEvents(300, { seed: 7 });
      // Redis stalls 600 ms: addBulk times out after 100 ms, then Redis runs it anyway.
      const sleeping = admin.call('DEBUG', 'SLEEP', '0.6');
      await new Promise((r) => setTimeout(r, 20));
      for (const event of events) publisher.publish(event);
      await sleeping;
      await expect(publisher.flush(15_000)).resolves.toBe(true);
      const { events: queued } = await queuedEvents(redis.url, prefix);
      expect(
        notExactlyOnce(
          events.map((e: PlanEvent) => e.eventId),
          countByEventId(queued),
        ),
      ).toEqual([]);
    } finally {
      await publisher.close(5_000);
      admin.disconnect();
    }
  });

  it('validation: "contract" runs parsePlanEvent inline with the same verdicts', async () => {
    const { publisher } = newPublisher(redis.url, { validation: 'contract' });
    try {
      expect(publisher.publish(planRun({ seed: 8 })[0])).toMatchObject({ ok: true });
      expect(publisher.publish(invalidEvent(8) as never)).toMatchObject({
        ok: false,
        reason: 'invalid',
        violations: [{ path: 'planId' }, { path: 'payload.inputTokens' }],
      });
    } finally {
      await publisher.close(5_000);
    }
  });

  it.each(['fast', 'contract'] as const)(
    'validation: "%s" refuses a NUL character (U+0000) at once, as the worker would',
    async (validation) => {
      const { publisher } = newPublisher(redis.url, { validation });
      const done = planRun({ seed: 9 }).find((e) => e.type === 'step.completed')!;
      const path = 'payload.result';
      try {
        expect(
          publisher.publish({ ...done, payload: { ...done.payload, result: 'half\u0000way' } } as PlanEvent),
        ).toEqual({
          ok: false,
          reason: 'invalid',
          violations: [
            { path, message: `${path} must not contain the NUL character (U+0000): PostgreSQL cannot store it` },
          ],
        });
        expect(publisher.stats()).toMatchObject({ rejected: 1, buffered: 0 });
      } finally {
        await publisher.close(5_000);
      }
    },
  );

  it.each(['fast', 'contract'] as const)(
    'validation: "%s" names every rule a refused event breaks, the first of each field (a 2 MB output holding a NUL: both)',
    async (validation) => {
      const { publisher, prefix } = newPublisher(redis.url, { validation });
      const done = planRun({ seed: 11 }).find((e) => e.type === 'step.completed')!;
      const plan = { planId: done.planId, sessionId: done.sessionId };
      const nul = (path: string) => ({
        path,
        message: `${path} must not contain the NUL character (U+0000): PostgreSQL cannot store it`,
      });
      try {
        const big = `${'x'.repeat(2_000_000)}\u0000`;
        expect(
          publisher.stepCompleted(plan, { stepId: 's1', inputTokens: 1, outputTokens: 1, outputContent: big }),
        ).toEqual({
          ok: false,
          reason: 'invalid',
          violations: [
            nul('payload.outputContent'),
            { path: '', message: '(root) must be at most 1048576 bytes of UTF-8 JSON' },
          ],
        });
        const broken = { result: 'half\u0000way', inputTokens: '1', outputTokens: 1 };
        const result = publisher.publish({ type: 'step.completed', ...plan, payload: broken } as never);
        expect(result.ok === false && [...result.violations].sort((a, b) => a.path.localeCompare(b.path))).toEqual([
          { path: 'payload.inputTokens', message: 'payload.inputTokens must be an integer' },
          nul('payload.result'),
          { path: 'payload.stepId', message: 'payload.stepId is required' },
        ]);
        expect(publisher.stats()).toMatchObject({ rejected: 2, buffered: 0 });
        await expect(publisher.flush(10_000)).resolves.toBe(true);
      } finally {
        await publisher.close(5_000);
      }
      expect((await queuedEvents(redis.url, prefix)).events).toEqual([]);
    },
  );

  it.each(['fast', 'contract'] as const)(
    'validation: "%s" refuses a lone UTF-16 surrogate at once, as the worker would, and passes an emoji',
    async (validation) => {
      const { publisher } = newPublisher(redis.url, { validation });
      const run = planRun({ seed: 10 });
      const done = run.find((e) => e.type === 'step.completed')!;
      const checkpoint = run.find((e) => e.type === 'checkpoint.saved')!;
      const lone = (path: string) => ({
        path,
        message: `${path} must not contain a lone UTF-16 surrogate (U+D800-U+DFFF without its pair): databases store it differently`,
      });
      try {
        expect(
          publisher.publish({ ...done, payload: { ...done.payload, result: 'file-\uD800.txt' } } as PlanEvent),
        ).toEqual({ ok: false, reason: 'invalid', violations: [lone('payload.result')] });
        expect(
          publisher.publish({ ...done, payload: { ...done.payload, outputContent: '\uDC00' } } as PlanEvent),
        ).toEqual({ ok: false, reason: 'invalid', violations: [lone('payload.outputContent')] });
        const key = 'payload.state["k\\ud800"]';
        expect(
          publisher.publish({
            ...checkpoint,
            payload: { ...checkpoint.payload, state: { 'k\uD800': 1 } },
          } as PlanEvent),
        ).toEqual({
          ok: false,
          reason: 'invalid',
          violations: [
            {
              path: key,
              message: `${key} is a forbidden key (it contains a lone UTF-16 surrogate, U+D800-U+DFFF without its pair, which databases store differently)`,
            },
          ],
        });
        expect(publisher.stats()).toMatchObject({ rejected: 3, buffered: 0 });
        expect(
          publisher.publish({ ...done, payload: { ...done.payload, result: 'done \u{1F600}' } } as PlanEvent),
        ).toMatchObject({ ok: true });
      } finally {
        await publisher.close(5_000);
      }
    },
  );

  it('closed while it connects (a CLI that had nothing to send), it logs no Redis outage', async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(line) });
    // closed at every point of its set-up: before the socket opens, before the queue is ready, during the probe
    for (let i = 0; i < 24; i++) {
      const { publisher } = newPublisher(redis.url, { logger });
      await new Promise((resolve) => setTimeout(resolve, i % 6));
      await publisher.close(5_000);
    }
    expect(lines.filter((line) => line.includes('redis unavailable'))).toEqual([]);
  });

  it('refuses nonsense options in one line naming each', () => {
    expect(
      () =>
        new PlanEventPublisher({
          maxBufferedEvents: 0,
          eventsPerJob: 1.5,
          validation: 'none' as never,
          logger: pino({ level: 'silent' }),
        }),
    ).toThrow(
      new PublisherConfigError([
        'maxBufferedEvents must be a positive integer (got 0)',
        'eventsPerJob must be a positive integer (got 1.5)',
        'validation must be "fast" or "contract" (got none)',
      ]),
    );
  });
});
