import type IORedis from 'ioredis';
import { Queue } from 'bullmq';
import { startWorker, WorkerHandle } from '../../src/worker';
import { EVENTS_QUEUE } from '../../src/queue/queue-names';
import { loadConfig } from '../../src/config/config';
import { createMigratedDb, TestDb, withMssql } from '../support/databases';
import { invalidEvent, planRun, toJobData } from '../support/event-factory';
import type { PlanEvent } from '../../src/contracts';
import {
  countRows,
  dropPrefix,
  openRedis,
  publish,
  readDeadLetters,
  REDIS_URL,
  silentLogger,
  uniquePrefix,
} from './helpers/queue-harness';

const KINDS: TestDb[] = withMssql(['sqlite', 'postgres']);

describe.each(KINDS)('worker on %s: poison isolation', (kind) => {
  let redis: IORedis;
  let db: Awaited<ReturnType<typeof createMigratedDb>>;
  let prefix: string;
  let worker: WorkerHandle;

  beforeAll(async () => {
    redis = openRedis();
    db = await createMigratedDb(kind);
    prefix = uniquePrefix('poison');
    worker = await startWorker({
      config: loadConfig({ REDIS_URL, QUEUE_PREFIX: prefix, DATABASE_URL: db.db.url }),
      dataSource: db.ds,
      logger: silentLogger(),
      // a gap is waited for forever: a refused event's seq must be voided, never timed out
      settings: { healthPort: null, concurrency: 4, gapTimeoutMs: 0 },
    });
  });

  afterAll(async () => {
    await worker?.close();
    await dropPrefix(redis, prefix);
    await redis.quit();
    await db.close();
  });

  /**
   * Publishes one job of `events`: all are stored but `bad`, which is one invalid dead letter with
   * this message, and whose seq is voided: every later event of its plan is applied.
   */
  async function expectOnlyInvalid(
    events: PlanEvent[],
    bad: PlanEvent,
    tag: string,
    message: string,
    path = 'payload.result',
  ): Promise<void> {
    const rowsBefore = await countRows(db.ds, 'plan_events');
    const [jobId] = await publish(redis, prefix, [{ v: 1, events }], tag);
    expect(await worker.idle(30_000)).toBe(true);

    // the events but `bad`, and the voided seq that stands for it
    expect(await countRows(db.ds, 'plan_events')).toBe(rowsBefore + events.length);
    const letters = (await readDeadLetters(redis, prefix)).filter((l) => l.source.jobId === jobId);
    expect(letters).toHaveLength(1);
    expect(letters[0]).toMatchObject({
      kind: 'invalid',
      event: bad,
      eventId: bad.eventId,
      planId: bad.planId,
      attempts: 1,
    });
    expect(letters[0].error.violations).toEqual([{ path, message }]);
    const [voided] = await db.ds.query(
      `SELECT seq, payload FROM plan_events WHERE plan_id = '${bad.planId}' AND type = 'seq.voided'`,
    );
    expect({
      seq: Number(voided.seq),
      payload: typeof voided.payload === 'string' ? JSON.parse(voided.payload) : voided.payload,
    }).toEqual({ seq: bad.seq, payload: { eventId: bad.eventId, kind: 'invalid', deadLetterId: letters[0].id } });
    const [head] = await db.ds.query(
      `SELECT applied_seq, pending_events FROM plan_heads WHERE plan_id = '${bad.planId}'`,
    );
    expect([Number(head.applied_seq), Number(head.pending_events)]).toEqual([Math.max(...events.map((e) => e.seq)), 0]);
  }

  it('stores the valid events of a job and dead-letters its invalid one at once, with violations and provenance', async () => {
    const valid = planRun({ seed: 11, steps: 3 });
    const bad = invalidEvent(11);
    const events = [...valid.slice(0, 2), bad, ...valid.slice(2)];
    const [jobId] = await publish(
      redis,
      prefix,
      [{ v: 1, events, replayCounts: events.map((_, i) => (i === 2 ? 2 : 0)) }],
      'poison',
    );
    expect(await worker.idle(30_000)).toBe(true);

    expect(await countRows(db.ds, 'plan_events')).toBe(valid.length);
    expect(await countRows(db.ds, 'execution_plans')).toBe(1);
    const letters = await readDeadLetters(redis, prefix);
    expect(letters).toHaveLength(1);
    const [letter] = letters;
    expect(letter).toMatchObject({
      kind: 'invalid',
      event: bad,
      eventId: bad.eventId,
      type: 'step.completed',
      planId: null,
      source: { queue: EVENTS_QUEUE, jobId },
      attempts: 1,
      replayCount: 2,
      workerVersion: expect.stringMatching(/^\d+\.\d+\.\d+/),
    });
    expect(letter.id).toMatch(/^dl-[0-9a-f-]{36}$/);
    expect(letter.error.violations).toEqual(
      expect.arrayContaining([
        { path: 'planId', message: 'planId is required' },
        expect.objectContaining({ path: 'payload.inputTokens' }),
      ]),
    );
    expect(Date.parse(letter.firstFailedAt)).toBeLessThanOrEqual(Date.parse(letter.lastFailedAt));
    expect(worker.stats()).toMatchObject({ inserted: valid.length, deadLettered: 1 });
  });

  // PostgreSQL cannot store U+0000 in text: were the contract to let it through, the whole batch
  // would fail there and be split down to this event, dead-lettered as unprocessable, while SQLite
  // stored it. The contract refuses it instead, the same way on every database.
  it('dead-letters an event with a NUL character as invalid and stores the rest of its job', async () => {
    const run = planRun({ seed: 21, steps: 3 });
    const at = run.findIndex((e) => e.type === 'step.completed');
    const done = run[at] as Extract<PlanEvent, { type: 'step.completed' }>;
    const bad = { ...done, payload: { ...done.payload, result: 'half\u0000way' } };
    const events = run.map((e, i) => (i === at ? bad : e));
    await expectOnlyInvalid(
      events,
      bad,
      'nul',
      'payload.result must not contain the NUL character (U+0000): PostgreSQL cannot store it',
    );
  });

  // A lone surrogate has no UTF-8 form: PostgreSQL would store U+FFFD, SQLite the raw unit. The
  // contract refuses it, so the same event is dead-lettered on every database; an emoji (a valid
  // pair) in the same job is stored as sent.
  it('dead-letters an event with a lone UTF-16 surrogate as invalid and stores the emoji of its job as sent', async () => {
    const run = planRun({ seed: 22, steps: 3 });
    const completedAt = run.map((e, i) => (e.type === 'step.completed' ? i : -1)).filter((i) => i >= 0);
    const emoji = run[completedAt[0]] as Extract<PlanEvent, { type: 'step.completed' }>;
    const done = run[completedAt[1]] as Extract<PlanEvent, { type: 'step.completed' }>;
    const bad = { ...done, payload: { ...done.payload, result: 'file-\uD800.txt' } };
    const smile = { ...emoji, payload: { ...emoji.payload, result: 'done \u{1F600} \u{20000}' } };
    const events = run.map((e, i) => (i === completedAt[0] ? smile : i === completedAt[1] ? bad : e));
    await expectOnlyInvalid(
      events,
      bad,
      'surrogate',
      'payload.result must not contain a lone UTF-16 surrogate (U+D800-U+DFFF without its pair): databases store it differently',
    );
    const [row] = await db.ds.query(
      `SELECT result FROM plan_steps WHERE plan_id = '${smile.planId}' AND step_key = '${smile.payload.stepId}'`,
    );
    expect(row.result).toBe('done \u{1F600} \u{20000}');
  });

  // A rolling upgrade done backwards: a publisher already sends a field of a newer contract (as
  // provider, cacheReadTokens or reportedCost were to a worker older than them) to a worker that
  // does not know it. The worker refuses that one event as a dead letter naming the field, voids its
  // seq so the plan goes on, and keeps working; once the workers are upgraded, `dlq replay` stores it.
  it('rolling upgrade: an event with a field of a newer contract is one clear dead letter, not a crash', async () => {
    const run = planRun({ seed: 23, steps: 3 });
    const at = run.findIndex((e) => e.type === 'step.completed');
    const done = run[at] as Extract<PlanEvent, { type: 'step.completed' }>;
    const newer = { ...done, payload: { ...done.payload, audioInputTokens: 120 } } as PlanEvent;
    const events = run.map((e, i) => (i === at ? newer : e));
    await expectOnlyInvalid(
      events,
      newer,
      'newer',
      'payload.audioInputTokens is not an allowed field',
      'payload.audioInputTokens',
    );
    // the plan's other events were applied: its other steps completed
    const [plan] = await db.ds.query(`SELECT completed_steps FROM execution_plans WHERE id = '${newer.planId}'`);
    expect(Number(plan.completed_steps)).toBe(run.filter((e) => e.type === 'step.completed').length - 1);
  });

  it('never retries an invalid event: the job completes on its first attempt', async () => {
    const queue = new Queue(EVENTS_QUEUE, { connection: redis, prefix });
    try {
      // kept once completed (the worker's default removes it) so that its attempts can be read
      const job = await queue.add(
        'events',
        { v: 1, events: [invalidEvent(12)] },
        { jobId: 'only-invalid', attempts: 5, removeOnComplete: false },
      );
      expect(await worker.idle(30_000)).toBe(true);
      const done = await queue.getJob(job.id!);
      expect(await done!.getState()).toBe('completed');
      expect(done!.attemptsMade).toBe(1); // BullMQ counts the completed attempt too
      expect(done!.attemptsStarted).toBe(1);
      expect(done!.returnvalue).toMatchObject({ events: 1, inserted: 0, deadLettered: 1 });
    } finally {
      await queue.close();
    }
  });

  it('dead-letters a job whose data is not an event batch, instead of failing it', async () => {
    const queue = new Queue(EVENTS_QUEUE, { connection: redis, prefix });
    try {
      await queue.add('events', { hello: 'world' } as never, { jobId: 'not-a-batch' });
      expect(await worker.idle(30_000)).toBe(true);
      const letters = (await readDeadLetters(redis, prefix)).filter((l) => l.source.jobId === 'not-a-batch');
      expect(letters).toHaveLength(1);
      expect(letters[0]).toMatchObject({ kind: 'invalid', event: { hello: 'world' } });
      expect(letters[0].error.message).toMatch(/not an EventBatchJobData/);
    } finally {
      await queue.close();
    }
  });

  it('a redelivered job does not write its dead letter twice', async () => {
    const data = toJobData([invalidEvent(13)], 1)[0];
    await publish(redis, prefix, [data], 'redeliver-a');
    expect(await worker.idle(30_000)).toBe(true);
    const before = (await readDeadLetters(redis, prefix)).length;
    // Same job id again: what a crash after the dead letter but before the ack leads to.
    await publish(redis, prefix, [data], 'redeliver-a');
    expect(await worker.idle(30_000)).toBe(true);
    expect((await readDeadLetters(redis, prefix)).length).toBe(before);
  });

  /**
   * A job added delayed, its data then overwritten with raw text, then promoted: what another producer (or a bug)
   * leaves.
   */
  async function addRawJob(queue: Queue, jobId: string, rawData: string): Promise<void> {
    const job = await queue.add('events', { v: 1, events: [] }, { jobId, delay: 3_600_000, removeOnComplete: false });
    await redis.hset(`${prefix}:${EVENTS_QUEUE}:${jobId}`, 'data', rawData);
    await job.promote();
  }

  it.each([
    ['NaN', '{"v":1,"events":[{"seq":NaN}]}'],
    ['Infinity', '{"v":1,"events":[{"seq":Infinity}]}'],
    ['truncated', '{"v":1,"events":[{"eventId":"abc'],
  ])(
    'dead-letters a job whose data is not JSON (%s) at once, with its raw text, and stores the valid jobs beside it',
    async (tag, raw) => {
      const queue = new Queue(EVENTS_QUEUE, { connection: redis, prefix });
      try {
        const run = planRun({ seed: 40 + tag.length, steps: 2 });
        const rowsBefore = await countRows(db.ds, 'plan_events');
        await addRawJob(queue, `raw-${tag}`, raw);
        await publish(redis, prefix, [{ v: 1, events: run }], `beside-${tag}`);
        expect(await worker.idle(30_000)).toBe(true);

        expect(await countRows(db.ds, 'plan_events')).toBe(rowsBefore + run.length);
        const letters = (await readDeadLetters(redis, prefix)).filter((l) => l.source.jobId === `raw-${tag}`);
        expect(letters).toHaveLength(1);
        expect(letters[0]).toMatchObject({ kind: 'invalid', event: raw, attempts: 1 });
        expect(letters[0].error.message).toMatch(/^job data is not JSON \(.+\); its raw text is kept as the event$/);
        expect(await queue.getJobState(`raw-${tag}`)).toBe('completed');
        expect(await redis.hget(`${prefix}:${EVENTS_QUEUE}:raw-${tag}`, 'stc')).toBeNull(); // never stalled
      } finally {
        await queue.close();
      }
    },
  );

  it('refuses a job of an unknown envelope version instead of reading it as v1', async () => {
    const queue = new Queue(EVENTS_QUEUE, { connection: redis, prefix });
    try {
      const run = planRun({ seed: 51, steps: 1 });
      const rowsBefore = await countRows(db.ds, 'plan_events');
      await queue.add('events', { v: 2, events: run } as never, { jobId: 'envelope-v2' });
      expect(await worker.idle(30_000)).toBe(true);
      expect(await countRows(db.ds, 'plan_events')).toBe(rowsBefore);
      const letters = (await readDeadLetters(redis, prefix)).filter((l) => l.source.jobId === 'envelope-v2');
      expect(letters).toHaveLength(1);
      expect(letters[0]).toMatchObject({ kind: 'invalid', event: { v: 2, events: run } });
      expect(letters[0].error.message).toBe('job envelope version v=2 is not supported: this worker reads v: 1 only');
    } finally {
      await queue.close();
    }
  });
});
